package main

// tact chat on a pseudo-terminal, as a person uses it: the built binary
// with the terminal as its stdin, stdout, stderr and controlling terminal,
// so Ctrl-C typed there reaches it as the terminal driver's SIGINT during
// a turn and as a key at the prompt. The script backend's delays keep a
// turn running long enough to be seen and interrupted; its expect and
// expect_not check what the model was shown.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// chatTerm is a tact chat on a pseudo-terminal.
type chatTerm struct {
	t        *testing.T
	c        *e2eCase
	p        *proc
	ptmx     *os.File
	mu       sync.Mutex
	screen   bytes.Buffer
	mark     int // expect looks from here on
	readDone chan struct{}
}

// script renders script-backend entries, one JSON object a line.
func script(t *testing.T, entries ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, e := range entries {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// reply is an action reply of the script backend.
func reply(tool string, args map[string]any, extra ...any) map[string]any {
	text, _ := json.Marshal(map[string]any{"thought": "the next step is " + tool, "tool": tool, "args": args})
	e := map[string]any{"kind": "action", "text": string(text)}
	for i := 0; i+1 < len(extra); i += 2 {
		e[extra[i].(string)] = extra[i+1]
	}
	return e
}

func answer(text string, extra ...any) map[string]any {
	return reply("final_answer", map[string]any{"answer": text}, extra...)
}

// startChat runs tact chat (free ReAct on the script backend, no colour)
// on a fresh pseudo-terminal.
func startChat(t *testing.T, c *e2eCase, replies string, flags ...string) *chatTerm {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 160}); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"chat", "--workspace", c.ws, "--trace", c.trace, "--policy", c.pol,
		"--script", c.file("replies.jsonl", replies), "--no-plan"}, flags...)
	p := &proc{t: t, done: make(chan struct{})}
	p.cmd = exec.Command(c.bin, args...)
	p.cmd.Env = append(append([]string(nil), c.env...), "XDG_STATE_HOME="+filepath.Join(c.dir, "state"), "TERM=xterm", "NO_COLOR=1")
	p.cmd.Dir = c.dir
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, tty, tty
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start tact: %v", err)
	}
	tty.Close() // only tact holds the terminal now
	go func() {
		_ = p.cmd.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	ct := &chatTerm{t: t, c: c, p: p, ptmx: ptmx, readDone: make(chan struct{})}
	go func() {
		defer close(ct.readDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			ct.mu.Lock()
			ct.screen.Write(buf[:n])
			ct.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return ct
}

func (ct *chatTerm) shown() string {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.screen.String()
}

// expect waits until the terminal shows s after the last thing expected,
// and moves past it.
func (ct *chatTerm) expect(s string) {
	ct.t.Helper()
	var at int
	if !waitFor(time.Minute, func() bool {
		at = strings.Index(ct.shown()[ct.mark:], s)
		return at >= 0
	}) {
		all := ct.shown()
		ct.t.Fatalf("the terminal did not show %q; it showed after the last match:\n%s\nthe whole screen (last 3000 bytes): %q", s, all[ct.mark:], all[max(0, len(all)-3000):])
	}
	ct.mark += at + len(s)
}

// since is what the terminal showed after the last thing expected.
func (ct *chatTerm) since() string { return ct.shown()[ct.mark:] }

func (ct *chatTerm) send(s string) {
	ct.t.Helper()
	if _, err := ct.ptmx.Write([]byte(s)); err != nil {
		ct.t.Fatalf("type %q: %v", s, err)
	}
}

// prompt waits for the prompt.
func (ct *chatTerm) prompt() { ct.t.Helper(); ct.expect("tact> ") }

// exit waits for tact to end and returns its exit code.
func (ct *chatTerm) exit() int {
	ct.t.Helper()
	code := ct.p.wait(5 * time.Second)
	select {
	case <-ct.readDone:
	case <-time.After(time.Minute):
	}
	return code
}

// field reads one field of each trace event named name.
func (c *e2eCase) field(name, field string) []any {
	var out []any
	for _, ev := range c.events() {
		if ev["event"] == name {
			out = append(out, ev[field])
		}
	}
	return out
}

func (c *e2eCase) wsFile(name, content string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.ws, name), []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// A turn with an action and an answer, a follow-up whose prompt holds the
// first turn, /tools, /clear, Ctrl-D, and the history file.
func TestE2EChatSession(t *testing.T) {
	c := newE2E(t)
	c.wsFile("a.txt", "ay\n")
	c.wsFile("b.txt", "bee\n")
	ct := startChat(t, c, script(t,
		reply("list_files", map[string]any{"path": "."}, "delay_ms", 400),
		answer("a.txt and b.txt"),
		reply("read_file", map[string]any{"path": "b.txt"},
			"expect", []string{"Earlier turn 1 of this conversation", "Query: list the files", "a.txt", "Answer: a.txt and b.txt", "Query: now open the second one"}),
		answer("b.txt says bee"),
		answer("nothing was asked", "expect_not", []string{"Earlier turn", "a.txt and b.txt"}),
		answer("two lines read", "expect", []string{"Query: line one\nline two", "Earlier turn 1"}),
	))
	ct.expect("/help for commands")
	ct.prompt()

	// The first turn: a spinner while the model thinks, the action as one
	// line as it starts, its observation, the answer, one line of usage.
	ct.send("list the files\r")
	ct.expect("Ctrl-C to interrupt")
	ct.expect(`● list_files(path=".")`)
	ct.expect("⎿ a.txt")
	ct.expect("a.txt and b.txt\r\n")
	ct.expect("tokens")
	ct.expect("1 action")
	ct.prompt()

	// A follow-up: the script fails the call unless the prompt holds the
	// first turn (expect).
	ct.send("now open the second one\r")
	ct.expect(`● read_file(path="b.txt")`)
	ct.expect("bee")
	ct.expect("b.txt says bee")
	ct.prompt()

	ct.send("/tools\r")
	ct.expect("list_files")
	ct.expect("read_file")
	ct.expect("write_file")
	ct.prompt()

	// /clear: the next turn's prompt holds no earlier turn (expect_not).
	ct.send("/clear\r")
	ct.expect("new conversation")
	ct.prompt()
	ct.send("what did I ask before?\r")
	ct.expect("nothing was asked")
	ct.prompt()

	// A pasted block of two lines is one query (bracketed paste).
	ct.send("\x1b[200~line one\nline two\x1b[201~\r")
	ct.expect("two lines read")
	ct.prompt()

	// Ctrl-D on the empty prompt ends the session with 0.
	ct.send("\x04")
	if code := ct.exit(); code != 0 {
		t.Fatalf("exit code %d after Ctrl-D, want 0; terminal showed:\n%s", code, ct.shown())
	}
	if got := fmt.Sprint(c.field("run_start", "turn")); got != "[1 2 1 2]" {
		t.Errorf("turns %s, want [1 2 1 2] (a new conversation after /clear)", got)
	}
	if got := fmt.Sprint(c.field("termination", "reason")); got != "[success success success success]" {
		t.Errorf("turns ended %s; terminal showed:\n%s", got, ct.shown())
	}
	if strings.Contains(ct.shown(), "\033[3") || strings.Contains(ct.shown(), "\033[1m") {
		t.Errorf("colour with NO_COLOR set")
	}

	// The history file: the queries and commands typed, 0600.
	hist := filepath.Join(c.dir, "state", "tact", "history")
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	if want := "list the files\nnow open the second one\n/tools\n/clear\nwhat did I ask before?\nline one\\nline two\n"; string(data) != want {
		t.Errorf("history file:\n%s\nwant:\n%s", data, want)
	}
	if fi, _ := os.Stat(hist); fi.Mode().Perm() != 0o600 {
		t.Errorf("history mode %v, want 0600", fi.Mode().Perm())
	}

	// The next session recalls the history with the up key.
	ct2 := startChat(t, c, script(t, answer("again")))
	ct2.prompt()
	ct2.send("\x1b[A")
	ct2.expect("line one line two")
	ct2.send("\x1b[A\x1b[A\x1b[A\x1b[A\x1b[A\r")
	ct2.expect("again")
	ct2.prompt()
	ct2.send("/exit\r")
	if code := ct2.exit(); code != 0 {
		t.Fatalf("exit code %d after /exit, want 0", code)
	}
	if data, _ := os.ReadFile(hist); !strings.HasSuffix(string(data), "line one\\nline two\nlist the files\n/exit\n") {
		t.Errorf("history after a recalled query:\n%s", data)
	}
}

// Ctrl-C during a turn ends the turn (model call or tool) and returns to
// the prompt within a second; the turn is recorded as cancelled and the
// next turn's model is told so; Ctrl-C on the empty prompt ends tact with 0.
func TestE2EChatInterrupt(t *testing.T) {
	c := newE2E(t)
	marker := sleepMarker()
	killMarked(t, marker)
	ct := startChat(t, c, script(t,
		reply("list_files", map[string]any{"path": "."}, "delay_ms", 20000),
		answer("it was interrupted", "expect", []string{"interrupted by the user before it finished"}),
		reply("run_command", map[string]any{"command": "sleep " + marker}),
		answer("never reached"),
	), "--yes")
	ct.prompt()

	// During a slow model call.
	ct.send("a slow question\r")
	ct.expect("thinking")
	sent := time.Now()
	ct.send("\x03")
	ct.expect("interrupted")
	ct.prompt()
	// Generous for a busy machine, far below the call's 20 s.
	if d := time.Since(sent); d > 10*time.Second {
		t.Errorf("back at the prompt %v after Ctrl-C, want at once", d)
	}
	ct.send("did that finish?\r")
	ct.expect("it was interrupted")
	ct.prompt()

	// During a tool: its process group ends with the turn.
	ct.send("sleep a while\r")
	ct.expect("● run_command")
	if !waitFor(time.Minute, func() bool { return len(procsWith(marker)) > 0 }) {
		t.Fatalf("the command did not start; terminal showed:\n%s", ct.since())
	}
	sent = time.Now()
	ct.send("\x03")
	ct.expect("interrupted")
	ct.prompt()
	if d := time.Since(sent); d > 10*time.Second {
		t.Errorf("back at the prompt %v after Ctrl-C during a tool, want at once", d)
	}
	assertNoSurvivors(t, marker, 10*time.Second)

	// Ctrl-C with a line typed drops the line; on the empty prompt it exits 0.
	ct.send("half a quest\x03")
	ct.prompt()
	ct.send("\x03")
	if code := ct.exit(); code != 0 {
		t.Fatalf("exit code %d after Ctrl-C on the empty prompt, want 0; terminal showed:\n%s", code, ct.shown())
	}
	if got := fmt.Sprint(c.field("termination", "reason")); got != "[cancelled success cancelled]" {
		t.Errorf("turns ended %s, want [cancelled success cancelled]", got)
	}
}

// A second Ctrl-C within a second during a turn exits at once: here the
// turn is still ending a command that ignores SIGTERM (it would take the
// kill grace period), and the second Ctrl-C does not wait for it.
func TestE2EChatSecondCtrlCExits(t *testing.T) {
	c := newE2E(t)
	marker := sleepMarker()
	killMarked(t, marker)
	ct := startChat(t, c, script(t,
		reply("run_command", map[string]any{"command": `sh -c 'trap "" TERM; sleep ` + marker + `'`}),
	), "--yes")
	ct.prompt()
	ct.send("a stubborn command\r")
	ct.expect("● run_command")
	// sleep runs once sh has set the trap.
	if !waitFor(time.Minute, func() bool { return sleepRunning(marker) }) {
		t.Fatalf("the command did not start; terminal showed:\n%s", ct.since())
	}
	ct.send("\x03")
	// Two Ctrl-C within the second that makes them a double one, far
	// enough apart to be two signals (the kernel merges a pending one).
	time.Sleep(200 * time.Millisecond)
	sent := time.Now()
	ct.send("\x03")
	if code := ct.exit(); code != 130 {
		t.Fatalf("exit code %d after two Ctrl-C, want 130; terminal showed:\n%s", code, ct.shown())
	}
	if d := ct.p.exited.Sub(sent); d > time.Second {
		t.Errorf("exited %v after the second Ctrl-C", d)
	}
	assertNoSurvivors(t, marker, 10*time.Second)
}

// The approval prompt, answered y then n, shares the terminal with the
// line editor and starts on a line of its own.
func TestE2EChatApproval(t *testing.T) {
	c := newE2E(t)
	ct := startChat(t, c, script(t,
		reply("write_file", map[string]any{"path": "yes.txt", "content": "y"}, "delay_ms", 300),
		answer("wrote yes.txt"),
		reply("write_file", map[string]any{"path": "no.txt", "content": "n"}),
		answer("no.txt was not written", "expect", []string{"denied by user"}),
	))
	ct.prompt()
	ct.send("write yes.txt\r")
	ct.expect(`● write_file(`)
	ct.expect("[n]o: ")
	assertOwnLine(t, ct.shown(), "write_file (write)")
	ct.send("y\r")
	ct.expect("wrote yes.txt")
	ct.prompt()
	if b, err := os.ReadFile(filepath.Join(c.ws, "yes.txt")); err != nil || string(b) != "y" {
		t.Errorf("yes.txt = %q, %v; want written after y", b, err)
	}

	ct.send("write no.txt\r")
	ct.expect("[n]o: ")
	ct.send("n\r")
	ct.expect("✗ denied by user")
	ct.expect("no.txt was not written")
	ct.prompt()
	if _, err := os.Stat(filepath.Join(c.ws, "no.txt")); !os.IsNotExist(err) {
		t.Errorf("no.txt written after n (stat: %v)", err)
	}
	ct.send("/exit\r")
	if code := ct.exit(); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if got := fmt.Sprint(c.field("step", "step")); !strings.Contains(got, "approved") || !strings.Contains(got, "rejected") {
		t.Errorf("steps: %s", got)
	}
}

// assertOwnLine checks the first s on screen starts a line: after a
// newline or a cleared line, never after a status line's text.
func assertOwnLine(t *testing.T, screen, s string) {
	t.Helper()
	i := strings.Index(screen, s)
	if i < 0 {
		t.Fatalf("%q not shown", s)
	}
	before := screen[:i]
	if !strings.HasSuffix(before, "\n") && !strings.HasSuffix(before, "\r\033[K") {
		tail := before[max(0, len(before)-60):]
		t.Errorf("%q starts after %q, not on a line of its own", s, tail)
	}
}

// tact run on a terminal draws each action and its observation on stderr,
// and clears its status line before the approval block (it once started
// on it: "step 1: thinkingwrite_file (write)").
func TestE2ERunRendererAndApproval(t *testing.T) {
	c := newE2E(t)
	c.wsFile("a.txt", "ay\n")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	replies := c.file("replies.jsonl", script(t,
		reply("read_file", map[string]any{"path": "a.txt"}, "delay_ms", 300),
		reply("write_file", map[string]any{"path": "out.txt", "content": "ay"}, "delay_ms", 300),
		answer("copied"),
	))
	p := &proc{t: t, done: make(chan struct{})}
	p.cmd = exec.Command(c.bin, "run", "--no-plan", "--workspace", c.ws, "--policy", c.pol, "--script", replies, "copy a.txt to out.txt")
	p.cmd.Env = append(append([]string(nil), c.env...), "TERM=xterm", "NO_COLOR=1")
	p.cmd.Stdin, p.cmd.Stderr = tty, tty
	p.cmd.Stdout = &p.stdout
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	ct := &chatTerm{t: t, c: c, p: p, ptmx: ptmx, readDone: make(chan struct{})}
	go func() {
		defer close(ct.readDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			ct.mu.Lock()
			ct.screen.Write(buf[:n])
			ct.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	ct.expect(`● read_file(path="a.txt")`)
	ct.expect("⎿ ay")
	ct.expect(`● write_file(`)
	ct.expect("[n]o: ")
	assertOwnLine(t, ct.shown(), "write_file (write)")
	ct.send("y\n")
	ct.expect("tokens")
	if code := ct.exit(); code != 0 {
		t.Fatalf("exit code %d; terminal showed:\n%s", code, ct.shown())
	}
	if got := p.stdout.String(); got != "copied\n" {
		t.Errorf("stdout %q, want only the answer", got)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, "out.txt")); string(b) != "ay" {
		t.Errorf("out.txt = %q", b)
	}
}

// Piped, a signal while the session waits for its next line ends it at
// once with the signal's code (a reader blocked on stdin does not hold it).
func TestE2EChatPipedSignalWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		c := newE2E(t)
		cmd := exec.Command(c.bin, "chat", "--workspace", c.ws, "--no-plan", "--script", c.file("replies.jsonl", script(t, answer("hi"))))
		cmd.Env = c.env
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &syncBuf{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// /tools answers on stderr: the session is up and waiting.
		io.WriteString(stdin, "/tools\n")
		if !waitFor(time.Minute, func() bool { return strings.Contains(stderr.String(), "read_file") }) {
			cmd.Process.Kill()
			t.Fatalf("no /tools listing:\n%s", stderr.String())
		}
		start := time.Now()
		cmd.Process.Signal(tc.sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("%v: still waiting for input a minute later", tc.sig)
		}
		// Generous for a busy machine; a blocked reader would wait forever.
		if got := cmd.ProcessState.ExitCode(); got != tc.code || time.Since(start) > 10*time.Second {
			t.Fatalf("%v: exit %d after %s, want %d at once\n%s", tc.sig, got, time.Since(start), tc.code, stderr.String())
		}
		stdin.Close()
	}
}
