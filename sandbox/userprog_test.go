package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/tactcli/tact/internal/testwait"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidFrom reads the pid a program wrote to path.
func pidFrom(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return pid
}

// running reports whether pid is a live process (a zombie nobody reaped
// yet counts as gone).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(stat)
	return !strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

// waitGone waits (bounded: the kill is asynchronous) until pid is gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if !eventually(func() bool { return !running(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d still runs", pid)
	}
}

// eventually polls cond until it holds (true), or a minute passes. It is
// these tests' one poll: they wait on a state (a file, a process), never
// for a fixed time, and the bound is generous, as a busy machine is slow.
func eventually(cond func() bool) bool { return testwait.Until(time.Minute, cond) }

// cancelOnFile calls cancel once path exists (or ctx has ended).
func cancelOnFile(ctx context.Context, cancel func(), path string) {
	eventually(func() bool {
		if _, err := os.Stat(path); err == nil {
			cancel()
			return true
		}
		return ctx.Err() != nil
	})
}

func TestRunProgram(t *testing.T) {
	if _, err := os.Stat(programShell); err != nil {
		t.Skipf("no %s: %v", programShell, err)
	}
	t.Setenv("TACT_USERPROG_TEST", "from-tact")
	big := bytes.Repeat([]byte("0123456789abcdef"), 256<<10/16) // more than a pipe holds
	const flood = "head -c 10000000 /dev/zero | tr '\\0' a; head -c 10000000 /dev/zero | tr '\\0' b >&2"

	for _, tt := range []struct {
		name string
		p    Program // Dir: a new directory when ""
		// cancelOn cancels ctx once this file appears in the directory.
		cancelOn string
		check    func(t *testing.T, r ProgramResult, dir string)
	}{
		{name: "exit 0", p: Program{Command: "echo out; echo err >&2"},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.ExitCode != 0 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" || r.Signal != 0 || r.StartErr != nil {
					t.Errorf("result %+v", r)
				}
			}},
		{name: "exit 7", p: Program{Command: "echo no >&2; exit 7"},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.ExitCode != 7 || string(r.Stderr) != "no\n" || r.TimedOut || r.Cancelled {
					t.Errorf("result %+v", r)
				}
			}},
		{name: "not found", p: Program{Command: "no-such-program-xyz"},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.ExitCode != 127 || !strings.Contains(string(r.Stderr), "no-such-program-xyz") {
					t.Errorf("result %+v", r)
				}
			}},
		{name: "stdin delivered", p: Program{Command: "cat", Stdin: big, MaxOutput: 1 << 20},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.ExitCode != 0 || !bytes.Equal(r.Stdout, big) {
					t.Errorf("exit %d, stdout of %d bytes, want the %d of stdin", r.ExitCode, len(r.Stdout), len(big))
				}
			}},
		{name: "stdin then EOF", p: Program{Command: "wc -c", Stdin: []byte("12345")},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if strings.TrimSpace(string(r.Stdout)) != "5" {
					t.Errorf("stdout %q", r.Stdout)
				}
			}},
		{name: "stdin not read", p: Program{Command: "exit 0", Stdin: big},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.ExitCode != 0 || r.Duration > 10*time.Second {
					t.Errorf("result %+v", r)
				}
			}},
		{name: "env given", p: Program{Command: `printf '%s|%s' "$MINE" "$TACT_USERPROG_TEST"`, Env: []string{"MINE=mine"}},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if string(r.Stdout) != "mine|" {
					t.Errorf("the program saw %q", r.Stdout)
				}
			}},
		{name: "env nil is tact's", p: Program{Command: `printf '%s' "$TACT_USERPROG_TEST"`},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if string(r.Stdout) != "from-tact" {
					t.Errorf("the program saw %q", r.Stdout)
				}
			}},
		{name: "dir", p: Program{Command: "pwd -P"},
			check: func(t *testing.T, r ProgramResult, dir string) {
				if want, _ := filepath.EvalSymlinks(dir); strings.TrimSpace(string(r.Stdout)) != want {
					t.Errorf("pwd %q, want %q", r.Stdout, want)
				}
			}},
		{name: "cannot start", p: Program{Command: "true", Dir: "/nonexistent/userprog-dir"},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.StartErr == nil || r.ExitCode != -1 || r.Cancelled || r.TimedOut {
					t.Errorf("result %+v", r)
				}
			}},
		// 10 MB on each stream: the first MaxOutput bytes kept, the rest
		// drained, and no more memory than that held.
		{name: "output cap", p: Program{Command: flood, MaxOutput: 1000},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.ExitCode != 0 || !r.StdoutCut || !r.StderrCut ||
					string(r.Stdout) != strings.Repeat("a", 1000) || string(r.Stderr) != strings.Repeat("b", 1000) {
					t.Errorf("exit %d, stdout %d bytes (cut %v), stderr %d bytes (cut %v)", r.ExitCode, len(r.Stdout), r.StdoutCut, len(r.Stderr), r.StderrCut)
				}
				if cap(r.Stdout) > 4096 || cap(r.Stderr) > 4096 {
					t.Errorf("buffers of %d and %d bytes kept 1000 each", cap(r.Stdout), cap(r.Stderr))
				}
			}},
		{name: "output cap default", p: Program{Command: flood},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if len(r.Stdout) != DefaultProgramOutput || len(r.Stderr) != DefaultProgramOutput || !r.StdoutCut {
					t.Errorf("stdout %d bytes, stderr %d", len(r.Stdout), len(r.Stderr))
				}
			}},
		{name: "output not cut", p: Program{Command: "printf 12345", MaxOutput: 5},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if string(r.Stdout) != "12345" || r.StdoutCut {
					t.Errorf("stdout %q cut %v", r.Stdout, r.StdoutCut)
				}
			}},
		// At the timeout the whole group goes, the background child too.
		{name: "timeout kills the group", p: Program{Command: "sleep 1000 & echo $! > pid; wait", Timeout: 300 * time.Millisecond},
			check: func(t *testing.T, r ProgramResult, dir string) {
				if !r.TimedOut || r.Cancelled || r.ExitCode != -1 || r.Signal != syscall.SIGKILL {
					t.Errorf("result %+v", r)
				}
				waitGone(t, pidFrom(t, filepath.Join(dir, "pid")))
			}},
		{name: "cancel kills the group", p: Program{Command: "sleep 1000 & echo $! > pid; wait", Timeout: time.Hour}, cancelOn: "pid",
			check: func(t *testing.T, r ProgramResult, dir string) {
				if !r.Cancelled || r.TimedOut || r.ExitCode != -1 {
					t.Errorf("result %+v", r)
				}
				waitGone(t, pidFrom(t, filepath.Join(dir, "pid")))
			}},
		// It exited, but its child holds stdout: the caller waits
		// programWaitDelay, not the child's 1000 s, and the child goes.
		{name: "grandchild holds stdout", p: Program{Command: "echo hi; sleep 1000 & echo $! > pid; exit 3"},
			check: func(t *testing.T, r ProgramResult, dir string) {
				if r.ExitCode != 3 || string(r.Stdout) != "hi\n" || r.TimedOut || r.Cancelled {
					t.Errorf("result %+v", r)
				}
				if r.Duration > 10*time.Second {
					t.Errorf("took %s", r.Duration)
				}
				waitGone(t, pidFrom(t, filepath.Join(dir, "pid")))
			}},
		// A quiet background child is the user's business: left running.
		{name: "quiet background child stays", p: Program{Command: "sleep 1000 >/dev/null 2>&1 & echo $! > pid; exit 0"},
			check: func(t *testing.T, r ProgramResult, dir string) {
				pid := pidFrom(t, filepath.Join(dir, "pid"))
				defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
				if r.ExitCode != 0 || !running(pid) {
					t.Errorf("result %+v, child running %v", r, running(pid))
				}
			}},
		{name: "no terminal", p: Program{Command: `if (exec 3</dev/tty) 2>/dev/null; then echo has-tty; else echo no-tty; fi; tty; echo "tty exit $?"`},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if string(r.Stdout) != "no-tty\nnot a tty\ntty exit 1\n" {
					t.Errorf("the program saw %q", r.Stdout)
				}
			}},
		{name: "signal death", p: Program{Command: "kill -SEGV $$"},
			check: func(t *testing.T, r ProgramResult, _ string) {
				if r.Signal != syscall.SIGSEGV || r.ExitCode != -1 || r.TimedOut || r.Cancelled {
					t.Errorf("result %+v", r)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := tt.p
			if p.Dir == "" {
				p.Dir = dir
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancelOn != "" {
				go cancelOnFile(ctx, cancel, filepath.Join(dir, tt.cancelOn))
			}
			done := make(chan ProgramResult, 1)
			go func() { done <- RunProgram(ctx, p) }()
			select {
			case r := <-done:
				tt.check(t, r, dir)
			case <-time.After(60 * time.Second):
				t.Fatal("RunProgram did not return")
			}
		})
	}
}

// A ctx that has ended starts nothing.
func TestRunProgramCancelledBeforeStart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := RunProgram(ctx, Program{Command: "touch ran", Dir: dir})
	if !r.Cancelled || r.TimedOut || r.ExitCode != -1 || r.StartErr != nil {
		t.Errorf("result %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the program ran after the cancel")
	}
}
