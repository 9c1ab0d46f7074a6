package main

// End-to-end safety tests of the built bin/tact: unattended denial, the
// /dev/tty approval prompt, output caps and memory, --timeout, signals and
// process-group cleanup, and redaction. They run the real binary (built by
// `make build`, whose cgo flags are fixed) as a child process, so they see
// exactly what a user or a script sees: exit codes, stdout, stderr, trace.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/tactcli/tact/internal/testwait"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

var (
	e2eBuildOnce sync.Once
	e2eBin       string
	e2eBuildErr  error
)

// e2eTact builds bin/tact once per test binary through the Makefile (the
// build cache makes a repeat build take well under a second).
func e2eTact(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test of the built binary; skipped with -short")
	}
	e2eBuildOnce.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			e2eBuildErr = err
			return
		}
		out, err := exec.Command("make", "-C", root, "build").CombinedOutput()
		if err != nil {
			e2eBuildErr = fmt.Errorf("make build: %v\n%s", err, out)
			return
		}
		e2eBin = filepath.Join(root, "bin", "tact")
	})
	if e2eBuildErr != nil {
		t.Fatal(e2eBuildErr)
	}
	return e2eBin
}

// e2eCase is one tact invocation's setup: a scratch home with a workspace.
type e2eCase struct {
	t     *testing.T
	bin   string
	dir   string // scratch root: HOME, XDG dirs, plan, trace, policy
	ws    string // the workspace
	trace string
	pol   string
	env   []string
}

func newE2E(t *testing.T) *e2eCase { return newE2ECase(t, e2eTact(t)) }

// newE2ECase is an e2eCase running bin in a scratch directory.
func newE2ECase(t *testing.T, bin string) *e2eCase {
	dir := t.TempDir()
	c := &e2eCase{t: t, bin: bin, dir: dir, ws: filepath.Join(dir, "ws"),
		trace: filepath.Join(dir, "trace.jsonl"), pol: filepath.Join(dir, "policy.json")}
	if err := os.Mkdir(c.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// A clean environment: no TACT_* settings, user policy or models leak in
	// from the developer's shell.
	c.env = []string{
		"PATH=" + os.Getenv("PATH"), runtimeEnv(),
		"HOME=" + dir,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(dir, ".local", "share"),
		"LANG=C.UTF-8",
	}
	return c
}

// file writes name under the scratch root and returns its path.
func (c *e2eCase) file(name, content string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// args prefixes the flags every run shares.
func (c *e2eCase) args(extra ...string) []string {
	return append([]string{"exec", "--workspace", c.ws, "--trace", c.trace, "--policy", c.pol}, extra...)
}

// proc is a running tact.
type proc struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	exited         time.Time
}

// start runs tact in a new session (so it has no controlling terminal unless
// attr gives it one). stdin nil means /dev/null.
func (c *e2eCase) start(stdin io.Reader, attr *syscall.SysProcAttr, args ...string) *proc {
	c.t.Helper()
	if attr == nil {
		attr = &syscall.SysProcAttr{Setsid: true}
	}
	return c.startWithFiles(stdin, attr, nil, args...)
}

func (c *e2eCase) run(args ...string) *proc { return c.start(nil, nil, args...) }

// wait returns tact's exit code, failing the test (and killing tact) if it
// has not exited within d.
// wait waits for tact to exit and returns its exit code. d is what tact
// should need; the test fails (and kills it) only past d or a minute,
// whichever is longer: a busy machine is slow, and a test that checks how
// fast tact exits measures p.exited itself.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	limit := max(d, time.Minute)
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("tact did not exit within %s (killed)\nstdout: %s\nstderr: %s", limit, p.stdout.String(), p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) signal(s syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatalf("signal %v: %v", s, err)
	}
}

// e2eResult is the part of --json output the tests look at.
type e2eResult struct {
	Success           bool   `json:"success"`
	FinalAnswer       string `json:"final_answer"`
	TerminationReason string `json:"termination_reason"`
	Trace             struct {
		Steps []struct {
			Action struct {
				Tool string          `json:"tool"`
				Args json.RawMessage `json:"args"`
			} `json:"action"`
			Observation string `json:"observation"`
			Error       string `json:"error"`
			Decision    string `json:"decision"`
			ExitCode    int    `json:"exit_code"`
		} `json:"steps"`
	} `json:"trace"`
}

func (p *proc) result() e2eResult {
	p.t.Helper()
	var r e2eResult
	if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil {
		p.t.Fatalf("--json output is not a result object: %v\n%s", err, p.stdout.String())
	}
	return r
}

// events reads the trace; every line must be a JSON object with "event".
func (c *e2eCase) events() []map[string]any {
	c.t.Helper()
	data, err := os.ReadFile(c.trace)
	if err != nil {
		c.t.Fatalf("trace: %v", err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			c.t.Fatalf("trace line is not JSON: %v\n%s", err, sc.Text())
		}
		if _, ok := ev["event"].(string); !ok {
			c.t.Fatalf("trace line without event: %s", sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

func findEvent(evs []map[string]any, name string) map[string]any {
	for _, ev := range evs {
		if ev["event"] == name {
			return ev
		}
	}
	return nil
}

// assertTerminated checks the trace is closed: its last event is the
// termination event with the given reason.
func (c *e2eCase) assertTerminated(reason string) {
	c.t.Helper()
	evs := c.events()
	if len(evs) == 0 {
		c.t.Fatal("trace is empty")
	}
	last := evs[len(evs)-1]
	if last["event"] != "termination" || last["reason"] != reason {
		c.t.Errorf("last trace event = %v (reason %v), want termination with reason %q", last["event"], last["reason"], reason)
	}
}

// planJSONL renders plan rows.
func planJSONL(t *testing.T, rows ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func step(tool string, args map[string]any) map[string]any {
	return map[string]any{"tool": tool, "args": args}
}

func finalStep(answer any) map[string]any {
	return step("final_answer", map[string]any{"answer": answer})
}

var markerSeq atomic.Int64

// sleepMarker is a sleep duration no other process on the machine uses, so
// /proc/*/cmdline finds exactly the processes a test started.
func sleepMarker() string {
	return fmt.Sprintf("100.%d%04d", os.Getpid(), markerSeq.Add(1))
}

// procsWith lists the pids whose command line contains marker as a whole
// argument or inside one (sh -c '... sleep MARKER').
func procsWith(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 { // gone, or a zombie
			continue
		}
		if bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sleepRunning reports whether a sleep process carrying marker runs
// (sh -c '...; sleep MARKER' has then run what comes before it).
func sleepRunning(marker string) bool {
	for _, pid := range procsWith(marker) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "sleep" {
			return true
		}
	}
	return false
}

// killMarked kills the processes a test left behind (by pid; they carry the
// test's unique marker).
func killMarked(t *testing.T, marker string) {
	t.Cleanup(func() {
		for _, pid := range procsWith(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// waitFor polls cond until it holds or d passes. It is the package's one
// poll: a test waits on a condition (a process, a file, a line), never a
// fixed time; d is generous (a minute where a start is awaited), as a busy
// machine is slow and a passing run waits only as long as it must.
func waitFor(d time.Duration, cond func() bool) bool { return testwait.Until(d, cond) }

// assertNoSurvivors allows a moment for killed processes to be reaped.
func assertNoSurvivors(t *testing.T, marker string, grace time.Duration) {
	t.Helper()
	var left []int
	if !waitFor(grace, func() bool { left = procsWith(marker); return len(left) == 0 }) {
		t.Errorf("processes of the tool outlived tact: pids %v with %q in their command line", left, marker)
	}
}

// --- 1. unattended denial ---------------------------------------------------

func TestE2EUnattendedDenial(t *testing.T) {
	for _, stdin := range []string{"/dev/null", "empty pipe", "closed"} {
		t.Run(stdin, func(t *testing.T) {
			c := newE2E(t)
			plan := c.file("plan.jsonl", planJSONL(t,
				step("write_file", map[string]any{"path": "out.txt", "content": "should not be written"}),
				finalStep("done"),
			))
			// No --no-input, no --yes: tact must notice by itself that nobody
			// can answer (new session: no controlling terminal).
			args := c.args("--json", plan)
			var p *proc
			switch stdin {
			case "/dev/null":
				p = c.run(args...)
			case "empty pipe":
				p = c.start(strings.NewReader(""), nil, args...)
			case "closed":
				// fd 0 not open at all; exec keeps the pid, so signals and
				// the exit status are tact's.
				p = c.startCmd(nil, &syscall.SysProcAttr{Setsid: true}, nil,
					"sh", append([]string{"-c", `exec "$0" "$@" <&-`, c.bin}, args...)...)
			}
			code := p.wait(5 * time.Second)
			if code == 0 {
				t.Errorf("exit code 0, want a failure: the only action was denied")
			}
			if _, err := os.Stat(filepath.Join(c.ws, "out.txt")); !os.IsNotExist(err) {
				t.Errorf("out.txt was written (stat err %v); a denied write must not run", err)
			}
			res := p.result()
			if len(res.Trace.Steps) == 0 {
				t.Fatalf("no steps in the result: %s", p.stdout.String())
			}
			st := res.Trace.Steps[0]
			if st.Action.Tool != "write_file" || !strings.HasPrefix(st.Observation, "denied by policy") || st.Decision != "deny" {
				t.Errorf("step 1 = %s %q (decision %q), want write_file observed as \"denied by policy...\" with decision deny", st.Action.Tool, st.Observation, st.Decision)
			}
			denied := findEvent(c.events(), "denied")
			if denied == nil {
				t.Fatalf("trace has no denied event")
			}
			if denied["tool"] != "write_file" || !strings.HasPrefix(fmt.Sprint(denied["reason"]), "denied by policy") {
				t.Errorf("denied event = %v, want tool write_file and a \"denied by policy\" reason", denied)
			}
			c.assertTerminated("failure")
		})
	}
}

// --- 2. the approval prompt on a pseudo-terminal ----------------------------

// ptyRun starts tact with a fresh pseudo-terminal as its controlling
// terminal, answers the approval prompt with answer, and returns tact and
// everything the terminal showed. With stdinPipe the plan comes on standard
// input (a pipe) and the terminal is only the controlling terminal, as in
// `tact plan ... | tact exec -`. An empty answer expects no prompt: tact
// must finish by itself.
func ptyRun(t *testing.T, c *e2eCase, plan, answer string, stdinPipe bool, flags ...string) (*proc, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	defer tty.Close()
	t.Cleanup(func() { ptmx.Close() })
	var (
		mu     sync.Mutex
		screen bytes.Buffer
	)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	shown := func() string { mu.Lock(); defer mu.Unlock(); return screen.String() }

	var p *proc
	if stdinPipe {
		// fd 3 in the child is the terminal; it becomes the controlling one.
		attr := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
		p = c.startWithFiles(strings.NewReader(plan), attr, []*os.File{tty}, c.args(append(flags, "--json", "-")...)...)
	} else {
		planFile := c.file("plan.jsonl", plan)
		attr := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		p = c.startWithFiles(tty, attr, nil, c.args(append(flags, "--json", planFile)...)...)
	}
	tty.Close() // only tact holds the terminal now, so reads end when it exits

	if answer == "" {
		p.wait(5 * time.Second)
		select {
		case <-readDone:
		case <-time.After(time.Minute):
		}
		return p, shown()
	}

	if !waitFor(time.Minute, func() bool { return strings.Contains(shown(), "Run this?") && strings.Contains(shown(), "[n]o: ") }) {
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("no approval prompt on the terminal within a minute; terminal showed:\n%s\nstderr: %s", shown(), p.stderr.String())
	}
	if _, err := ptmx.Write([]byte(answer + "\n")); err != nil {
		t.Fatalf("answer the prompt: %v", err)
	}
	p.wait(5 * time.Second)
	select {
	case <-readDone:
	case <-time.After(time.Minute):
	}
	return p, shown()
}

// startWithFiles is start with extra descriptors (fd 3 on) for the child.
func (c *e2eCase) startWithFiles(stdin io.Reader, attr *syscall.SysProcAttr, extra []*os.File, args ...string) *proc {
	c.t.Helper()
	return c.startCmd(stdin, attr, extra, c.bin, args...)
}

// startCmd starts name (tact, or a wrapper that execs it).
func (c *e2eCase) startCmd(stdin io.Reader, attr *syscall.SysProcAttr, extra []*os.File, name string, args ...string) *proc {
	c.t.Helper()
	p := &proc{t: c.t, done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Env = c.env
	p.cmd.Dir = c.dir
	p.cmd.Stdin = stdin
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	p.cmd.ExtraFiles = extra
	p.cmd.SysProcAttr = attr
	if err := p.cmd.Start(); err != nil {
		c.t.Fatalf("start tact: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	c.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func TestE2EPromptOnTerminal(t *testing.T) {
	touchPlan := func(t *testing.T) string {
		return planJSONL(t, step("run_command", map[string]any{"command": "touch made.txt"}), finalStep("done"))
	}
	tests := []struct {
		name      string
		answer    string
		stdinPipe bool
		wantRan   bool
		wantDec   string
		wantObs   string // substring of step 1's observation
	}{
		{"yes", "y", false, true, "approved", ""},
		{"yes with the plan on a stdin pipe", "yes", true, true, "approved", ""},
		{"no", "n", false, false, "rejected", "denied by user"},
		{"no with the plan on a stdin pipe", "n", true, false, "rejected", "denied by user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newE2E(t)
			p, screen := ptyRun(t, c, touchPlan(t), tc.answer, tc.stdinPipe)
			if !strings.Contains(screen, `"touch","made.txt"`) {
				t.Errorf("the prompt did not show the argv; terminal showed:\n%s", screen)
			}
			_, err := os.Stat(filepath.Join(c.ws, "made.txt"))
			if ran := err == nil; ran != tc.wantRan {
				t.Errorf("command ran = %v, want %v (answer %q)", ran, tc.wantRan, tc.answer)
			}
			res := p.result()
			if len(res.Trace.Steps) == 0 {
				t.Fatalf("no steps: %s", p.stdout.String())
			}
			st := res.Trace.Steps[0]
			if st.Decision != tc.wantDec || !strings.Contains(st.Observation, tc.wantObs) {
				t.Errorf("step 1: decision %q observation %q; want decision %q, observation containing %q", st.Decision, st.Observation, tc.wantDec, tc.wantObs)
			}
			if tc.wantRan != res.Success {
				t.Errorf("success = %v, want %v; stderr: %s", res.Success, tc.wantRan, p.stderr.String())
			}
		})
	}

	t.Run("--no-input on a terminal never prompts", func(t *testing.T) {
		c := newE2E(t)
		p, screen := ptyRun(t, c, touchPlan(t), "", false, "--no-input")
		if strings.Contains(screen, "Run this?") {
			t.Errorf("--no-input prompted; terminal showed:\n%s", screen)
		}
		if _, err := os.Stat(filepath.Join(c.ws, "made.txt")); err == nil {
			t.Errorf("the command ran without approval")
		}
		if st := p.result().Trace.Steps[0]; st.Decision != "deny" || !strings.HasPrefix(st.Observation, "denied by policy") {
			t.Errorf("step 1: decision %q observation %q; want deny, \"denied by policy...\"", st.Decision, st.Observation)
		}
		if findEvent(c.events(), "denied") == nil {
			t.Errorf("trace has no denied event")
		}
	})

	t.Run("always writes a rule the next unattended run honours", func(t *testing.T) {
		c := newE2E(t)
		p, _ := ptyRun(t, c, touchPlan(t), "a", false)
		res := p.result()
		if !res.Success || len(res.Trace.Steps) == 0 || res.Trace.Steps[0].Decision != "approved_always" {
			t.Fatalf("first run: %s\nstderr: %s", p.stdout.String(), p.stderr.String())
		}
		data, err := os.ReadFile(c.pol)
		if err != nil {
			t.Fatalf("the policy file was not written: %v", err)
		}
		var pol struct {
			Allow []struct {
				Tool, Command, Path string
			} `json:"allow"`
		}
		if err := json.Unmarshal(data, &pol); err != nil {
			t.Fatalf("policy file: %v\n%s", err, data)
		}
		if len(pol.Allow) != 1 || pol.Allow[0].Tool != "run_command" || pol.Allow[0].Command != "touch made.txt" {
			t.Errorf("policy allow rules = %+v, want one run_command rule for \"touch made.txt\"", pol.Allow)
		}
		if err := os.Remove(filepath.Join(c.ws, "made.txt")); err != nil {
			t.Fatalf("first run did not run the command: %v", err)
		}

		// Second run: no terminal, --no-input; the saved rule approves it.
		plan := c.file("plan2.jsonl", touchPlan(t))
		p2 := c.run(c.args("--json", "--no-input", plan)...)
		if code := p2.wait(5 * time.Second); code != 0 {
			t.Fatalf("second run exit %d, want 0\nstdout: %s\nstderr: %s", code, p2.stdout.String(), p2.stderr.String())
		}
		if _, err := os.Stat(filepath.Join(c.ws, "made.txt")); err != nil {
			t.Errorf("second run did not run the command: %v", err)
		}
		if st := p2.result().Trace.Steps[0]; st.Decision != "allow" {
			t.Errorf("second run decision %q, want allow (by the saved rule)", st.Decision)
		}
	})
}

// --- 3. 100 MB of output ----------------------------------------------------

func TestE2EHugeOutputIsCapped(t *testing.T) {
	c := newE2E(t)
	plan := c.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": `sh -c 'head -c 104857600 /dev/zero | tr "\0" a'`}),
		finalStep("done"),
	))
	p := c.run(c.args("--yes", "--json", plan)...)
	// VmHWM of tact itself, sampled while it runs (rusage below also
	// covers it, but includes the children).
	var hwmKB atomic.Int64
	go func() {
		for {
			select {
			case <-p.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if kb := vmHWM(p.cmd.Process.Pid); kb > hwmKB.Load() {
				hwmKB.Store(kb)
			}
		}
	}()
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, p.stderr.String())
	}
	if n := p.stdout.Len(); n > 256<<10 {
		t.Errorf("--json result is %d bytes; the 100 MB output must be cut to a small observation", n)
	}
	res := p.result()
	obs := res.Trace.Steps[0].Observation
	if !regexp.MustCompile(`\[\.\.\. lines? [\d-]+ cut \(\d+ bytes, about \d+ tokens\)[^\]]* \.\.\.\]`).MatchString(obs) {
		t.Errorf("observation has no cut marker; %d bytes: %.300s", len(obs), obs)
	}
	if len(obs) > 64<<10 {
		t.Errorf("observation is %d bytes", len(obs))
	}
	const limitMB = 200
	maxRSS := p.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	t.Logf("peak RSS: tact sampled VmHWM %d KiB; rusage maxrss (tact and children) %d KiB", hwmKB.Load(), maxRSS)
	if maxRSS > limitMB<<10 || hwmKB.Load() > limitMB<<10 {
		t.Errorf("peak memory %d KiB (sampled %d KiB), want under %d MB", maxRSS, hwmKB.Load(), limitMB)
	}
}

// vmHWM reads a process's peak resident set size in KiB (0 if unreadable).
func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}

// --- 4. --timeout -----------------------------------------------------------

func TestE2ETimeoutKillsTheToolsGroup(t *testing.T) {
	c := newE2E(t)
	m := sleepMarker()
	killMarked(t, m)
	plan := c.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": fmt.Sprintf("sh -c 'sleep %s & sleep %s'", m, m)}),
		finalStep("done"),
	))
	start := time.Now()
	p := c.run(c.args("--yes", "--timeout", "1s", plan)...)
	code := p.wait(6 * time.Second)
	// Generous beside the 1 s timeout, far below the tool's 100 s.
	if el := p.exited.Sub(start); el > 20*time.Second {
		t.Errorf("tact took %s with --timeout 1s", el.Round(time.Millisecond))
	}
	if code != 7 {
		t.Errorf("exit %d, want 7 (timeout)\nstderr: %s", code, p.stderr.String())
	}
	c.assertTerminated("timeout")
	assertNoSurvivors(t, m, 10*time.Second)
}

// --- 5. signals -------------------------------------------------------------

// startLongTool starts tact on a plan whose first step runs command (with
// the marker in it) and waits until the tool's processes are running.
func startLongTool(t *testing.T, c *e2eCase, command, marker string, wantProcs int) *proc {
	t.Helper()
	plan := c.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": command}),
		finalStep("done"),
	))
	p := c.run(c.args("--yes", plan)...)
	if !waitFor(time.Minute, func() bool { return len(procsWith(marker)) >= wantProcs }) {
		t.Fatalf("the tool's processes did not start; stderr: %s", p.stderr.String())
	}
	return p
}

func TestE2ESignalDuringTool(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			c := newE2E(t)
			m := sleepMarker()
			killMarked(t, m)
			// sh plus two sleeps.
			p := startLongTool(t, c, fmt.Sprintf("sh -c 'sleep %s & sleep %s'", m, m), m, 3)
			sent := time.Now()
			p.signal(tc.sig)
			code := p.wait(5 * time.Second)
			// Generous for a busy machine, far below the tool's 100 s.
			if el := p.exited.Sub(sent); el > 10*time.Second {
				t.Errorf("tact exited %s after %v, want within 10s", el.Round(time.Millisecond), tc.sig)
			}
			if code != tc.want {
				t.Errorf("exit %d after %v, want %d\nstderr: %s", code, tc.sig, tc.want, p.stderr.String())
			}
			c.assertTerminated("cancelled")
			assertNoSurvivors(t, m, 10*time.Second)
		})
	}
}

func TestE2ESIGINTDuringSlowModelReply(t *testing.T) {
	c := newE2E(t)
	reply := `{"thought":"the answer needs no tools at all","tool":"final_answer","args":{"answer":"slow"}}`
	// The reply takes two minutes: an exit within 10 s is the signal's doing.
	entry, _ := json.Marshal(map[string]any{"kind": "action", "text": reply, "delay_ms": 120000})
	script := c.file("script.jsonl", string(entry)+"\n")
	p := c.run("run", "--no-plan", "--backend", "script", "--script", script,
		"--workspace", c.ws, "--trace", c.trace, "--policy", c.pol, "what is the answer?")
	// model_call is written as the call is made: the signal comes inside
	// the reply.
	if !waitFor(time.Minute, func() bool {
		data, _ := os.ReadFile(c.trace)
		return bytes.Contains(data, []byte(`"event":"model_call"`))
	}) {
		t.Fatalf("no model_call in the trace; stderr: %s", p.stderr.String())
	}
	sent := time.Now()
	p.signal(syscall.SIGINT)
	code := p.wait(5 * time.Second)
	if el := p.exited.Sub(sent); el > 10*time.Second {
		t.Errorf("tact exited %s after SIGINT, want within 10s", el.Round(time.Millisecond))
	}
	if code != 130 {
		t.Errorf("exit %d, want 130\nstderr: %s", code, p.stderr.String())
	}
	if strings.Contains(p.stdout.String(), "slow") {
		t.Errorf("the cancelled reply's answer was printed: %q", p.stdout.String())
	}
	c.assertTerminated("cancelled")
}

func TestE2EDoubleSIGINTExitsAtOnce(t *testing.T) {
	c := newE2E(t)
	m := sleepMarker()
	killMarked(t, m)
	// The tool ignores SIGTERM, so the first SIGINT's graceful stop has to
	// wait for the kill grace period; the second must not wait.
	p := startLongTool(t, c, fmt.Sprintf(`sh -c 'trap "" TERM; sleep %s; true'`, m), m, 2)
	p.signal(syscall.SIGINT)
	// Far enough apart that the kernel cannot merge them into one pending
	// signal, yet well inside the 500 ms kill grace of the first.
	time.Sleep(100 * time.Millisecond)
	sent := time.Now()
	p.signal(syscall.SIGINT)
	code := p.wait(5 * time.Second)
	// The graceful path would end at least 400 ms after the second signal.
	if el := p.exited.Sub(sent); el > 300*time.Millisecond {
		t.Errorf("tact exited %s after the second SIGINT, want at once", el.Round(time.Millisecond))
	}
	if code != 130 {
		t.Errorf("exit %d, want 130\nstderr: %s", code, p.stderr.String())
	}
	// "No child process outlives tact", even on the fast exit.
	var left []int
	if !waitFor(10*time.Second, func() bool { left = procsWith(m); return len(left) == 0 }) {
		t.Errorf("BUG: after a double SIGINT the tool's process group (ignoring SIGTERM) outlived tact: pids %v still run; "+
			"signalContext's second-SIGINT os.Exit(130) does not SIGKILL the running tools' groups first", left)
	}
}

// --- 6. redaction -----------------------------------------------------------

func TestE2EPlantedSecretNeverLeaks(t *testing.T) {
	const (
		apiKey   = "s3cr3t-planted-value-123"
		password = "hunter2hunter2"
		acct     = "acct-98765"
		acct2    = "acct-12345"
		acct3    = "acct-55555" // in a plan step's thought
	)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"json", []string{"--json"}},
		{"plain verbose", []string{"--verbose"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newE2E(t)
			c.env = append(c.env, "TACT_TEST_API_KEY="+apiKey, "MY_PASSWORD_X="+password)
			if err := os.WriteFile(filepath.Join(c.ws, "notes.txt"),
				[]byte("key: "+apiKey+"\npassword: "+password+"\naccount: "+acct+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			read := step("read_file", map[string]any{"path": "notes.txt"})
			read["thought"] = "read the notes of acct-55555"
			plan := c.file("plan.jsonl", planJSONL(t,
				read,
				// The child gets no secret env vars (allow-listed env), so
				// the command line itself carries the values.
				step("run_command", map[string]any{"command": "echo " + apiKey + " " + acct2}),
				step("write_file", map[string]any{"path": "copy.txt", "content": password + " " + acct}),
				finalStep(map[string]any{"$jq": `.steps[0].output + .steps[1].output`}),
			))
			args := append(c.args("--yes", "--redact", `acct-[0-9]+`), tc.flags...)
			p := c.run(append(args, plan)...)
			if code := p.wait(10 * time.Second); code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, p.stdout.String(), p.stderr.String())
			}
			trace, err := os.ReadFile(c.trace)
			if err != nil {
				t.Fatal(err)
			}
			for _, where := range []struct {
				name string
				text string
			}{{"stdout", p.stdout.String()}, {"stderr", p.stderr.String()}, {"trace", string(trace)}} {
				for _, secret := range []string{apiKey, password, acct, acct2, acct3} {
					if i := strings.Index(where.text, secret); i >= 0 {
						lo, hi := max(0, i-120), min(len(where.text), i+len(secret)+40)
						t.Errorf("BUG (redaction): %s contains the secret %q: ...%s...", where.name, secret, where.text[lo:hi])
					}
				}
			}
			if !strings.Contains(p.stdout.String(), "[REDACTED]") {
				t.Errorf("stdout has no [REDACTED]: %s", p.stdout.String())
			}
			if !strings.Contains(string(trace), "[REDACTED]") {
				t.Errorf("trace has no [REDACTED]")
			}
			// The tools themselves work on the real values.
			if b, _ := os.ReadFile(filepath.Join(c.ws, "copy.txt")); string(b) != password+" "+acct {
				t.Errorf("copy.txt = %q: redaction must not change what tools do", b)
			}
		})
	}
}
