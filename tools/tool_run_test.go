package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tactcli/tact/internal/testwait"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/sandbox"
)

// twMarker returns a sleep duration that names this test's processes
// uniquely, so /proc can be scanned for survivors.
func twMarker(base int) string {
	return fmt.Sprintf("%d.%d", base, os.Getpid()%100000)
}

// twSurvivors returns the pids whose argv is exactly [sleep marker]
// (zombies have an empty cmdline and do not count).
func twSurvivors(t testing.TB, marker string) []int {
	t.Helper()
	want := []byte("sleep\x00" + marker + "\x00")
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Equal(cmdline, want) || bytes.HasSuffix(cmdline, append([]byte("/"), want...)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// twAssertNoSurvivors fails if a process with the marker is alive shortly
// after the call returned, and kills any it finds (they are the test's own).
func twAssertNoSurvivors(t *testing.T, marker string) {
	t.Helper()
	var pids []int
	// Reparented zombies may take a moment to vanish from cmdline: up to
	// 10 s on a busy machine (was 200 ms); a survivor sleeps 100 s.
	if testwait.Until(10*time.Second, func() bool { pids = twSurvivors(t, marker); return len(pids) == 0 }) {
		return
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Fatalf("processes survived: %v (sleep %s)", pids, marker)
}

func twCmd(t testing.TB, env *Env, command string) Result {
	t.Helper()
	return twRun(t, RunCommand{}, env, m{"command": command})
}

func TestRunCommand(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	twWrite(t, filepath.Join(ws, "dir", "hello.sh"), "#!/bin/sh\necho script \"$@\"\n")
	os.Chmod(filepath.Join(ws, "dir", "hello.sh"), 0o755)
	twWrite(t, filepath.Join(ws, "dir", "noexec.sh"), "#!/bin/sh\necho no\n")
	tests := []struct {
		name     string
		args     any
		stdout   string
		stderr   string
		exitCode int
		wantErr  string
	}{
		{name: "quotes", args: m{"command": `printf '%s|' "a b" 'c d' e\ f`}, stdout: "a b|c d|e f|"},
		{name: "no shell expansion", args: m{"command": `echo $HOME`}, stdout: "$HOME\n"},
		{name: "no pipes", args: m{"command": `echo a | wc -l`}, stdout: "a | wc -l\n"},
		{name: "no globs", args: m{"command": `echo *`}, stdout: "*\n"},
		{name: "explicit shell", args: m{"command": `sh -c 'echo a | tr a b'`}, stdout: "b\n"},
		{name: "stdin is empty", args: m{"command": `cat`}, stdout: ""},
		{name: "stdout and stderr apart", args: m{"command": `sh -c 'echo out; echo err >&2; exit 3'`},
			stdout: "out\n", stderr: "err\n", exitCode: 3, wantErr: "exit status 3"},
		{name: "killed by signal", args: m{"command": `sh -c 'kill -TERM $$'`}, exitCode: 143, wantErr: "killed by signal 15"},
		{name: "working dir", args: m{"command": "pwd", "working_dir": "dir"}, stdout: ws + "/dir\n"},
		{name: "working dir via inside symlink", args: m{"command": "pwd", "working_dir": "link_in"}, stdout: ws + "/dir\n"},
		{name: "default working dir", args: m{"command": "pwd"}, stdout: ws + "\n"},
		{name: "relative program", args: m{"command": "./hello.sh x", "working_dir": "dir"}, stdout: "script x\n"},
		{name: "not found", args: m{"command": "no-such-command-xyz arg"}, exitCode: 127, wantErr: "command not found"},
		{name: "not executable", args: m{"command": "./noexec.sh", "working_dir": "dir"}, exitCode: 126, wantErr: "permission denied"},
		{name: "unterminated quote", args: m{"command": `echo 'abc`}, wantErr: "cannot split"},
		{name: "empty", args: m{"command": "  "}, wantErr: "command is empty"},
		{name: "working dir escapes", args: m{"command": "pwd", "working_dir": "../"}, wantErr: `path "../" escapes the workspace`},
		{name: "working dir symlink out", args: m{"command": "pwd", "working_dir": "link_out"}, wantErr: "through a symlink"},
		{name: "working dir is a file", args: m{"command": "pwd", "working_dir": "dir/file.txt"}, wantErr: "not a directory"},
		{name: "working dir missing", args: m{"command": "pwd", "working_dir": "nope"}, wantErr: "no such file"},
		{name: "command not a string", args: m{"command": []string{"ls"}}, wantErr: "want a string, got an array"},
		{name: "missing command", args: m{}, wantErr: `missing required argument "command"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := twRun(t, RunCommand{}, env, tt.args)
			if tt.wantErr == "" && res.Err != nil {
				t.Fatalf("Err = %v (stderr %q)", res.Err, res.Stderr)
			}
			if tt.wantErr != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), tt.wantErr)) {
				t.Fatalf("Err = %v, want it to contain %q", res.Err, tt.wantErr)
			}
			if res.Output != tt.stdout || res.Stderr != tt.stderr || res.ExitCode != tt.exitCode {
				t.Fatalf("got stdout %q stderr %q exit %d; want %q %q %d", res.Output, res.Stderr, res.ExitCode, tt.stdout, tt.stderr, tt.exitCode)
			}
		})
	}
}

func TestRunCommandEnvAllowList(t *testing.T) {
	env, _ := twLayout(t)
	t.Setenv("TACT_TEST_LEAK", "must-not-leak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "must-not-leak")
	t.Setenv("HOME", "/home/tact-test")
	env.ExtraEnv = []string{"EXTRA_VAR=seen", "LANG=C.UTF-8"}
	res := twCmd(t, env, "env")
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if strings.Contains(res.Output, "must-not-leak") {
		t.Fatalf("child saw a variable outside the allow-list:\n%s", res.Output)
	}
	for _, want := range []string{"EXTRA_VAR=seen\n", "HOME=/home/tact-test\n", "LANG=C.UTF-8\n", "PATH="} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("child env lacks %q:\n%s", want, res.Output)
		}
	}
	// TMPDIR is the command's private temporary directory, not tact's.
	if tmp := childEnvLine(res.Output, "TMPDIR"); !strings.HasPrefix(tmp, filepath.Join(os.TempDir(), "tact-run-")) {
		t.Errorf("TMPDIR = %q, want a private tact-run-* directory", tmp)
	}
	allowed := map[string]bool{"EXTRA_VAR": true, "TMPDIR": true}
	for _, k := range allowedEnv {
		allowed[k] = true
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		k, _, _ := strings.Cut(line, "=")
		if !allowed[k] {
			t.Errorf("unexpected variable %q in child env", k)
		}
	}

	env.ExtraEnv = []string{"NOEQUALS"}
	if res := twCmd(t, env, "env"); res.Err == nil || !strings.Contains(res.Err.Error(), `bad environment entry "NOEQUALS"`) {
		t.Fatalf("bad ExtraEnv entry: Err = %v", res.Err)
	}
}

func childEnvLine(envOutput, key string) string {
	for _, line := range strings.Split(envOutput, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func TestRunCommandPathFromExtraEnv(t *testing.T) {
	env, _ := twLayout(t)
	bin := filepath.Join(env.Workspace, "bin")
	os.Mkdir(bin, 0o755)
	twWrite(t, filepath.Join(bin, "mytool"), "#!/bin/sh\necho mytool ran\n")
	os.Chmod(filepath.Join(bin, "mytool"), 0o755)
	env.ExtraEnv = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	if res := twCmd(t, env, "mytool"); res.Err != nil || res.Output != "mytool ran\n" {
		t.Fatalf("program from the child's PATH: %q, %v", res.Output, res.Err)
	}
}

func TestRunCommandOutputCap(t *testing.T) {
	env, _ := twLayout(t)
	const total = 100 << 20
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	res := twCmd(t, env, fmt.Sprintf(`sh -c 'head -c %d /dev/zero | tr "\0" a; echo END'`, total))
	close(stop)
	wg.Wait()
	if res.Err != nil {
		t.Fatalf("Err = %v, stderr %q", res.Err, res.Stderr)
	}
	half := DefaultOutputCap / 2
	written := total + len("END\n")
	cut := written - DefaultOutputCap
	want := strings.Repeat("a", half) + fmt.Sprintf("\n[... %d bytes cut ...]\n", cut) + strings.Repeat("a", half-4) + "END\n"
	if res.Output != want {
		t.Fatalf("output of %d bytes is not head + marker + tail; marker region: %q", len(res.Output), res.Output[half-10:half+40])
	}
	growth := int64(peak) - int64(before.HeapInuse)
	t.Logf("peak HeapInuse growth while streaming 100 MB: %.1f MB", float64(growth)/(1<<20))
	if growth > 32<<20 {
		t.Fatalf("HeapInuse grew by %d MB while streaming 100 MB", growth>>20)
	}

	// stderr is capped separately, with the cap from Env.
	env.OutputCap = 100
	res = twCmd(t, env, `sh -c 'head -c 1000000 /dev/zero | tr "\0" b >&2; echo small'`)
	if res.Output != "small\n" {
		t.Fatalf("stdout = %q", res.Output)
	}
	if want := strings.Repeat("b", 50) + "\n[... 999900 bytes cut ...]\n" + strings.Repeat("b", 50); res.Stderr != want {
		t.Fatalf("stderr = %q", res.Stderr)
	}
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef"},
		{"exactly", 6, []string{"abc", "def"}, "abcdef"},
		{"cut", 6, []string{"abcdefgh"}, "abc\n[... 2 bytes cut ...]\nfgh"},
		{"cut across writes", 6, []string{"ab", "cd", "ef", "gh", "ij"}, "abc\n[... 4 bytes cut ...]\nhij"},
		{"ring wraps", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "ab\n[... 3 bytes cut ...]\nfg"},
		{"zero", 0, []string{"abc"}, "\n[... 3 bytes cut ...]\n"},
		{"utf8 edges", 6, []string{"ééééé"}, "é\n[... 6 bytes cut ...]\né"}, // 10 bytes; 3-byte halves split runes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapBuffer(tt.limit, nil)
			for _, w := range tt.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := c.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunCommandTimeoutKillsGroup(t *testing.T) {
	tests := []struct {
		name    string
		command string
	}{
		{"background and foreground", "sh -c 'sleep %[1]s & sleep %[1]s'"},
		{"ignoring SIGTERM", `sh -c 'trap "" TERM; sleep %[1]s & sleep %[1]s'`},
		{"grandchildren", "sh -c 'sh -c \"sleep %[1]s & sleep %[1]s\" & wait'"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := twLayout(t)
			env.ToolTimeout = 300 * time.Millisecond
			env.KillGrace = 200 * time.Millisecond
			marker := twMarker(1001 + i)
			start := time.Now()
			res := twCmd(t, env, fmt.Sprintf(tt.command, marker))
			elapsed := time.Since(start)
			if res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 300ms") {
				t.Fatalf("Err = %v, want timeout", res.Err)
			}
			if res.ExitCode != ExitTimedOut {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, ExitTimedOut)
			}
			if elapsed > 3*time.Second {
				t.Errorf("took %v to return after a 300ms timeout", elapsed)
			}
			twAssertNoSurvivors(t, marker)
		})
	}
}

func TestRunCommandTimeoutMessage(t *testing.T) {
	if got := shortDuration(60 * time.Second); got != "60s" {
		t.Errorf("shortDuration(60s) = %q", got)
	}
	if got := shortDuration(1500 * time.Millisecond); got != "1.5s" {
		t.Errorf("shortDuration(1.5s) = %q", got)
	}
}

func TestRunCommandCancel(t *testing.T) {
	env, _ := twLayout(t)
	marker := twMarker(1011)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		done <- RunCommand{}.Run(ctx, env, json.RawMessage(fmt.Sprintf(`{"command":"sh -c 'sleep %[1]s & sleep %[1]s'"}`, marker)))
	}()
	// Wait until both sleeps run, so the cancel hits a live group.
	deadline := time.Now().Add(time.Minute)
	for len(twSurvivors(t, marker)) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	canceledAt := time.Now()
	select {
	case res := <-done:
		if d := time.Since(canceledAt); d > 2*time.Second {
			t.Errorf("returned %v after cancel", d)
		}
		if !errors.Is(res.Err, context.Canceled) {
			t.Errorf("Err = %v, want context.Canceled", res.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	twAssertNoSurvivors(t, marker)

	// An already canceled context starts nothing.
	res := RunCommand{}.Run(ctx, env, json.RawMessage(`{"command":"true"}`))
	if !errors.Is(res.Err, context.Canceled) {
		t.Errorf("pre-canceled: Err = %v", res.Err)
	}
}

func TestRunCommandBackgroundLeftoversKilled(t *testing.T) {
	env, _ := twLayout(t)
	env.KillGrace = 200 * time.Millisecond
	marker := twMarker(1021)
	start := time.Now()
	res := twCmd(t, env, fmt.Sprintf("sh -c 'sleep %s & echo started'", marker))
	if res.Err != nil || res.Output != "started\n" {
		t.Fatalf("got %q, %v", res.Output, res.Err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	twAssertNoSurvivors(t, marker)
}

// Without the helper (a library that never enabled it, sandbox off) only the
// process group is ended: a process that left it keeps running, but must not
// make the call hang on the pipes it holds.
func TestRunCommandEscapedProcessDoesNotHang(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	withoutHelper(t)
	env, _ := twLayout(t)
	env.Sandbox = sandbox.Off
	env.KillGrace = 200 * time.Millisecond
	marker := twMarker(3) // short: it escapes the group and is killed below anyway
	t.Cleanup(func() {
		for _, pid := range twSurvivors(t, marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	start := time.Now()
	res := twCmd(t, env, fmt.Sprintf("sh -c 'setsid sleep %s & sleep 0.3; echo started'", marker))
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("waited %v on pipes held by an escaped process", d)
	}
	if res.Err != nil || res.Output != "started\n" || !strings.Contains(res.Stderr, "held open") {
		t.Fatalf("got stdout %q stderr %q err %v", res.Output, res.Stderr, res.Err)
	}
}

func TestRunCommandDescribe(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	tests := []struct{ args, want string }{
		{`{"command":"ls -la"}`, `run_command: argv ["ls","-la"] in ` + ws + " (sandbox: workspace-write)"},
		{`{"command":"grep 'a b' <x>","working_dir":"dir"}`, `run_command: argv ["grep","a b","<x>"] in ` + ws + "/dir (sandbox: workspace-write)"},
		{`{"command":"ls","working_dir":"../"}`, `run_command: working_dir: path "../" escapes the workspace`},
		{`{"command":"echo 'x"}`, `run_command: cannot split "echo 'x": Unterminated single-quoted string`},
	}
	for _, tt := range tests {
		if got := (RunCommand{}).Describe(env, json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Describe(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
