package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/sandbox"
)

// requireLandlock skips where the kernel lacks the Landlock ABI a test
// needs; these tests exercise the real kernel, nothing is simulated.
func requireLandlock(t *testing.T, abi int) {
	t.Helper()
	if got := sandbox.DetectLandlockABI(); got < abi {
		t.Skipf("needs Landlock ABI %d, kernel has %d", abi, got)
	}
}

// withABI makes tact believe the kernel offers Landlock ABI abi (0: none),
// and captures the sandbox warnings, starting from none given.
func withABI(t *testing.T, abi int) *[]string {
	t.Helper()
	oldABI, oldWarn := landlockABI, warnSandbox
	var mu sync.Mutex
	var warnings []string
	landlockABI = func() int { return abi }
	warnSandbox = func(msg string) { mu.Lock(); warnings = append(warnings, msg); mu.Unlock() }
	sandboxWarned.Clear()
	t.Cleanup(func() {
		landlockABI, warnSandbox = oldABI, oldWarn
		sandboxWarned.Clear()
	})
	return &warnings
}

// withoutHelper simulates a library program that never called
// ServeHelper.
func withoutHelper(t *testing.T) {
	t.Helper()
	helperEnabled = func() bool { return false }
	t.Cleanup(func() { helperEnabled = sandbox.HelperEnabled })
}

func assertNoFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (err %v); the sandbox let the command create it", path, err)
	}
}

func TestSandboxWorkspaceWrite(t *testing.T) {
	requireLandlock(t, 1)
	env, outside := twLayout(t)
	ws := env.Workspace

	res := twCmd(t, env, `sh -c 'echo in > inside.txt && mkdir -p d/e && mv inside.txt d/e/ && cat d/e/inside.txt'`)
	if res.Err != nil || res.Output != "in\n" {
		t.Fatalf("write inside the workspace: %q, %v, stderr %q", res.Output, res.Err, res.Stderr)
	}

	denied := []struct{ name, command, path string }{
		{"create outside", fmt.Sprintf(`sh -c 'echo x > %s/new.txt'`, outside), filepath.Join(outside, "new.txt")},
		{"through a symlink in the workspace", `sh -c 'echo x > link_out/via-link.txt'`, filepath.Join(outside, "via-link.txt")},
		{"mkdir outside", fmt.Sprintf(`mkdir %s/newdir`, outside), filepath.Join(outside, "newdir")},
		{"symlink outside", fmt.Sprintf(`ln -s /etc/passwd %s/ln`, outside), filepath.Join(outside, "ln")},
		{"move out of the workspace", fmt.Sprintf(`mv dir/file.txt %s/moved.txt`, outside), filepath.Join(outside, "moved.txt")},
	}
	for _, tt := range denied {
		t.Run(tt.name, func(t *testing.T) {
			res := twCmd(t, env, tt.command)
			if res.ExitCode == 0 || res.Err == nil {
				t.Fatalf("exit %d, err %v: the write outside was allowed", res.ExitCode, res.Err)
			}
			if !strings.Contains(res.Stderr, "ermission denied") && !strings.Contains(res.Stderr, "not permitted") {
				t.Errorf("stderr %q does not say the write was denied", res.Stderr)
			}
			assertNoFile(t, tt.path)
		})
	}
	// Existing files outside: no append, truncate or removal.
	secret := filepath.Join(outside, "secret")
	for _, cmd := range []string{`sh -c 'echo x >> %s'`, `truncate -s 0 %s`, `rm -f %s`} {
		if res := twCmd(t, env, fmt.Sprintf(cmd, secret)); res.ExitCode == 0 {
			t.Errorf("%s: allowed", fmt.Sprintf(cmd, secret))
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "top secret\n" {
		t.Fatalf("outside file changed: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "dir", "file.txt")); err != nil {
		t.Fatalf("the denied mv removed the source: %v", err)
	}

	// The devices commands need work.
	res = twCmd(t, env, `sh -c 'echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c'`)
	if res.Err != nil || strings.Fields(res.Output)[0] != "4" || strings.Fields(res.Output)[1] != "4" {
		t.Fatalf("devices: %q, %v, stderr %q", res.Output, res.Err, res.Stderr)
	}
	// Reading and executing anywhere stays allowed.
	if res := twCmd(t, env, "cat "+secret); res.Err != nil || res.Output != "top secret\n" {
		t.Fatalf("read outside: %q, %v", res.Output, res.Err)
	}
}

func TestSandboxPrivateTmpDir(t *testing.T) {
	requireLandlock(t, 1)
	env, _ := twLayout(t)
	script := `sh -c 'echo t > "$TMPDIR/f" && mkdir "$TMPDIR/sub" && cat "$TMPDIR/f" && stat -c %a "$TMPDIR" && echo "$TMPDIR"'`
	var dirs []string
	for range 2 {
		res := twCmd(t, env, script)
		if res.Err != nil {
			t.Fatalf("TMPDIR not writable: %v, stderr %q", res.Err, res.Stderr)
		}
		lines := strings.Split(strings.TrimSpace(res.Output), "\n")
		if len(lines) != 3 || lines[0] != "t" || lines[1] != "700" {
			t.Fatalf("output %q: want t, mode 700, the path", res.Output)
		}
		dirs = append(dirs, lines[2])
		assertNoFile(t, lines[2]) // removed once the command ended
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("two commands shared TMPDIR %s", dirs[0])
	}
	// The rest of the system's temporary directory is not writable.
	probe := filepath.Join(os.TempDir(), fmt.Sprintf("tact-sandbox-probe-%d", os.Getpid()))
	if res := twCmd(t, env, fmt.Sprintf(`sh -c 'echo x > %s'`, probe)); res.ExitCode == 0 {
		os.Remove(probe)
		t.Fatalf("wrote %s outside the private TMPDIR", probe)
	}
	// An unwritable directory left in TMPDIR is still removed.
	res := twCmd(t, env, `sh -c 'mkdir -p "$TMPDIR/ro/x" && chmod 0 "$TMPDIR/ro" && echo "$TMPDIR"'`)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	assertNoFile(t, strings.TrimSpace(res.Output))
}

func TestSandboxReadOnly(t *testing.T) {
	requireLandlock(t, 1)
	env, outside := twLayout(t)
	env.Sandbox = sandbox.ReadOnly
	for _, tt := range []struct{ command, path string }{
		{`sh -c 'echo x > inside.txt'`, filepath.Join(env.Workspace, "inside.txt")},
		{`mkdir newdir`, filepath.Join(env.Workspace, "newdir")},
		{fmt.Sprintf(`sh -c 'echo x > %s/new.txt'`, outside), filepath.Join(outside, "new.txt")},
	} {
		if res := twCmd(t, env, tt.command); res.ExitCode == 0 {
			t.Errorf("%s: allowed in read-only", tt.command)
		}
		assertNoFile(t, tt.path)
	}
	if res := twCmd(t, env, `rm dir/file.txt`); res.ExitCode == 0 {
		t.Errorf("rm allowed in read-only")
	}
	res := twCmd(t, env, `sh -c 'cat dir/file.txt; echo x > /dev/null && echo "ok [$TMPDIR]"'`)
	if res.Err != nil || res.Output != "hello\nok []\n" {
		t.Fatalf("reads and /dev/null in read-only: %q, %v, stderr %q", res.Output, res.Err, res.Stderr)
	}
}

func TestSandboxOff(t *testing.T) {
	env, outside := twLayout(t)
	env.Sandbox = sandbox.Off
	res := twCmd(t, env, fmt.Sprintf(`sh -c 'echo x > %s/new.txt'`, outside))
	if res.Err != nil {
		t.Fatalf("off: %v, stderr %q", res.Err, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err != nil {
		t.Fatal(err)
	}
}

// netCmd runs this test binary as a command that dials addr (or listens),
// and returns the result.
func netCmd(t *testing.T, env *Env, op string) Result {
	t.Helper()
	env.ExtraEnv = []string{testNetEnv + "=" + op}
	return twCmd(t, env, shellquote.Join(os.Args[0]))
}

func loopbackListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

func TestSandboxNoNetwork(t *testing.T) {
	requireLandlock(t, sandbox.ABINet)
	addr := loopbackListener(t)
	env, _ := twLayout(t)

	if res := netCmd(t, env, "dial "+addr); res.Err != nil || res.Output != "net ok\n" {
		t.Fatalf("connect without --no-network: %q, %v, stderr %q", res.Output, res.Err, res.Stderr)
	}
	env.NoNetwork = true
	res := netCmd(t, env, "dial "+addr)
	if res.ExitCode != 3 || !strings.Contains(res.Output, "permission denied") {
		t.Fatalf("connect with --no-network: exit %d, %q, stderr %q", res.ExitCode, res.Output, res.Stderr)
	}
	if res := netCmd(t, env, "listen"); res.ExitCode != 3 || !strings.Contains(res.Output, "permission denied") {
		t.Fatalf("bind with --no-network: exit %d, %q", res.ExitCode, res.Output)
	}
	env.Sandbox = sandbox.ReadOnly
	if res := netCmd(t, env, "dial "+addr); res.ExitCode != 3 {
		t.Fatalf("connect with read-only --no-network: exit %d, %q", res.ExitCode, res.Output)
	}
}

func TestSandboxNoNetworkOff(t *testing.T) {
	addr := loopbackListener(t)
	warnings := withABI(t, sandbox.DetectLandlockABI())
	env, _ := twLayout(t)
	env.Sandbox, env.NoNetwork = sandbox.Off, true
	for range 2 {
		if res := netCmd(t, env, "dial "+addr); res.Err != nil {
			t.Fatalf("off ignores --no-network: %v", res.Err)
		}
	}
	if len(*warnings) != 1 || !strings.Contains((*warnings)[0], "--no-network is not enforced with --sandbox off") {
		t.Fatalf("warnings = %q", *warnings)
	}
}

// Where the kernel has no Landlock, workspace-write runs unconfined with one
// warning per process, and read-only refuses to run anything.
func TestSandboxFallbackWithoutLandlock(t *testing.T) {
	warnings := withABI(t, 0)
	env, outside := twLayout(t)
	for i := range 3 {
		res := twCmd(t, env, fmt.Sprintf(`sh -c 'echo x > %s/fallback%d.txt'`, outside, i))
		if res.Err != nil {
			t.Fatalf("workspace-write without Landlock: %v", res.Err)
		}
	}
	if len(*warnings) != 1 || !strings.Contains((*warnings)[0], "Landlock is not available on this kernel") {
		t.Fatalf("want one warning for three commands, got %q", *warnings)
	}
	if d := (RunCommand{}).Describe(env, json.RawMessage(`{"command":"true"}`)); !strings.HasSuffix(d, "(sandbox: workspace-write (not enforced: no Landlock))") {
		t.Errorf("Describe = %q", d)
	}

	env.Sandbox = sandbox.ReadOnly
	marker := filepath.Join(env.Workspace, "ran")
	res := twCmd(t, env, "touch "+marker)
	if res.ExitCode != ExitCannotExecute || res.Err == nil || !strings.Contains(res.Err.Error(), "--sandbox read-only needs Landlock") {
		t.Fatalf("read-only without Landlock: exit %d, err %v", res.ExitCode, res.Err)
	}
	assertNoFile(t, marker)
	if len(*warnings) != 1 {
		t.Fatalf("warnings = %q", *warnings)
	}
}

// A kernel with Landlock but without TCP rules (ABI < 4): --no-network is
// refused in read-only and only warned about in workspace-write.
func TestSandboxNoNetworkOldABI(t *testing.T) {
	requireLandlock(t, 3)
	addr := loopbackListener(t)
	warnings := withABI(t, 3)
	env, outside := twLayout(t)
	env.NoNetwork = true
	for range 2 {
		if res := netCmd(t, env, "dial "+addr); res.Err != nil || res.Output != "net ok\n" {
			t.Fatalf("workspace-write, ABI 3: %q, %v", res.Output, res.Err)
		}
	}
	if len(*warnings) != 1 || !strings.Contains((*warnings)[0], "--no-network is not enforced: Landlock ABI 3 cannot restrict TCP") {
		t.Fatalf("warnings = %q", *warnings)
	}
	// The filesystem rules still apply.
	env.ExtraEnv = nil
	if res := twCmd(t, env, fmt.Sprintf(`sh -c 'echo x > %s/abi3.txt'`, outside)); res.ExitCode == 0 {
		t.Fatal("ABI 3 ruleset let a write outside through")
	}
	env.Sandbox = sandbox.ReadOnly
	res := netCmd(t, env, "dial "+addr)
	if res.ExitCode != ExitCannotExecute || res.Err == nil || !strings.Contains(res.Err.Error(), "--no-network needs Landlock ABI 4") {
		t.Fatalf("read-only, ABI 3: exit %d, %v", res.ExitCode, res.Err)
	}
}

func TestSandboxWithoutHelper(t *testing.T) {
	withoutHelper(t)
	env, _ := twLayout(t)
	res := twCmd(t, env, "echo hi")
	if res.ExitCode != ExitCannotExecute || res.Err == nil || !strings.Contains(res.Err.Error(), "the sandbox helper is not enabled in this program") {
		t.Fatalf("no helper: exit %d, %v", res.ExitCode, res.Err)
	}
	env.Sandbox = sandbox.Off
	if res := twCmd(t, env, "echo hi"); res.Err != nil || res.Output != "hi\n" {
		t.Fatalf("no helper, sandbox off: %q, %v", res.Output, res.Err)
	}
}

func TestSandboxInfoString(t *testing.T) {
	tests := []struct {
		info SandboxInfo
		want string
	}{
		{SandboxInfo{Mode: sandbox.WorkspaceWrite, Enforced: true, LandlockABI: 7}, "workspace-write"},
		{SandboxInfo{Mode: sandbox.ReadOnly, NoNetwork: true, Enforced: true, LandlockABI: 7}, "read-only, no network"},
		{SandboxInfo{Mode: sandbox.WorkspaceWrite, NoNetwork: true, Enforced: true, LandlockABI: 3}, "workspace-write, no network (not enforced: Landlock ABI too old)"},
		{SandboxInfo{Mode: sandbox.WorkspaceWrite}, "workspace-write (not enforced: no Landlock)"},
		{SandboxInfo{Mode: sandbox.Off, LandlockABI: 7}, "off"},
	}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.info, got, tt.want)
		}
	}
	for _, s := range []string{"workspace-write", "read-only", "off"} {
		if m, err := sandbox.ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "bogus", "Off", "workspace_write"} {
		if _, err := sandbox.ParseMode(s); err == nil || !strings.Contains(err.Error(), "want workspace-write, read-only or off") {
			t.Errorf("ParseMode(%q): %v", s, err)
		}
	}
}

// Processes that leave the command's process group (setsid, double fork)
// are reparented to the helper and ended when the command ends.
func TestRunCommandNoSurvivors(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	tests := []struct{ name, command string }{
		{"setsid daemon", "sh -c 'setsid sleep %[1]s & echo hi'"},
		{"double fork", "sh -c '(sleep %[1]s &); echo hi'"},
		{"double fork and setsid", "sh -c '(setsid sleep %[1]s &); echo hi'"},
		{"daemon ignoring SIGTERM", `sh -c 'setsid sh -c "trap \"\" TERM; sleep %[1]s; sleep %[1]s" & echo hi'`},
		{"daemon with children", `sh -c 'setsid sh -c "sleep %[1]s & sleep %[1]s" & echo hi'`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := twLayout(t)
			env.KillGrace = 200 * time.Millisecond
			marker := twMarker(2001 + i)
			start := time.Now()
			res := twCmd(t, env, fmt.Sprintf(tt.command, marker))
			if res.Err != nil || res.Output != "hi\n" || res.Stderr != "" {
				t.Fatalf("got %q, stderr %q, %v", res.Output, res.Stderr, res.Err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v", d)
			}
			twAssertNoSurvivors(t, marker)
		})
	}
}

func TestRunCommandTimeoutEndsEscapedProcesses(t *testing.T) {
	env, _ := twLayout(t)
	env.ToolTimeout = 300 * time.Millisecond
	env.KillGrace = 200 * time.Millisecond
	marker := twMarker(2011)
	start := time.Now()
	res := twCmd(t, env, fmt.Sprintf("sh -c 'setsid sleep %[1]s & (sleep %[1]s &); sleep %[1]s'", marker))
	if res.ExitCode != ExitTimedOut || res.Err == nil || !strings.Contains(res.Err.Error(), "timed out after 300ms") {
		t.Fatalf("exit %d, %v", res.ExitCode, res.Err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	twAssertNoSurvivors(t, marker)
}

// startEscaping starts a command that leaves a setsid daemon and a double
// forked process and then waits, and returns once all three sleeps run.
func startEscaping(t *testing.T, ctx context.Context, env *Env, marker string) <-chan Result {
	t.Helper()
	done := make(chan Result, 1)
	args, _ := json.Marshal(m{"command": fmt.Sprintf("sh -c 'setsid sleep %[1]s & (sleep %[1]s &); sleep %[1]s'", marker)})
	go func() { done <- RunCommand{}.Run(ctx, env, args) }()
	deadline := time.Now().Add(time.Minute)
	for len(twSurvivors(t, marker)) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the command's sleeps did not start: %v", twSurvivors(t, marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return done
}

func TestRunCommandCancelEndsEscapedProcesses(t *testing.T) {
	env, _ := twLayout(t)
	env.KillGrace = 200 * time.Millisecond
	marker := twMarker(2021)
	ctx, cancel := context.WithCancel(context.Background())
	done := startEscaping(t, ctx, env, marker)
	cancel()
	select {
	case res := <-done:
		if !errors.Is(res.Err, context.Canceled) || res.ExitCode != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d, %v", res.ExitCode, res.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	twAssertNoSurvivors(t, marker)
}

// KillRunning (tact's second Ctrl-C) ends everything at once, escaped
// processes included.
func TestKillRunningEndsEscapedProcesses(t *testing.T) {
	env, _ := twLayout(t)
	env.KillGrace = 10 * time.Second // KillRunning must not wait for it
	marker := twMarker(2031)
	done := startEscaping(t, context.Background(), env, marker)
	start := time.Now()
	sandbox.KillRunning()
	select {
	case res := <-done:
		if res.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d, %v", res.ExitCode, res.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after KillRunning")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("KillRunning took %v to end the command", d)
	}
	twAssertNoSurvivors(t, marker)
}

// tact killed with SIGKILL: its helpers get SIGTERM (parent-death signal)
// and end the command's tree.
func TestRunCommandParentKilled(t *testing.T) {
	env, _ := twLayout(t)
	marker := twMarker(2041)
	args, _ := json.Marshal(m{"command": fmt.Sprintf("sh -c 'setsid sleep %[1]s & (sleep %[1]s &); sleep %[1]s'", marker)})
	cmd := exec.Command(os.Args[0])
	cmd.Dir = env.Workspace
	cmd.Env = append(os.Environ(), testRunCmdEnv+"="+string(args))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(twSurvivors(t, marker)) < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the command's sleeps did not start: %v", twSurvivors(t, marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline = time.Now().Add(3 * time.Second) // the default 500ms grace, and some
	for len(twSurvivors(t, marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	twAssertNoSurvivors(t, marker)
}

// With signal scoping (ABI 6) the command cannot kill the helper that is to
// clean up after it: the helper keeps no Landlock domain of its own.
func TestSandboxCommandCannotKillHelper(t *testing.T) {
	requireLandlock(t, sandbox.ABIScoped)
	env, _ := twLayout(t)
	env.KillGrace = 200 * time.Millisecond
	marker := twMarker(2051)
	// Signal the helper process, and each of its threads by id. In the
	// command's own PID namespace its parent is the namespace's init (the
	// helper is out of sight), which the kernel keeps from a kill from
	// inside: kill says yes, nothing dies, and the cleanup below still
	// holds.
	res := twCmd(t, env, fmt.Sprintf(`sh -c 'echo "ppid=$PPID"; setsid sleep %[1]s & kill -9 $PPID 2>/dev/null; echo "kill=$?"; for t in /proc/$PPID/task/*; do kill -9 ${t##*/} 2>/dev/null && echo "thread ${t##*/} killed"; done; true'`, marker))
	if res.Err != nil || !regexp.MustCompile(`^(ppid=1\nkill=0\n(thread [0-9]+ killed\n)*|ppid=[0-9]+\nkill=1\n)$`).MatchString(res.Output) {
		t.Fatalf("got %q, stderr %q, %v", res.Output, res.Stderr, res.Err)
	}
	twAssertNoSurvivors(t, marker)
	// Other processes outside the sandbox are out of reach too.
	if res := twCmd(t, env, fmt.Sprintf("kill -0 %d", os.Getpid())); res.ExitCode == 0 {
		t.Fatal("the command could signal tact")
	}
}

// BenchmarkRunCommandTrue measures what the helper costs per command:
// go test ./tools/ -run '^$' -bench RunCommandTrue
func BenchmarkRunCommandTrue(b *testing.B) {
	for _, bc := range []struct {
		name   string
		mode   sandbox.Mode
		helper bool
	}{
		{"direct", sandbox.Off, false},
		{"helper-off", sandbox.Off, true},
		{"helper-workspace-write", sandbox.WorkspaceWrite, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			helperEnabled = func() bool { return bc.helper }
			defer func() { helperEnabled = sandbox.HelperEnabled }()
			env, err := NewEnv(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			env.Sandbox = bc.mode
			for b.Loop() {
				if res := (RunCommand{}).Run(context.Background(), env, json.RawMessage(`{"command":"true"}`)); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}

func TestSandboxBadModeInEnv(t *testing.T) {
	env, _ := twLayout(t)
	env.Sandbox = "bogus"
	res := twCmd(t, env, "true")
	if res.ExitCode != ExitCannotExecute || res.Err == nil || !strings.Contains(res.Err.Error(), `Env.Sandbox: unknown mode "bogus"`) {
		t.Fatalf("exit %d, %v", res.ExitCode, res.Err)
	}
}
