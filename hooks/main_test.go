package hooks

import (
	"os"
	"testing"

	"github.com/tactcli/tact/sandbox"
)

// TestMain lets this test binary serve as the sandbox helper, under which
// hooks run (sandbox.RunProgram), as they do in tact.
func TestMain(m *testing.M) {
	sandbox.ServeHelper()
	os.Exit(m.Run())
}
