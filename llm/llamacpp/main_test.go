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

// testRuntimeDir is the llama.cpp runtime the tests load with the runtime
// provider: TACT_RUNTIME_DIR (make test installs the pinned one and sets
// it). Without it the model tests skip, saying so. The cgo provider needs
// none.
func testRuntimeDir(t testing.TB) string {
	t.Helper()
	if ProviderName != "runtime" {
		return ""
	}
	dir := os.Getenv("TACT_RUNTIME_DIR")
	if dir == "" {
		t.Skip("TACT_RUNTIME_DIR is not set: no llama.cpp runtime to load (make test installs one)")
	}
	return dir
}

// withRuntime is o with the test runtime.
func withRuntime(t testing.TB, o Options) Options {
	t.Helper()
	o.RuntimeDir = testRuntimeDir(t)
	return o
}
