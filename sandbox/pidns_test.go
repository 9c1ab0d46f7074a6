//go:build linux

package sandbox

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// confined runs command under the helper as run_command does (Landlock,
// workspace-write in a new directory) and returns its stdout and wait
// status, and the helper's report.
func confined(tb testing.TB, command string, noPIDNS bool) (string, syscall.WaitStatus, Report) {
	return confinedSpec(tb, command, func(s *Spec) { s.NoPIDNS = noPIDNS })
}

func confinedSpec(tb testing.TB, command string, edit func(*Spec)) (string, syscall.WaitStatus, Report) {
	tb.Helper()
	abi := DetectLandlockABI()
	if abi == 0 {
		tb.Skip("no Landlock on this kernel: commands are not confined")
	}
	ws := tb.TempDir()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		tb.Fatal(err)
	}
	defer devnull.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	defer outR.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	spec := Spec{Prog: "/bin/sh", Argv: []string{"sh", "-c", command}, Dir: ws,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Landlock: true, ABI: abi, Mode: WorkspaceWrite,
		Workspace: ws, KillGrace: DefaultKillGrace, Parent: os.Getpid()}
	edit(&spec)
	proc, report, err := Start(spec, [3]*os.File{devnull, outW, outW})
	outW.Close()
	if err != nil {
		tb.Fatal(err)
	}
	out, _ := io.ReadAll(outR)
	if _, err := proc.Wait(); err != nil {
		tb.Fatal(err)
	}
	rep := <-report
	if !rep.Started {
		tb.Fatalf("report %+v, output %s", rep, out)
	}
	return string(out), syscall.WaitStatus(rep.Status), rep
}

// TestConfinedProcessView: a confined command sees only its own processes
// in /proc, so `cat /proc/[0-9]*/environ` cannot read the environment of
// the shell (or cron) that started tact, which holds the same secrets.
func TestConfinedProcessView(t *testing.T) {
	const secret = "PIDNS_TEST_SECRET=s3cr3t-of-the-parent-shell"
	shell := exec.Command("sleep", "1000")
	shell.Env = []string{secret}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { shell.Process.Kill(); shell.Wait() }()
	out, ws, rep := confined(t, `cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'; echo; echo "pids: $(ls /proc | grep -c '^[0-9]')"`, false)
	if rep.NoPIDNS != "" {
		t.Skipf("the kernel refused a PID namespace (%s): the fallback is today's behaviour", rep.NoPIDNS)
	}
	if strings.Contains(out, "s3cr3t-of-the-parent-shell") {
		t.Fatalf("the command read another process's environment:\n%s", out)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("status %v: %s", ws, out)
	}
	_, count, _ := strings.Cut(strings.TrimSpace(out[strings.LastIndex(out, "pids:"):]), " ")
	if n, err := strconv.Atoi(count); err != nil || n > 6 {
		t.Errorf("the command sees %q processes, want its own few", count)
	}
}

// TestConfinedUnderInit: the command's exit status and signal come through
// its namespace's init; what it leaves running is ended.
func TestConfinedUnderInit(t *testing.T) {
	for _, c := range []struct {
		command string
		check   func(ws syscall.WaitStatus) bool
	}{
		{"exit 7", func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 7 }},
		{"kill -TERM $$", func(ws syscall.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGTERM }},
		{"setsid sleep 1000 & exit 3", func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 3 }},
	} {
		out, ws, rep := confined(t, c.command, false)
		if !c.check(ws) || rep.NoPIDNS != "" && os.Getenv("TACT_TEST_REQUIRE_PIDNS") != "" {
			t.Errorf("%s: status %v, report %+v, output %q", c.command, ws, rep, out)
		}
	}
}

// BenchmarkConfinedStart: the start-up cost of one confined `true`, with
// and without the PID namespace (docs/safety.md quotes the figures).
func BenchmarkConfinedStart(b *testing.B) {
	for _, c := range []struct {
		name    string
		noPIDNS bool
	}{{"pidns", false}, {"no-pidns", true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, ws, _ := confined(b, "true", c.noPIDNS); ws != 0 {
					b.Fatal(ws)
				}
			}
		})
	}
}

// TestPIDNSFallback: where the kernel refuses the namespace, the command
// runs as before, the report says why, tact logs it once at debug level
// (-v), and later commands do not try again.
func TestPIDNSFallback(t *testing.T) {
	var logged strings.Builder
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	// The process-wide state starts afresh (go test -count=N runs this again).
	pidNSRefused.Store(false)
	pidNSLogOnce = sync.Once{}
	defer pidNSRefused.Store(false)
	out, ws, rep := confinedSpec(t, "echo ran", func(s *Spec) { s.TestRefusePIDNS = true })
	if ws != 0 || out != "ran\n" || !strings.Contains(rep.NoPIDNS, "refused for a test") {
		t.Fatalf("status %v, output %q, report %+v", ws, out, rep)
	}
	if !pidNSRefused.Load() || strings.Count(logged.String(), "no PID namespace") != 1 {
		t.Errorf("refused %v, log %q: want one debug line", pidNSRefused.Load(), logged.String())
	}
	// Later commands skip the namespace without asking the kernel again
	// (and without another line).
	if _, _, rep := confinedSpec(t, "true", func(s *Spec) { s.TestRefusePIDNS = true }); rep.NoPIDNS != "" {
		t.Errorf("report %+v", rep)
	}
	if strings.Count(logged.String(), "no PID namespace") != 1 {
		t.Errorf("log %q", logged.String())
	}
}
