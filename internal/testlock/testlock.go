// Package testlock keeps the test binaries that run llama.cpp models from
// running at the same time. go test runs packages in parallel, and ggml's
// worker threads spin at barriers: two packages running models at once on a
// small machine run many times slower (a 0.4 s test of two processes taking
// turns took over 60 s while another package ran its models).
package testlock

import (
	"os"
	"path/filepath"
	"syscall"
)

// heldEnv marks processes started by a test binary that holds the lock: they
// run under it already and must not wait for it.
const heldEnv = "TACT_LLAMA_TESTS_LOCKED"

// Hold waits for the machine-wide lock of llama-running test binaries and
// returns its release. Processes the holder starts inherit the hold. When
// the lock file cannot be used the tests run unlocked (slower, not wrong).
func Hold() (release func()) {
	if os.Getenv(heldEnv) != "" {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "tact-llama-tests.lock"), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return func() {}
	}
	os.Setenv(heldEnv, "1")
	return func() {
		os.Unsetenv(heldEnv)
		f.Close()
	}
}
