package llamacpp

import (
	"os"
	"testing"

	"github.com/tactcli/tact/internal/testlock"
)

// TestMain runs this package's model tests while no other package's run:
// see internal/testlock.
func TestMain(m *testing.M) {
	release := testlock.Hold()
	code := m.Run()
	release()
	os.Exit(code)
}
