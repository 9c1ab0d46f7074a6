package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/history"
)

// histEnv runs the test binary as tact (testscript.Main's convention) in
// a workspace of its own, with a run history of its own.
type histEnv struct {
	t                   *testing.T
	dir, tact, ws, home string
	extraEnv            []string
}

func newHistEnv(t *testing.T) *histEnv {
	t.Helper()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &histEnv{t: t, dir: dir, tact: filepath.Join(dir, "bin", "tact"), ws: filepath.Join(dir, "ws"), home: filepath.Join(dir, "home")}
	for _, d := range []string{filepath.Dir(h.tact), h.ws, h.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, h.tact); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *histEnv) statePath() string {
	return filepath.Join(h.home, ".local", "state", "tact", "runs.db")
}

func (h *histEnv) write(name, content string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *histEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(h.tact, args...)
	cmd.Dir = h.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), runtimeEnv(), "HOME=" + h.home, "TACT_NO_INPUT=1", "TACT_WORKSPACE=" + h.ws}, h.extraEnv...)
	return cmd
}

// run runs tact to its end: stdout, stderr and the exit code.
func (h *histEnv) run(stdin string, args ...string) (string, string, int) {
	h.t.Helper()
	cmd := h.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// store opens the history the runs wrote.
func (h *histEnv) store() *history.Store {
	h.t.Helper()
	st, err := history.Open(h.statePath(), history.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { st.Close() })
	return st
}

func (h *histEnv) runs(f history.Filter) []history.Record {
	h.t.Helper()
	f.Limit = -1
	recs, err := h.store().List(context.Background(), f)
	if err != nil {
		h.t.Fatal(err)
	}
	return recs
}

const answerScript = `{"kind":"action","text":"{\"thought\":\"the answer is known already\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"forty-two\"}}"}` + "\n"

// Every command that runs queries keeps a record of each: run, exec, each
// batch query, each chat turn.
func TestHistoryRecordsEveryCommand(t *testing.T) {
	h := newHistEnv(t)
	script := h.write("answer.jsonl", strings.Repeat(answerScript, 4))
	plan := h.write("plan.jsonl", `{"type":"plan","query":"say hi"}
{"tool":"final_answer","args":{"answer":"hi & <bye>"}}
`)
	for _, tc := range []struct {
		stdin string
		args  []string
		want  map[string]int // command -> records added
	}{
		{"", []string{"run", "--script", script, "--no-plan", "what is the answer?"}, map[string]int{"run": 1}},
		{"", []string{"exec", plan}, map[string]int{"exec": 1}},
		{"first?\nsecond?\n", []string{"batch", "--script", script, "--no-plan", "-"}, map[string]int{"batch": 2}},
		{"one?\ntwo?\n", []string{"chat", "--script", script, "--no-plan"}, map[string]int{"chat": 2}},
		{"", []string{"run", "--no-history", "--script", script, "--no-plan", "not kept"}, nil},
	} {
		before := map[string]int{}
		if _, err := os.Stat(h.statePath()); err == nil {
			for _, r := range h.runs(history.Filter{}) {
				before[r.Command]++
			}
		}
		if _, stderr, code := h.run(tc.stdin, tc.args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		after := map[string]int{}
		for _, r := range h.runs(history.Filter{}) {
			after[r.Command]++
			if !r.Ended || r.Reason != "success" || r.Workspace != h.ws || r.Result == "" {
				t.Errorf("%v: record %+v", tc.args, r)
			}
		}
		for cmd, n := range tc.want {
			if after[cmd]-before[cmd] != n {
				t.Errorf("%v: %d %s records added, want %d", tc.args, after[cmd]-before[cmd], cmd, n)
			}
		}
		if tc.want == nil && len(after) != len(before) {
			t.Errorf("--no-history: records %v -> %v", before, after)
		}
	}
	// The record's result is the --json document.
	out, _, _ := h.run("", "exec", "--json", plan)
	var printed, stored map[string]any
	if err := json.Unmarshal([]byte(out), &printed); err != nil {
		t.Fatal(err)
	}
	rec, err := h.store().Get(context.Background(), history.LastRun)
	if err != nil || json.Unmarshal([]byte(rec.Result), &stored) != nil {
		t.Fatalf("last record: %v", err)
	}
	if printed["run_id"] != stored["run_id"] || printed["final_answer"] != stored["final_answer"] || rec.ID != printed["run_id"] {
		t.Errorf("stored result %v, printed %v", stored, printed)
	}
	if rec.Result != strings.TrimSuffix(out, "\n") {
		t.Errorf("the stored result differs in bytes from what --json printed:\n%s\n%s", rec.Result, out)
	}
}

// sixSteps is a plan of six commands, each appending its number to
// ran.log; step 4 first waits for the test (a FIFO) unless go exists.
const sixSteps = `{"type":"plan","query":"six steps"}
{"tool":"run_command","args":{"command":"sh -c 'echo 1 >> ran.log'"}}
{"tool":"run_command","args":{"command":"sh -c 'echo 2 >> ran.log'"}}
{"tool":"run_command","args":{"command":"sh -c 'echo 3 >> ran.log'"}}
{"tool":"run_command","args":{"command":"sh -c 'echo $$ > pid4; [ -e go ] || echo at4 > fifo; [ -e go ] || sleep 60; echo 4 >> ran.log'"}}
{"tool":"run_command","args":{"command":"sh -c 'echo 5 >> ran.log'"}}
{"tool":"run_command","args":{"command":"sh -c 'echo 6 >> ran.log'"}}
{"tool":"final_answer","args":{"answer":{"$jq":"[.steps[].exit_code] | length | tostring"}}}
`

// A run cut while step 4 runs (SIGKILL, Ctrl-C, --timeout) keeps steps 1-3;
// --resume runs 4-6 and not 1-3 again.
func TestHistoryResumeAfterCut(t *testing.T) {
	for _, how := range []string{"SIGKILL", "SIGINT", "timeout"} {
		t.Run(how, func(t *testing.T) {
			h := newHistEnv(t)
			plan := h.write("six.jsonl", sixSteps)
			fifo := filepath.Join(h.ws, "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"exec", "--yes", plan}
			if how == "timeout" {
				// Step 4 blocks on the FIFO nobody reads: the run's own
				// deadline cuts it (or an earlier step, on a slow machine).
				args = []string{"exec", "--yes", "--timeout", "8s", plan}
			}
			cmd := h.command(args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if how != "timeout" {
				// Step 4 has started once its command writes to the FIFO.
				if _, err := os.ReadFile(fifo); err != nil {
					t.Fatal(err)
				}
				sig := os.Kill
				if how == "SIGINT" {
					sig = os.Interrupt
				}
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			_ = cmd.Wait()
			runs := h.runs(history.Filter{})
			if len(runs) != 1 {
				t.Fatalf("%d records, want 1 (stderr: %s)", len(runs), stderr.String())
			}
			steps, err := h.store().Steps(context.Background(), runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) < 3 && how != "timeout" {
				t.Fatalf("%d steps recorded before the cut, want at least 3 (reason %s)", len(steps), runs[0].Reason)
			}
			if runs[0].Reason == "success" {
				t.Fatalf("the cut run reads as %s", runs[0].Reason)
			}
			waitShellGone(t, filepath.Join(h.ws, "pid4"))
			h.write("ws/go", "")
			out, errOut, code := h.run("", "exec", "--yes", "--resume", runs[0].ID[:6])
			if code != 0 {
				t.Fatalf("resume: exit %d: %s", code, errOut)
			}
			log, _ := os.ReadFile(filepath.Join(h.ws, "ran.log"))
			if string(log) != "1\n2\n3\n4\n5\n6\n" {
				t.Errorf("ran.log after resuming:\n%s", log)
			}
			if strings.TrimSpace(out) != "6" {
				t.Errorf("answer %q: the resumed run's $jq sees %s tool runs", out, strings.TrimSpace(out))
			}
			last, err := h.store().Get(context.Background(), history.LastRun)
			if err != nil || last.ResumedFrom != runs[0].ID || last.Reason != "success" {
				t.Errorf("resumed record %+v (%v)", last.Run, err)
			}
			// A run that succeeded is not resumed.
			if _, errOut, code := h.run("", "exec", "--resume", "last"); code != 2 || !strings.Contains(errOut, "succeeded") {
				t.Errorf("resuming a success: exit %d: %s", code, errOut)
			}
		})
	}
}

// --continue shows the earlier run to the model (the script backend checks
// its prompt) and records it as the new run's parent.
func TestHistoryContinue(t *testing.T) {
	h := newHistEnv(t)
	first := h.write("first.jsonl", `{"kind":"action","text":"{\"thought\":\"the config is known already\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"it is in app.conf\"}}"}`+"\n")
	follow := h.write("follow.jsonl", `{"kind":"action","expect":["Query: where is the config?","it is in app.conf","Query: and how big is it?"],"text":"{\"thought\":\"the earlier answer names it\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"small\"}}"}`+"\n")
	if _, errOut, code := h.run("", "run", "--script", first, "--no-plan", "where is the config?"); code != 0 {
		t.Fatalf("first: %d %s", code, errOut)
	}
	out, errOut, code := h.run("", "run", "-c", "--script", follow, "--no-plan", "and how big is it?")
	if code != 0 || strings.TrimSpace(out) != "small" {
		t.Fatalf("follow-up: exit %d, %q: %s", code, out, errOut)
	}
	runs := h.runs(history.Filter{})
	if len(runs) != 2 || runs[0].ParentID != runs[1].ID {
		t.Fatalf("records: %+v", runs)
	}
	// Without an earlier run in the workspace: exit 2.
	h2 := newHistEnv(t)
	if _, errOut, code := h2.run("", "run", "-c", "--script", follow, "--no-plan", "and?"); code != 2 {
		t.Errorf("--continue with no history: exit %d: %s", code, errOut)
	}
}

// No secret reaches the database file: neither a *_TOKEN variable's value
// nor a --redact match, though both are in the query, the plan, the
// arguments and the outputs.
func TestHistoryHoldsNoSecrets(t *testing.T) {
	h := newHistEnv(t)
	const token, other = "tok-7f3a9c1e5b", "PIN-48151623"
	h.extraEnv = []string{"DEPLOY_TOKEN=" + token, "TACT_REDACT=PIN-[0-9]+"}
	plan := h.write("leak.jsonl", fmt.Sprintf(`{"type":"plan","query":"print %s and %s"}
{"tool":"run_command","args":{"command":"echo %s %s"}}
{"tool":"write_file","args":{"path":"s.txt","content":"%s %s"}}
{"tool":"read_file","args":{"path":"s.txt"}}
{"tool":"final_answer","args":{"answer":{"$jq":".steps[0].output"}}}
`, token, other, token, other, token, other))
	if _, errOut, code := h.run("", "exec", "--yes", plan); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	h.store().Close() // checkpoints the WAL into the file
	files, _ := filepath.Glob(h.statePath() + "*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, secret := range []string{token, other} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %s", f, secret)
			}
		}
	}
	if len(files) == 0 {
		t.Fatal("no database written")
	}
}

// A store that cannot be used costs the run one warning, never the run.
func TestHistoryBrokenStore(t *testing.T) {
	plan := `{"type":"plan","query":"say hi"}` + "\n" + `{"tool":"final_answer","args":{"answer":"hi"}}` + "\n"
	for _, tc := range []struct {
		name  string
		setup func(h *histEnv)
	}{
		{"corrupt", func(h *histEnv) {
			os.MkdirAll(filepath.Dir(h.statePath()), 0o700)
			os.WriteFile(h.statePath(), bytes.Repeat([]byte("not a database "), 512), 0o600)
		}},
		{"newer schema", func(h *histEnv) {
			h.run("", "exec", h.write("p0.jsonl", plan))
			st := h.store()
			st.Close()
			b, _ := os.ReadFile(h.statePath())
			b[60], b[61], b[62], b[63] = 0, 0, 0, 99 // user_version 99
			os.WriteFile(h.statePath(), b, 0o600)
		}},
		{"read-only directory", func(h *histEnv) {
			os.MkdirAll(filepath.Dir(h.statePath()), 0o700)
			os.Chmod(filepath.Dir(h.statePath()), 0o500)
			h.t.Cleanup(func() { os.Chmod(filepath.Dir(h.statePath()), 0o700) })
		}},
		{"full disk", nil},
		{"unsafe directory", func(h *histEnv) {
			os.MkdirAll(filepath.Dir(h.statePath()), 0o777)
			os.Chmod(filepath.Dir(h.statePath()), 0o777)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistEnv(t)
			mount := map[string]struct {
				flags uintptr
				data  string
			}{"read-only directory": {syscall.MS_RDONLY, "mode=0700"}, "full disk": {0, "mode=0700,size=160k"}}
			if m, ok := mount[tc.name]; ok && os.Geteuid() == 0 {
				// root writes through 0500, and a full disk needs a small
				// file system: a tmpfs mounted there.
				dir := filepath.Dir(h.statePath())
				os.MkdirAll(dir, 0o700)
				if err := syscall.Mount("tmpfs", dir, "tmpfs", m.flags, m.data); err != nil {
					t.Skipf("cannot mount a tmpfs: %v", err)
				}
				t.Cleanup(func() { syscall.Unmount(dir, 0) })
			} else if tc.setup != nil {
				tc.setup(h)
			} else {
				t.Skip("needs root to mount a small file system")
			}
			p := h.write("p.jsonl", plan)
			if tc.name == "full disk" {
				// The schema fits in 160 KiB, a long run's steps do not.
				var big string
				for i := range 8 {
					big += fmt.Sprintf(`{"tool":"run_command","args":{"command":"seq %d"}}`+"\n", 3000+i)
				}
				p = h.write("p.jsonl", `{"type":"plan","query":"say hi"}`+"\n"+big+`{"tool":"final_answer","args":{"answer":"hi"}}`+"\n")
			}
			out, errOut, code := h.run("", "exec", "--yes", p)
			if code != 0 || strings.TrimSpace(out) != "hi" {
				t.Fatalf("exit %d, %q: %s", code, out, errOut)
			}
			if n := len(regexp.MustCompile(`(?m)^.*run history.*$`).FindAllString(errOut, -1)); n != 1 {
				t.Errorf("stderr has %d lines about the run history, want 1:\n%s", n, errOut)
			}
			// tact log says what is wrong with a database that is there, in
			// one line, exit 2; with none (never created) it lists nothing.
			_, logErr, code := h.run("", "log")
			oneLine := code == 2 && strings.Count(strings.TrimSpace(logErr), "\n") == 0 && strings.Contains(logErr, "runs.db")
			_, statErr := os.Stat(h.statePath())
			switch {
			case statErr != nil:
				if code != 0 || logErr != "" {
					t.Errorf("tact log with no database: exit %d: %s", code, logErr)
				}
			case tc.name == "full disk":
				if code != 0 && !oneLine {
					t.Errorf("tact log on a full disk: exit %d: %s", code, logErr)
				}
			case !oneLine:
				t.Errorf("tact log: exit %d, stderr %q; want exit 2 and one line naming the file", code, logErr)
			}
		})
	}
}

// 8 processes write 100 runs each at once: 800 complete records, and no
// "database is locked" anywhere.
func TestHistoryManyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("800 runs")
	}
	h := newHistEnv(t)
	script := h.write("answers.jsonl", strings.Repeat(answerScript, 100))
	queries := h.write("queries.txt", strings.Repeat("what is it?\n", 100))
	var wg sync.WaitGroup
	errs := make([]string, 8)
	for i := range 8 {
		wg.Go(func() {
			_, errOut, code := h.run("", "batch", "--script", script, "--no-plan", queries)
			if code != 0 || errOut != "" {
				errs[i] = fmt.Sprintf("process %d: exit %d: %s", i, code, errOut)
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	runs := h.runs(history.Filter{})
	ended := 0
	for _, r := range runs {
		if r.Ended && r.Reason == "success" {
			ended++
		}
	}
	if len(runs) != 800 || ended != 800 {
		t.Errorf("%d records, %d complete; want 800", len(runs), ended)
	}
}

// tact serve records each /v1/runs run.
func TestHistoryRecordsServeRuns(t *testing.T) {
	h := newHistEnv(t)
	script := h.write("answers.jsonl", strings.Repeat(answerScript, 2))
	srv := startServe(t, h.tact, h.home, []string{"serve", "--script", script, "--no-plan", "--workspace", h.ws, "--addr", "127.0.0.1:0"})
	for range 2 {
		resp, err := http.Post(srv.base+"/v1/runs", "application/json", strings.NewReader(`{"query": "what is the answer?"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	<-srv.exited
	runs := h.runs(history.Filter{})
	if len(runs) != 2 || runs[0].Command != "serve" || !runs[0].Ended || runs[0].Answer != "forty-two" {
		t.Fatalf("serve records: %+v", runs)
	}
}

// A run without a plan (every action from the model) is recorded step by
// step too: cut while its fourth action runs, it resumes with the model's
// view of the first three (the next script line expects them).
func TestHistoryResumeFreeRun(t *testing.T) {
	h := newHistEnv(t)
	act := func(cmd string, expect ...string) string {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		text, _ := json.Marshal(map[string]any{"thought": "the next step of the work", "tool": "run_command", "args": json.RawMessage(args)})
		line, _ := json.Marshal(map[string]any{"kind": "action", "text": string(text), "expect": expect})
		return string(line) + "\n"
	}
	step := func(n int) string { return fmt.Sprintf("sh -c 'echo %d >> ran.log; echo did %d'", n, n) }
	first := h.write("first.jsonl", act(step(1))+act(step(2))+act(step(3))+
		act("sh -c 'echo $$ > pid4; [ -e go ] || echo at4 > fifo; [ -e go ] || sleep 60; echo 4 >> ran.log'"))
	rest := h.write("rest.jsonl", act("sh -c 'echo 4 >> ran.log'", "did 1", "did 2", "did 3")+act(step(5))+act(step(6))+
		`{"kind":"action","text":"{\"thought\":\"all six steps ran\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"done\"}}"}`+"\n")
	fifo := filepath.Join(h.ws, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := h.command("run", "--yes", "--no-plan", "--script", first, "do six things")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	_ = cmd.Wait()
	// tact's helper kills the step's shell once tact is gone, a moment
	// later on a busy machine: "go" must not be there before, or the
	// killed run's step 4 could still finish.
	waitShellGone(t, filepath.Join(h.ws, "pid4"))
	h.write("ws/go", "")
	out, errOut, code := h.run("", "run", "--yes", "--resume", "last", "--script", rest)
	if code != 0 || strings.TrimSpace(out) != "done" {
		t.Fatalf("resume: exit %d, %q: %s", code, out, errOut)
	}
	log, _ := os.ReadFile(filepath.Join(h.ws, "ran.log"))
	if string(log) != "1\n2\n3\n4\n5\n6\n" {
		t.Errorf("ran.log after resuming:\n%s", log)
	}
}

// --resume refuses, with exit 2 and a reason, a run whose workspace or
// model file is gone, one that is not there, and a query beside it.
func TestHistoryResumeRefusals(t *testing.T) {
	h := newHistEnv(t)
	st, err := history.Open(h.statePath(), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(h.dir, "gone")
	for _, r := range []history.Run{
		{ID: "aaaa000000000001", Command: "run", Workspace: gone, Query: "q", Settings: `{}`},
		{ID: "bbbb000000000002", Command: "run", Workspace: h.ws, Query: "q", Settings: `{"Model":"` + filepath.Join(gone, "m.gguf") + `"}`},
	} {
		st.Begin(r).End(history.Final{Reason: "failure", ExitCode: 3})
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--resume", "aaaa"}, "its workspace " + gone + " is gone"},
		{[]string{"run", "--resume", "bbbb"}, "its model " + filepath.Join(gone, "m.gguf") + " is gone"},
		{[]string{"exec", "--resume", "cccc"}, "no such run"},
		{[]string{"run", "--resume", "aaaa", "another query"}, "give no query"},
	} {
		_, errOut, code := h.run("", tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
}

// waitShellGone waits until the killed run's step, which wrote pidFile, has
// ended.
func waitShellGone(t *testing.T, pidFile string) {
	t.Helper()
	if _, err := os.ReadFile(pidFile); err != nil {
		t.Fatal(err)
	}
	// The shell's $$ is a pid of its own PID namespace (a confined
	// command's), not the system's: the processes still working in the
	// workspace are found by their directory instead.
	ws := filepath.Dir(pidFile)
	var left []int
	if !waitFor(time.Minute, func() bool { left = processesIn(ws); return len(left) == 0 }) {
		t.Fatalf("the killed run's processes %v are still running in %s", left, ws)
	}
}

// processesIn lists the live processes whose working directory is dir.
func processesIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err != nil || cwd != dir {
			continue
		}
		if processGone(pid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}
