package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/testwait"
)

// Issue 39's runs that pause, end to end with this test binary as tact:
// answered after SIGKILL from a new process, two answers racing, a batch
// whose lines pause, each answered on its own.

// tact runs tact ARGS in c and returns its exit code, stdout and stderr.
func (c *e2eCase) tact(args ...string) (int, string, string) {
	c.t.Helper()
	p := c.run(args...)
	code := p.wait(time.Minute)
	return code, p.stdout.String(), p.stderr.String()
}

// pauseDoc is the JSON object a paused run prints.
type pauseDoc struct {
	RunID    string `json:"run_id"`
	Status   string `json:"status"`
	Kind     string `json:"kind"`
	Question string `json:"question"`
	Answer   string `json:"answer_with"`
}

// countLines is how many lines path has (a side-effect counter).
func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// logRecords are tact log --json's records in c, newest first.
func logRecords(t *testing.T, c *e2eCase, flags ...string) []map[string]any {
	t.Helper()
	code, out, errOut := c.tact(append([]string{"log", "--json", "-n", "100"}, flags...)...)
	if code != 0 {
		t.Fatalf("tact log: exit %d: %s", code, errOut)
	}
	var recs []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("tact log --json: %v", err)
		}
		recs = append(recs, r)
	}
	return recs
}

const counterCmd = `sh -c 'echo x >> counter.txt'`

// TestE2EAnswerAfterSIGKILL: a run pauses (ask_user, after a side effect)
// and is killed with SIGKILL as soon as its pause JSON is on stdout; a new
// process with the same state directory answers it: the run finishes, the
// model's next prompt holds the answer, the side effect ran once, and the
// answering run's record names the paused one.
func TestE2EAnswerAfterSIGKILL(t *testing.T) {
	c := newFilesCase(t)
	before := c.file("before.jsonl", script(t,
		reply("run_command", map[string]any{"command": counterCmd}),
		reply("ask_user", map[string]any{"question": "Which config is live?", "options": []any{"the red one", "the blue one"}})))
	after := c.file("after.jsonl", script(t, answer("blue is live", "expect", []any{"the blue one"})))
	cmd := exec.Command(c.bin, "run", "--workspace", c.ws, "--policy", c.pol, "--no-plan", "--yes", "--script", before, "which config is live?")
	cmd.Env, cmd.Dir = c.env, c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no terminal: the run pauses
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	// SIGKILL at once: the process may be recording the run's end, or
	// have exited already; either way the pause is in the history.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if err != nil {
		t.Fatalf("reading the pause: %v (got %q)", err, line)
	}
	var doc pauseDoc
	if err := json.Unmarshal([]byte(line), &doc); err != nil || doc.Status != "needs_input" || doc.Kind != "question" {
		t.Fatalf("pause JSON %q: %v", line, err)
	}
	recs := logRecords(t, c)
	if len(recs) != 1 || (recs[0]["reason"] != "needs_input" && recs[0]["reason"] != "interrupted") {
		t.Fatalf("after SIGKILL the history holds %v", recs)
	}
	t.Logf("after SIGKILL the paused run's record reads %v", recs[0]["reason"])
	// Killed after its pause, it still waits: --resume does not go on
	// without the answer.
	if code, _, errOut := c.tact("run", "--resume", doc.RunID, "--script", after); code != 2 || !strings.Contains(errOut, "waits for an answer: tact answer "+doc.RunID) {
		t.Fatalf("--resume of the killed paused run: exit %d, %q", code, errOut)
	}

	code, out, errOut := c.tact("answer", doc.RunID, "the blue one", "--yes", "--script", after)
	if code != 0 || strings.TrimSpace(out) != "blue is live" {
		t.Fatalf("tact answer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := countLines(t, filepath.Join(c.ws, "counter.txt")); n != 1 {
		t.Errorf("the side effect ran %d times, want once", n)
	}
	recs = logRecords(t, c)
	if len(recs) != 2 || recs[0]["resumed_from"] != doc.RunID || recs[0]["reason"] != "success" || recs[0]["command"] != "answer" {
		t.Errorf("records %v, want the answering run linked to %s", recs, doc.RunID)
	}
	if code, _, errOut := c.tact("answer", doc.RunID, "the red one", "--script", after); code != 2 || !strings.Contains(errOut, "was answered already") {
		t.Errorf("answering again: exit %d, %q", code, errOut)
	}
}

// TestE2EAnswerRace: while one tact answer goes on with a paused run (its
// next step waits for a file), a second tact answer of the same run gets
// one line and exit 2, and does not continue it; after the first ends, a
// third is told the run was answered already.
func TestE2EAnswerRace(t *testing.T) {
	c := newFilesCase(t)
	ask := c.file("ask.jsonl", script(t, reply("ask_user", map[string]any{"question": "Go on?"})))
	slow := c.file("slow.jsonl", script(t,
		reply("run_command", map[string]any{"command": `sh -c 'echo x >> counter.txt; touch started; while [ ! -e go ]; do sleep 0.05; done'`}),
		answer("first answer done")))
	other := c.file("other.jsonl", script(t,
		reply("run_command", map[string]any{"command": counterCmd}),
		answer("second answer done")))
	code, out, errOut := c.tact("run", "--workspace", c.ws, "--no-plan", "--script", ask, "go on?")
	if code != 12 {
		t.Fatalf("tact run: exit %d, %q", code, errOut)
	}
	var doc pauseDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	first := c.run("answer", doc.RunID, "yes", "--yes", "--policy", c.pol, "--script", slow)
	if !testwait.Until(time.Minute, func() bool { _, err := os.Stat(filepath.Join(c.ws, "started")); return err == nil }) {
		t.Fatal("the first answer's run never started its step")
	}
	code, out, errOut = c.tact("answer", doc.RunID, "yes", "--yes", "--policy", c.pol, "--script", other)
	wantLine := regexp.MustCompile(`^tact: run [0-9a-f]+ is being answered now by another tact answer or request; tact log --reason needs_input lists what still waits\n$`)
	if code != 2 || out != "" || !wantLine.MatchString(errOut) {
		t.Errorf("racing answer: exit %d, stdout %q, stderr %q; want one line, exit 2", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(c.ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(time.Minute); code != 0 || strings.TrimSpace(first.stdout.String()) != "first answer done" {
		t.Fatalf("first answer: exit %d, %q, %q", code, first.stdout.String(), first.stderr.String())
	}
	if n := countLines(t, filepath.Join(c.ws, "counter.txt")); n != 1 {
		t.Errorf("the run went on %d times, want once", n)
	}
	code, _, errOut = c.tact("answer", doc.RunID, "yes", "--script", other)
	if code != 2 || !strings.Contains(errOut, "was answered already") {
		t.Errorf("answer after the first ended: exit %d, %q", code, errOut)
	}
}

// TestE2EBatchPausesAnswered: a batch of 8 queries where 3 runs pause:
// 5 results, 3 needs_input lines with their questions, exit 9; each
// paused run is answered on its own (its own process and answer) and
// finishes; nothing waits afterwards.
func TestE2EBatchPausesAnswered(t *testing.T) {
	c := newFilesCase(t)
	pauses := map[int]bool{2: true, 4: true, 7: true}
	var entries []map[string]any
	var queries strings.Builder
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&queries, "query %d\n", i)
		if pauses[i] {
			entries = append(entries, reply("ask_user", map[string]any{"question": fmt.Sprintf("Which one for query %d?", i)}))
		} else {
			entries = append(entries, answer(fmt.Sprintf("answer %d", i)))
		}
	}
	batch := c.file("batch.jsonl", script(t, entries...))
	p := c.start(strings.NewReader(queries.String()), nil, "batch", "--workspace", c.ws, "--parallel", "1", "--no-plan", "--script", batch, "-")
	if code := p.wait(time.Minute); code != 9 {
		t.Fatalf("tact batch: exit %d, want 9: %s", code, p.stderr.String())
	}
	var results, waiting int
	paused := map[int]string{} // line: run id
	dec := json.NewDecoder(strings.NewReader(p.stdout.String()))
	for dec.More() {
		var r struct {
			Line     int    `json:"line"`
			RunID    string `json:"run_id"`
			Reason   string `json:"termination_reason"`
			Question *struct {
				Question string `json:"question"`
			} `json:"question"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("batch output: %v\n%s", err, p.stdout.String())
		}
		switch r.Reason {
		case "success":
			results++
		case "needs_input":
			waiting++
			if !pauses[r.Line] || r.Question == nil || r.Question.Question != fmt.Sprintf("Which one for query %d?", r.Line) {
				t.Errorf("line %d paused with %+v", r.Line, r.Question)
			}
			paused[r.Line] = r.RunID
		default:
			t.Errorf("line %d ended %s", r.Line, r.Reason)
		}
	}
	if results != 5 || waiting != 3 {
		t.Fatalf("%d results and %d needs_input, want 5 and 3", results, waiting)
	}
	if recs := logRecords(t, c, "--reason", "needs_input"); len(recs) != 3 {
		t.Errorf("tact log --reason needs_input lists %d runs, want 3", len(recs))
	}
	// Each on its own, in another order than the batch's.
	for _, line := range []int{7, 2, 4} {
		text := fmt.Sprintf("the one for %d", line)
		s := c.file(fmt.Sprintf("answer%d.jsonl", line), script(t, answer(fmt.Sprintf("done %d", line), "expect", []any{text})))
		code, out, errOut := c.tact("answer", paused[line], text, "--script", s)
		if code != 0 || strings.TrimSpace(out) != fmt.Sprintf("done %d", line) {
			t.Errorf("answering line %d: exit %d, %q, %q", line, code, out, errOut)
		}
	}
	if recs := logRecords(t, c, "--reason", "needs_input"); len(recs) != 0 {
		t.Errorf("%d runs still wait after every answer", len(recs))
	}
}
