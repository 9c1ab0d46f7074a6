package testlock

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// A second process waits while the lock is held, and a process started by
// the holder does not wait at all.
func TestHoldSerializesProcesses(t *testing.T) {
	if os.Getenv("TESTLOCK_CHILD") != "" {
		Hold()()
		return
	}
	// A lock of its own (os.TempDir reads TMPDIR, children inherit it),
	// not the one the other packages' test binaries hold right now.
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(heldEnv, "") // this test's own process starts unlocked
	os.Unsetenv(heldEnv)
	release := Hold()
	if os.Getenv(heldEnv) == "" {
		t.Fatal("holding the lock does not mark the environment")
	}
	inheriting := exec.Command(os.Args[0], "-test.run=^TestHoldSerializesProcesses$")
	inheriting.Env = append(os.Environ(), "TESTLOCK_CHILD=1")
	if err := runWithin(inheriting, 5*time.Second); err != nil {
		t.Fatalf("a child of the holder waited for the lock: %v", err)
	}
	release()

	release = Hold()
	other := exec.Command(os.Args[0], "-test.run=^TestHoldSerializesProcesses$")
	other.Env = append(os.Environ(), "TESTLOCK_CHILD=1", heldEnv+"=") // an unrelated process
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- other.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("an unrelated process did not wait for the held lock (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting process did not get the lock after release")
	}
}

func runWithin(c *exec.Cmd, d time.Duration) error {
	if err := c.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		c.Process.Kill()
		return <-done
	}
}
