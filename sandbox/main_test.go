package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// programEnv makes the test binary a tact that runs one user program (its
// value) with RunProgram and waits, to be killed by the test.
const programEnv = "SANDBOX_TEST_RUN_PROGRAM"

// TestMain lets this test binary serve as the sandbox helper (RunProgram
// runs user programs under it), and as a tact running one program.
func TestMain(m *testing.M) {
	ServeHelper()
	if cmd := os.Getenv(programEnv); cmd != "" {
		RunProgram(context.Background(), Program{Command: cmd, Timeout: time.Hour})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestProgramDiesWithTact: a program's children and grandchildren, also
// those that left its process group (setsid), end when the tact that ran
// it is killed with SIGKILL, which no code of tact's sees.
func TestProgramDiesWithTact(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), programEnv+"=sleep 1000 & echo $! > child; setsid sleep 1000 & echo $! > daemon; echo > ready; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil }) {
		cmd.Process.Kill()
		t.Fatal("the program did not start")
	}
	child, daemon := pidFrom(t, filepath.Join(dir, "child")), pidFrom(t, filepath.Join(dir, "daemon"))
	defer syscall.Kill(child, syscall.SIGKILL)
	defer syscall.Kill(daemon, syscall.SIGKILL)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, child)
	waitGone(t, daemon)
}
