package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/react"
)

// seedRun is a run to record: its steps and, when ended, its result.
type seedRun struct {
	run    history.Run
	steps  []history.Step
	events []string
	final  *history.Final // nil: the run never ended
}

// seedHistory records runs in a new store at $XDG_STATE_HOME/tact/runs.db
// (XDG_STATE_HOME a temporary directory) and returns its path.
func seedHistory(t *testing.T, runs ...seedRun) string {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	path, err := history.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	var warned error
	st, err := history.Open(path, history.Options{Warn: func(err error) { warned = err }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		rec := st.Begin(r.run)
		for _, s := range r.steps {
			rec.Step(s)
		}
		for _, e := range r.events {
			rec.Event(e)
		}
		if r.final != nil {
			rec.End(*r.final)
		}
	}
	if err := st.Close(); err != nil || warned != nil {
		t.Fatal(err, warned)
	}
	return path
}

// resultJSON is a --json result document of steps, as tact run prints it.
func resultJSON(t *testing.T, id string, reason react.Reason, answer string, steps ...react.StepTrace) string {
	t.Helper()
	res := react.Result{RunID: id, Success: reason == react.ReasonSuccess, FinalAnswer: answer, TerminationReason: reason, Iterations: len(steps)}
	res.Trace.Steps = steps
	b, err := text.JSON(&res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logFixture is three runs an hour apart (the newest last): a success in
// ws, a failure elsewhere, and one that never ended in ws.
func logFixture(t *testing.T, ws string) (path string, base time.Time) {
	t.Helper()
	base = time.Date(2026, 11, 26, 10, 0, 0, 0, time.Local)
	ok := resultJSON(t, "aaaa000000000001", react.ReasonSuccess, "2 files",
		react.StepTrace{Iteration: 1, Thought: "list", Action: react.ToolCall{Tool: "list_files", Args: json.RawMessage(`{"path":"."}`)}, Observation: "a.txt\nb.txt\n"},
		react.StepTrace{Iteration: 2, Thought: "done", Action: react.ToolCall{Tool: "final_answer", Args: json.RawMessage(`{"answer":"2 files"}`)}, Observation: "2 files"})
	path = seedHistory(t,
		seedRun{
			run: history.Run{ID: "aaaa000000000001", Command: "exec", Workspace: ws, Query: "how many\tfiles?\nplease", Plan: `{"steps": [1]}`, Backend: "none", StartedAt: base},
			steps: []history.Step{
				{Index: 0, Thought: "list", Tool: "list_files", Args: `{"path":"."}`, Observation: "a.txt\nb.txt\nzebrafish.txt\n", Usage: history.Usage{Prompt: 100, Completion: 20}},
				{Index: 1, Thought: "done", Tool: "final_answer", Args: `{"answer":"2 files"}`, Observation: "2 files", Usage: history.Usage{Prompt: 30, Completion: 5}},
			},
			events: []string{`{"event":"run_start"}`, `{"event":"termination","reason":"success"}`},
			final:  &history.Final{Answer: "2 files", Reason: "success", ExitCode: 0, EndedAt: base.Add(1500 * time.Millisecond), Duration: 1500 * time.Millisecond, Result: ok},
		},
		seedRun{
			run:   history.Run{ID: "bbbb000000000002", Command: "run", Workspace: "/elsewhere", Query: "break \x1b]0;pwned\x07 it", StartedAt: base.Add(time.Hour)},
			steps: []history.Step{{Index: 0, Tool: "run_command", Args: `{"command":"false"}`, Observation: "exit 1", ExitCode: 1}},
			final: &history.Final{Reason: "failure", ExitCode: 3, EndedAt: base.Add(time.Hour + 75*time.Second), Duration: 75 * time.Second, Result: resultJSON(t, "bbbb000000000002", react.ReasonFailure, "")},
		},
		seedRun{
			run: history.Run{ID: "aaab000000000003", Command: "exec", Workspace: ws, Query: "killed", StartedAt: base.Add(2 * time.Hour)},
			steps: []history.Step{
				{Index: 0, Thought: "look", Tool: "read_file", Args: `{"path":"a.txt"}`, Observation: "hello", StartedAt: base.Add(2*time.Hour + time.Second), Usage: history.Usage{Prompt: 40, Completion: 2}},
				{Index: 1, Thought: "again", Tool: "read_file", Args: `{"path":"b.txt"}`, Observation: "world", Usage: history.Usage{Prompt: 50, Completion: 3}},
			},
		},
	)
	return path, base
}

// runLog runs tact log with o's filters on the store at path; stdout,
// stderr and the exit code.
func runLog(t *testing.T, path string, o logOptions) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	o.IO = &iostreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	o.DBPath = func() (string, error) { return path, nil }
	if o.Now == nil {
		o.Now = time.Now
	}
	err := logRun(context.Background(), &o)
	return out.String(), errorMessage(err), exitCode(err, 0)
}

// column is the n-th tab-separated cell of each line.
func column(out string, n int) []string {
	var cells []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		cells = append(cells, strings.Split(line, "\t")[n])
	}
	return cells
}

func TestLogFilters(t *testing.T) {
	ws := t.TempDir()
	path, base := logFixture(t, ws)
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	zero, three := 0, 3
	now := func() time.Time { return base.Add(2*time.Hour + 30*time.Minute) }
	for _, tc := range []struct {
		name string
		o    logOptions
		want []string
	}{
		{"all (-n 0), newest first", logOptions{}, []string{"aaab000000000003", "bbbb000000000002", "aaaa000000000001"}},
		{"limit", logOptions{Limit: 2}, []string{"aaab000000000003", "bbbb000000000002"}},
		{"limit 1", logOptions{Limit: 1}, []string{"aaab000000000003"}},
		{"reason", logOptions{Reason: "failure"}, []string{"bbbb000000000002"}},
		{"interrupted", logOptions{Reason: "interrupted"}, []string{"aaab000000000003"}},
		{"exit 0", logOptions{Exit: &zero}, []string{"aaaa000000000001"}},
		{"exit 3", logOptions{Exit: &three}, []string{"bbbb000000000002"}},
		{"workspace through a symlink", logOptions{Workspace: link}, []string{"aaab000000000003", "aaaa000000000001"}},
		{"word only in an observation", logOptions{Query: "zebrafish"}, []string{"aaaa000000000001"}},
		{"since a duration ago", logOptions{Since: "2h", Now: now}, []string{"aaab000000000003", "bbbb000000000002"}},
		{"until a local time", logOptions{Until: base.Add(time.Hour).Format("2006-01-02 15:04")}, []string{"aaaa000000000001"}},
		{"since RFC 3339", logOptions{Since: base.Add(90 * time.Minute).Format(time.RFC3339)}, []string{"aaab000000000003"}},
		{"nothing matches", logOptions{Reason: "timeout"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, msg, code := runLog(t, path, tc.o)
			if code != 0 || msg != "" {
				t.Fatalf("exit %d: %s", code, msg)
			}
			if got := column(out, 0); !slices.Equal(got, tc.want) {
				t.Fatalf("ids %q, want %q\n%s", got, tc.want, out)
			}
		})
	}
}

// Piped, each run is one line of tab-separated cells, no header, the text
// whole but on one line.
func TestLogPiped(t *testing.T) {
	path, base := logFixture(t, "/ws")
	out, msg, code := runLog(t, path, logOptions{})
	if code != 0 || msg != "" {
		t.Fatalf("exit %d: %s", code, msg)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	want := []string{"aaaa000000000001", base.Format("2006-01-02 15:04"), "exec", "/ws", "how many files? please", "success", "0", "1.5s", "155"}
	if got := strings.Split(lines[2], "\t"); !slices.Equal(got, want) {
		t.Errorf("oldest run:\n got %q\nwant %q", got, want)
	}
	if got := strings.Split(lines[1], "\t"); got[5] != "failure" || got[6] != "3" || got[7] != "1m15s" {
		t.Errorf("failed run: %q", got)
	}
	if got := strings.Split(lines[0], "\t"); got[5] != "interrupted" || got[6] != "-" || got[7] != "-" {
		t.Errorf("interrupted run: %q", got)
	}
}

// On a terminal: a header, aligned columns, and text from the store can
// no longer drive the terminal.
func TestLogTerminal(t *testing.T) {
	path, _ := logFixture(t, "/ws")
	out, msg, code := runLog(t, path, logOptions{Terminal: true, Width: 200})
	if code != 0 || msg != "" {
		t.Fatalf("exit %d: %s", code, msg)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "TOKENS") {
		t.Fatalf("want a header and 3 rows:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\x07\t") {
		t.Errorf("control characters or tabs reach the terminal: %q", out)
	}
	if !strings.Contains(out, `break \u001b]0;pwned\u0007 it`) {
		t.Errorf("the query's controls are not shown escaped:\n%s", out)
	}
	col := strings.Index(lines[0], "QUERY")
	for _, l := range lines[1:] {
		if len(l) < col || l[col-2:col] != "  " {
			t.Errorf("column QUERY not aligned at %d: %q", col, l)
		}
	}

	// A narrow terminal cuts the query, never the other columns.
	out, _, _ = runLog(t, path, logOptions{Terminal: true, Width: 60})
	if !strings.Contains(out, "aaaa000000000001") || strings.Contains(out, "please") {
		t.Errorf("the query is not cut to fit:\n%s", out)
	}
}

// On a terminal the query is what gives way last: a long workspace keeps
// only its end, then TOKENS, DURATION, COMMAND and WORKSPACE go, before the
// query is cut below 40 runes; no line is wider than the terminal.
func TestLogTerminalWidth(t *testing.T) {
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.Local)
	query := "why did the nightly disk check fail on the backup volume?"
	path := seedHistory(t, seedRun{
		run:   history.Run{ID: "cccc000000000001", Command: "exec", Workspace: "/srv/customers/acme/production/app", Query: query, StartedAt: base},
		final: &history.Final{Reason: "failure", ExitCode: 3, EndedAt: base.Add(2 * time.Second), Duration: 2 * time.Second, Result: resultJSON(t, "cccc000000000001", react.ReasonFailure, "")},
	})
	for _, tc := range []struct {
		width      int
		header     string // the columns shown
		query, ws  string // what shows of them
		queryRunes int    // at least
	}{
		{200, "ID WHEN COMMAND WORKSPACE QUERY REASON EXIT DURATION TOKENS", query, "/srv/customers/acme/production/app", len(query)},
		{130, "ID WHEN COMMAND WORKSPACE QUERY REASON EXIT", "why did the nightly disk check fail on", "…ers/acme/production/app", 40},
		{80, "ID WHEN QUERY REASON EXIT", "why did the nightly disk", "", 27},
	} {
		out, _, _ := runLog(t, path, logOptions{Terminal: true, Width: tc.width})
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if got := strings.Join(strings.Fields(lines[0]), " "); got != tc.header {
			t.Errorf("%d columns: header %q, want %q", tc.width, got, tc.header)
		}
		if !strings.Contains(out, tc.query) || !strings.Contains(out, tc.ws) {
			t.Errorf("%d columns: want %q and %q:\n%s", tc.width, tc.query, tc.ws, out)
		}
		for _, l := range lines {
			if n := len([]rune(l)); n > tc.width {
				t.Errorf("%d columns: a line of %d runes: %q", tc.width, n, l)
			}
		}
		col := strings.Index(lines[0], "QUERY")
		if shown := strings.TrimRight(string([]rune(lines[1])[len([]rune(lines[0][:col])):]), " "); len([]rune(shown)) < tc.queryRunes {
			t.Errorf("%d columns: %q shows less than %d runes of the query", tc.width, shown, tc.queryRunes)
		}
	}
}

// --json is one object a run, every field, snake_case, RFC 3339 times.
func TestLogJSON(t *testing.T) {
	path, base := logFixture(t, "/ws")
	out, msg, code := runLog(t, path, logOptions{JSON: true})
	if code != 0 || msg != "" {
		t.Fatalf("exit %d: %s", code, msg)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	var recs []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		recs = append(recs, m)
	}
	fields := []string{"id", "parent_id", "resumed_from", "command", "workspace", "query", "plan", "backend", "model", "settings", "started_at",
		"ended", "ended_at", "answer", "reason", "exit_code", "token_usage", "steps", "duration_ms", "result", "dropped_events"}
	for _, f := range fields {
		if _, ok := recs[2][f]; !ok {
			t.Errorf("no field %q in %s", f, lines[2])
		}
	}
	oldest := recs[2]
	if started, err := time.Parse(time.RFC3339Nano, oldest["started_at"].(string)); err != nil || !started.Equal(base) {
		t.Errorf("started_at %v (%v), want %v", oldest["started_at"], err, base)
	}
	if oldest["exit_code"] != 0.0 || oldest["reason"] != "success" || oldest["steps"] != 2.0 || oldest["duration_ms"] != 1500.0 {
		t.Errorf("totals: %s", lines[2])
	}
	if plan, ok := oldest["plan"].(map[string]any); !ok || plan["steps"] == nil {
		t.Errorf("plan is not embedded as JSON: %s", lines[2])
	}
	if res, ok := oldest["result"].(map[string]any); !ok || res["final_answer"] != "2 files" {
		t.Errorf("result is not embedded as JSON: %s", lines[2])
	}
	if u := oldest["token_usage"].(map[string]any); u["prompt_tokens"] != 130.0 || u["completion_tokens"] != 25.0 {
		t.Errorf("token_usage %v", u)
	}
	if never := recs[0]; never["ended"] != false || never["ended_at"] != nil || never["exit_code"] != nil || never["result"] != nil {
		t.Errorf("interrupted run: %s", lines[0])
	}
}

func TestFormatRunDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "-"},
		{45 * time.Millisecond, "45ms"},
		{999 * time.Millisecond, "999ms"},
		{2400 * time.Millisecond, "2.4s"},
		{9940 * time.Millisecond, "9.9s"},
		{12 * time.Second, "12s"},
		{59400 * time.Millisecond, "59s"},
		{3*time.Minute + 4*time.Second, "3m04s"},
		{62 * time.Minute, "1h02m"},
		{26*time.Hour + 30*time.Second, "26h01m"},
	} {
		if got := formatRunDuration(tc.d); got != tc.want {
			t.Errorf("formatRunDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// Bad flag values are usage errors naming the flag; nothing is opened.
func TestLogBadFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "never", "runs.db")
	for _, tc := range []struct {
		o    logOptions
		want string
	}{
		{logOptions{Since: "soon"}, `--since "soon": not a time`},
		{logOptions{Until: "-2h"}, `--until "-2h": a negative duration`},
		{logOptions{Since: "2026-11-26", Until: "2026-11-25"}, `--since "2026-11-26" is not before --until "2026-11-25"`},
		{logOptions{Reason: "answered"}, `--reason "answered": not a termination reason (want one of success,`},
		{logOptions{Limit: -1}, `-n -1: want 0 (all) or more`},
	} {
		out, msg, code := runLog(t, path, tc.o)
		if code != 2 || !strings.HasPrefix(msg, tc.want) || out != "" || strings.Contains(msg, "\n") {
			t.Errorf("%+v: exit %d, %q; want exit 2, %q", tc.o, code, msg, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a bad flag created the history directory: %v", err)
	}
}

// No history yet: nothing listed, exit 0, and no database created just to
// be read. A damaged one is exit 2 and one line naming its path.
func TestLogStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tact", "runs.db")
	out, msg, code := runLog(t, path, logOptions{})
	if code != 0 || msg != "" || out != "" {
		t.Fatalf("no history: exit %d, %q, %q", code, msg, out)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tact log created the history: %v", err)
	}
	msg, code = showRun(t, path, logShowOptions{Run: "last"}, nil)
	if code != 2 || msg != `run "last": no runs recorded yet` {
		t.Errorf("show with no history: exit %d, %q", code, msg)
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, run := range []func() (string, int){
		func() (string, int) { _, msg, code := runLog(t, path, logOptions{}); return msg, code },
		func() (string, int) { return showRun(t, path, logShowOptions{Run: "last"}, nil) },
	} {
		msg, code := run()
		if code != 2 || !strings.Contains(msg, path) || !strings.Contains(msg, "corrupt") || strings.Contains(msg, "\n") {
			t.Errorf("corrupt history: exit %d, %q", code, msg)
		}
	}
}

// showRun runs tact log show; out receives stdout.
func showRun(t *testing.T, path string, o logShowOptions, out *bytes.Buffer) (string, int) {
	t.Helper()
	if out == nil {
		out = new(bytes.Buffer)
	}
	o.IO = &iostreams{In: strings.NewReader(""), Out: out, ErrOut: new(bytes.Buffer)}
	o.DBPath = func() (string, error) { return path, nil }
	err := logShowRun(context.Background(), &o)
	return errorMessage(err), exitCode(err, 0)
}

func TestLogShow(t *testing.T) {
	path, _ := logFixture(t, "/ws")

	// A run that ended: its result document, byte for byte.
	var out bytes.Buffer
	if msg, code := showRun(t, path, logShowOptions{Run: "aaaa0"}, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	want := resultJSON(t, "aaaa000000000001", react.ReasonSuccess, "2 files",
		react.StepTrace{Iteration: 1, Thought: "list", Action: react.ToolCall{Tool: "list_files", Args: json.RawMessage(`{"path":"."}`)}, Observation: "a.txt\nb.txt\n"},
		react.StepTrace{Iteration: 2, Thought: "done", Action: react.ToolCall{Tool: "final_answer", Args: json.RawMessage(`{"answer":"2 files"}`)}, Observation: "2 files"})
	if out.String() != want+"\n" {
		t.Errorf("show:\n got %s\nwant %s", out.String(), want)
	}

	// The newest never ended: the same shape, built from its steps.
	out.Reset()
	if msg, code := showRun(t, path, logShowOptions{Run: "last"}, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	var res react.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("%v: %q", err, out.String())
	}
	if res.RunID != "aaab000000000003" || res.Success || res.FinalAnswer != "" || res.TerminationReason != "interrupted" || len(res.Trace.Steps) != 2 ||
		res.Iterations != 2 || res.TokenUsage.PromptTokens != 90 || res.TokenUsage.CompletionTokens != 5 {
		t.Fatalf("interrupted run: %s", out.String())
	}
	if s := res.Trace.Steps[0]; s.Iteration != 1 || s.Action.Tool != "read_file" || string(s.Action.Args) != `{"path":"a.txt"}` || s.Observation != "hello" || s.Thought != "look" {
		t.Errorf("step: %+v", s)
	}

	// --trace: the event lines as recorded.
	out.Reset()
	if msg, code := showRun(t, path, logShowOptions{Run: "aaaa000000000001", Trace: true}, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if want := "{\"event\":\"run_start\"}\n{\"event\":\"termination\",\"reason\":\"success\"}\n"; out.String() != want {
		t.Errorf("trace %q, want %q", out.String(), want)
	}

	for _, tc := range []struct{ run, want string }{
		{"ffff", `run "ffff": no such run (tact log lists them)`},
		{"aaa", `run id prefix "aaa" is ambiguous: 2 runs match`},
	} {
		out.Reset()
		msg, code := showRun(t, path, logShowOptions{Run: tc.run}, &out)
		if code != 2 || msg != tc.want || out.Len() != 0 {
			t.Errorf("show %s: exit %d, %q; want exit 2, %q", tc.run, code, msg, tc.want)
		}
	}
}

// The command parses its flags into its options; --exit is nil unless given.
func TestLogCommandOptions(t *testing.T) {
	factoryEnv(t)
	for _, tc := range []struct {
		args  []string
		check func(o *logOptions) bool
	}{
		{nil, func(o *logOptions) bool { return o.Exit == nil && o.Limit == 20 && !o.JSON && !o.Terminal }},
		{[]string{"--exit", "0", "-n", "5", "--json", "-q", "disk full", "--since", "7d", "--until", "2026-11-25", "--reason", "interrupted", "--workspace", "."},
			func(o *logOptions) bool {
				return o.Exit != nil && *o.Exit == 0 && o.Limit == 5 && o.JSON && o.Query == "disk full" && o.Since == "7d" &&
					o.Until == "2026-11-25" && o.Reason == "interrupted" && o.Workspace == "."
			}},
	} {
		f, opens, _, _ := countingFactory("")
		var got *logOptions
		cmd := newLogCmd(f, func(_ context.Context, o *logOptions) error { got = o; return nil }, nil)
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got == nil || !tc.check(got) || *opens != 0 {
			t.Errorf("%q: %+v, %d opens", tc.args, got, *opens)
		}
	}
	f, _, _, _ := countingFactory("")
	var show *logShowOptions
	cmd := newLogCmd(f, nil, func(_ context.Context, o *logShowOptions) error { show = o; return nil })
	cmd.SetArgs([]string{"show", "--trace", "ab12"})
	if err := cmd.Execute(); err != nil || show == nil || show.Run != "ab12" || !show.Trace {
		t.Errorf("show: %v, %+v", err, show)
	}
}

// plan --from makes the plan of a recorded run with no model: a value one
// step printed becomes a $jq reference in the step that used it, and the
// steps left out are named on stderr.
func TestPlanFrom(t *testing.T) {
	doc := resultJSON(t, "cccc000000000001", react.ReasonSuccess, "hello",
		react.StepTrace{Iteration: 1, Thought: "find it", Action: react.ToolCall{Tool: "run_command", Args: json.RawMessage(`{"command":"ls *.txt"}`)}, Observation: "a.txt\n"},
		react.StepTrace{Iteration: 2, Thought: "oops", Action: react.ToolCall{Tool: "run_command", Args: json.RawMessage(`{"command":"cat nope"}`)}, Observation: "no such file", ExitCode: 1},
		react.StepTrace{Iteration: 3, Thought: "read it", Action: react.ToolCall{Tool: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}, Observation: "hello"},
		react.StepTrace{Iteration: 4, Thought: "done", Action: react.ToolCall{Tool: "final_answer", Args: json.RawMessage(`{"answer":"hello"}`)}, Observation: "hello"})
	path := seedHistory(t, seedRun{
		run:   history.Run{ID: "cccc000000000001", Command: "run", Workspace: "/ws", Query: "what does the text file say?"},
		final: &history.Final{Answer: "hello", Reason: "success", Result: doc},
	})
	plan := func(o planOptions) (string, string, int) {
		var out, errOut bytes.Buffer
		f, opens, _, _ := countingFactory("")
		o.IO, o.S, o.Runtime = &iostreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, f.Settings, f.Runtime
		o.DBPath = func() (string, error) { return path, nil }
		err := planRun(context.Background(), &o)
		if *opens != 0 {
			t.Errorf("plan --from opened a runtime")
		}
		if msg := errorMessage(err); msg != "" {
			errOut.WriteString("tact: " + msg + "\n")
		}
		return out.String(), errOut.String(), exitCode(err, 0)
	}

	out, stderr, code := plan(planOptions{From: "last", AnswerJQ: ".steps[-1].output"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stderr != "tact: step 2 (run_command) left out: failed with exit 1\n" {
		t.Errorf("stderr %q", stderr)
	}
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(rows) != 4 {
		t.Fatalf("want a header and 3 steps:\n%s", out)
	}
	for i, want := range []string{
		`"query":"what does the text file say?"`,
		`"args":{"command":"ls *.txt"}`,
		`"args":{"path":{"$jq":".steps[0].output | rtrimstr(\"\\n\")"}}`,
		`"args":{"answer":{"$jq":".steps[-1].output"}}`,
	} {
		if !strings.Contains(rows[i], want) {
			t.Errorf("row %d lacks %s:\n%s", i, want, rows[i])
		}
	}
	if !strings.Contains(rows[0], `"from_run":"cccc000000000001"`) {
		t.Errorf("header does not name the run: %s", rows[0])
	}

	for _, tc := range []struct {
		o    planOptions
		want string
	}{
		{planOptions{From: "last", Args: []string{"a", "query"}}, "tact: --from takes no query: the plan's query is the run's\n"},
		{planOptions{From: "last", AnswerJQ: ".steps[[["}, "tact: --answer-jq: final answer:"},
		{planOptions{From: "dddd"}, `tact: run "dddd": no such run (tact log lists them)` + "\n"},
		{planOptions{AnswerJQ: ".", Args: []string{"q"}}, "tact: --answer-jq needs --from RUN\n"},
	} {
		out, stderr, code := plan(tc.o)
		if code != 2 || out != "" || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%+v: exit %d, stdout %q, stderr %q; want exit 2, %q", tc.o, code, out, stderr, tc.want)
		}
	}
}
