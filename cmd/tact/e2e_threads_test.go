package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/synth"
)

// A run beside two CPU burners (yes > /dev/null) with the default thread
// count takes no more than 1.5 times the same run with --threads 1: the
// default looks at what is free (internal/threads), where a thread per
// core would wait at every ggml barrier for a thread the burners keep off
// its core (on 2 cores that was 20 times slower, in wall time and in CPU
// time alike: the waiting threads spin). The two are compared within the
// test, interleaved, by wall time or by CPU time: other work on a shared
// machine moves a run's wall time around by 2x, but not its CPU time, and
// a collapse shows in both. On a machine with many cores the default uses
// more threads and is faster by the clock. The bench model, since models
// under 32 MB run on one thread whatever the load.
func TestDefaultThreadsBesideBurners(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the llama backend on the bench model")
	}
	model := synth.Cached(t, synth.Bench)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{bin, ws} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// testscript.Main runs tactMain when the test binary is called "tact".
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "tact")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644)
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), runtimeEnv(), "XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "TACT_NO_INPUT=1"}

	startBurners(t, 2)

	// run times one short run: the system prompt and tools evaluated, a
	// few tokens drawn, with the threads asked for (0: the default).
	type timing struct{ wall, cpu time.Duration }
	run := func(threads string) (timing, string) {
		cmd := exec.Command(filepath.Join(bin, "tact"), "run", "-v", "--model", model, "--workspace", ws, "--threads", threads,
			"--no-plan", "--max-iterations", "1", "--max-tokens", "4", "--allow-tools", "list_files", "--no-prompt-cache",
			"--seed", "1", "list the files")
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		took := timing{wall: time.Since(start)}
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() >= 3 && ee.ExitCode() <= 5) {
			t.Fatalf("--threads %s: %v\n%s", threads, err, stderr.String())
		}
		took.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		line := ""
		for l := range strings.SplitSeq(stderr.String(), "\n") {
			if strings.Contains(l, `msg="llama.cpp threads: `) {
				line = l
			}
		}
		return took, line
	}
	var def, one timing
	for range 2 {
		d, why := run("0")
		o, _ := run("1")
		t.Logf("default: %v, %v CPU (%s); --threads 1: %v, %v CPU", d.wall, d.cpu, why, o.wall, o.cpu)
		def.wall, def.cpu = def.wall+d.wall, def.cpu+d.cpu
		one.wall, one.cpu = one.wall+o.wall, one.cpu+o.cpu
	}
	if def.wall > one.wall*3/2 && def.cpu > one.cpu*3/2 {
		t.Errorf("beside two burners the default threads took %v (%v CPU), --threads 1 %v (%v CPU): more than 1.5 times by both", def.wall, def.cpu, one.wall, one.cpu)
	}
}

// startBurners starts n processes that keep a CPU busy (yes > /dev/null),
// killed when the test ends however it ends: by the test's cleanup, or by
// the kernel when the test process dies (the parent-death signal).
func startBurners(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("yes")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil { // stdout: /dev/null (os/exec's nil)
			t.Fatalf("starting a burner: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		// Running before a run looks at the load: it has had CPU time.
		waitFor(time.Minute, func() bool { return hadCPU(cmd.Process.Pid) })
	}
}

// hadCPU reports whether process pid has run (user or system time in
// /proc/PID/stat).
func hadCPU(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return false
	}
	return f[11] != "0" || f[12] != "0" // utime, stime
}
