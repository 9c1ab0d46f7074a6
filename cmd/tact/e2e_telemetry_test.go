package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/otlptest"
)

// telemetryFixture is a workspace with a file, a script backend that plans
// one read_file and answers, and a saved plan for tact exec.
func telemetryFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	os.WriteFile(filepath.Join(dir, "ws", "notes.txt"), []byte("the launch code is tok-3f9a8b7c6d5e\n"), 0o644)
	plan := `{"kind":"plan","text":"{\"plan\":[{\"thought\":\"read the notes file\",\"tool\":\"read_file\",\"args\":{\"path\":\"notes.txt\"}},{\"thought\":\"answer from the notes\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"\"}}]}"}` + "\n" +
		`{"kind":"fill","text":"{\"answer\":\"the notes name a launch code\"}"}` + "\n"
	os.WriteFile(filepath.Join(dir, "replies.jsonl"), []byte(plan), 0o644)
	os.WriteFile(filepath.Join(dir, "batch.jsonl"), []byte(strings.Repeat(plan, 4)), 0o644)
	os.WriteFile(filepath.Join(dir, "q.txt"), []byte("query one\nquery two\nquery three\nquery four\n"), 0o644)
	exe := `{"type":"plan","query":"Count the notes"}` + "\n" +
		`{"type":"step","step":1,"thought":"read","tool":"read_file","args":{"path":"notes.txt"}}` + "\n" +
		`{"type":"step","step":2,"thought":"answer","tool":"final_answer","args":{"answer":"read them"}}` + "\n"
	os.WriteFile(filepath.Join(dir, "plan.jsonl"), []byte(exe), 0o644)
	return dir
}

// tactWith runs bin/tact in dir with extra environment; it returns the exit
// code, stdout and stderr.
func tactWith(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	c := exec.Command(e2eTact(t), args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "TACT_PULL=false")
	c.Env = append(c.Env, env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func spansNamed(spans []otlptest.Span, name string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range spans {
		if s.Name == name || strings.HasPrefix(s.Name, name+" ") {
			out = append(out, s)
		}
	}
	return out
}

// tact run, exec and batch --parallel 4 export their runs as GenAI spans to
// an OTLP endpoint; the run's token counts are --json's.
func TestTelemetryExport(t *testing.T) {
	dir := telemetryFixture(t)
	col := otlptest.New(t, 200)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL}

	code, out, stderr := tactWith(t, dir, env, "run", "--json", "--workspace", "ws", "--script", "replies.jsonl", "what do the notes say?")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	var res struct {
		RunID string `json:"run_id"`
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Cached     int64 `json:"cached_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"token_usage"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v: %s", err, out)
	}
	spans := col.Spans()
	runs := spansNamed(spans, "invoke_agent tact")
	if len(runs) != 1 {
		t.Fatalf("want one invoke_agent span, got %d: %+v", len(runs), spans)
	}
	root := runs[0]
	for k, v := range map[string]any{"gen_ai.conversation.id": res.RunID, "gen_ai.provider.name": "script", "tact.termination_reason": "success",
		"tact.exit_code": int64(0), "gen_ai.usage.output_tokens": res.Usage.Completion,
		"gen_ai.usage.input_tokens": res.Usage.Prompt + res.Usage.Cached, "gen_ai.usage.cache_read.input_tokens": res.Usage.Cached} {
		if root.Attrs[k] != v {
			t.Errorf("invoke_agent %s = %v, want %v", k, root.Attrs[k], v)
		}
	}
	for _, name := range []string{"plan", "chat", "execute_tool read_file"} {
		got := spansNamed(spans, name)
		if len(got) == 0 {
			t.Errorf("no %q span: %+v", name, spans)
			continue
		}
		if got[0].ParentID != root.SpanID || got[0].TraceID != root.TraceID {
			t.Errorf("%s: parent %s, want the run's %s", name, got[0].ParentID, root.SpanID)
		}
	}
	if tool := spansNamed(spans, "execute_tool read_file"); len(tool) > 0 && (tool[0].Attrs["tact.tool.class"] != "read" || tool[0].Attrs["tact.tool.decided_by"] == nil) {
		t.Errorf("read_file attributes: %v", tool[0].Attrs)
	}

	// tact exec of a saved plan: no plan span, no model call, its tool.
	before := len(spans)
	if code, _, stderr := tactWith(t, dir, env, "exec", "--workspace", "ws", "plan.jsonl"); code != 0 {
		t.Fatalf("exec: exit %d: %s", code, stderr)
	}
	spans = col.Spans()[before:]
	if len(spansNamed(spans, "invoke_agent tact")) != 1 || len(spansNamed(spans, "execute_tool")) != 1 || len(spansNamed(spans, "plan")) != 0 {
		t.Errorf("exec spans: %+v", spans)
	}

	// tact batch --parallel 4: four runs, siblings under one batch span.
	before = len(col.Spans())
	if code, _, stderr := tactWith(t, dir, env, "batch", "--parallel", "4", "--workspace", "ws", "--script", "batch.jsonl", "q.txt"); code != 0 {
		t.Fatalf("batch: exit %d: %s", code, stderr)
	}
	spans = col.Spans()[before:]
	batch := spansNamed(spans, "invoke_agent batch")
	runs = spansNamed(spans, "invoke_agent tact")
	if len(batch) != 1 || len(runs) != 4 {
		t.Fatalf("batch: %d batch spans, %d runs: %+v", len(batch), len(runs), spans)
	}
	for _, r := range runs {
		if r.ParentID != batch[0].SpanID || r.TraceID != batch[0].TraceID {
			t.Errorf("batch run %v: parent %s, want the batch %s", r.Attrs["gen_ai.conversation.id"], r.ParentID, batch[0].SpanID)
		}
	}
}

// No secret leaves in the exported bytes with content capture on, and no
// message content at all with it off.
func TestTelemetryContent(t *testing.T) {
	dir := telemetryFixture(t)
	const tokenValue = "ghp-Zx81vQ7kLmN0pR2sT4uW"
	for _, capture := range []bool{false, true} {
		col := otlptest.New(t, 200)
		env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL, "DEPLOY_TOKEN=" + tokenValue, "TACT_REDACT=tok-[0-9a-f]+"}
		if capture {
			env = append(env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
		}
		code, _, stderr := tactWith(t, dir, env, "run", "--workspace", "ws", "--script", "replies.jsonl", "what do the notes say? use "+tokenValue)
		if code != 0 {
			t.Fatalf("capture %v: exit %d: %s", capture, code, stderr)
		}
		raw := col.Raw()
		if len(col.Spans()) == 0 {
			t.Fatalf("capture %v: nothing exported", capture)
		}
		for _, secret := range []string{tokenValue, "tok-3f9a8b7c6d5e"} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Errorf("capture %v: %q exported", capture, secret)
			}
		}
		for _, text := range []string{"what do the notes say", "launch code"} {
			if got := bytes.Contains(raw, []byte(text)); got != capture {
				t.Errorf("capture %v: %q exported: %v", capture, text, got)
			}
		}
	}
}

// A collector down, blackholed or answering 500 changes nothing but one
// warning line: the exit code and output are as without telemetry, and the
// wait is bounded by TACT_OTEL_FLUSH_TIMEOUT.
func TestTelemetryCollectorTrouble(t *testing.T) {
	dir := telemetryFixture(t)
	args := []string{"run", "--json", "--workspace", "ws", "--script", "replies.jsonl", "what do the notes say?"}
	wantCode, _, _ := tactWith(t, dir, nil, args...)
	for _, tc := range []struct {
		name     string
		endpoint string
	}{
		{"down", otlptest.Down(t)},
		{"blackholed", otlptest.Blackhole(t)},
		{"500", otlptest.New(t, 500).URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, out, stderr := tactWith(t, dir, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + tc.endpoint, "TACT_OTEL_FLUSH_TIMEOUT=1s"}, args...)
			took := time.Since(start)
			if code != wantCode || !json.Valid([]byte(out)) {
				t.Errorf("exit %d (want %d), stdout %q", code, wantCode, out)
			}
			var warnings []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.Contains(l, "telemetry") {
					warnings = append(warnings, l)
				}
			}
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "tact: warning: telemetry: traces not exported to "+tc.endpoint) {
				t.Errorf("want one warning line, stderr: %q", stderr)
			}
			// The exporter's own timeout is 10 s: far under it, not a hang.
			if took > 8*time.Second {
				t.Errorf("took %s with a 1 s flush bound", took)
			}
			fmt.Fprintf(os.Stderr, "collector %s: tact run took %s\n", tc.name, took.Round(time.Millisecond))
		})
	}
}

// tact serve continues an incoming traceparent: a /v1/runs call's run is a
// child of the caller's span, in the caller's trace; the step API's too.
func TestTelemetryServeTraceparent(t *testing.T) {
	dir := telemetryFixture(t)
	// The run's replies, then the step call's.
	step := `{"kind":"action","text":"{\"thought\":\"search the code for the login\",\"tool\":\"code_search\",\"args\":{\"query\":\"login\"}}"}` + "\n"
	replies, _ := os.ReadFile(filepath.Join(dir, "replies.jsonl"))
	os.WriteFile(filepath.Join(dir, "serve.jsonl"), append(replies, step...), 0o644)
	col := otlptest.New(t, 200)
	p := startServe(t, e2eTact(t), dir, []string{"serve", "--addr", "127.0.0.1:0", "--workspace", filepath.Join(dir, "ws"),
		"--script", filepath.Join(dir, "serve.jsonl"), "--no-history"}, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL)
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", p.base+"/v1/runs", strings.NewReader(`{"query": "what do the notes say?"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/runs: %d %s", resp.StatusCode, body)
	}
	var res struct {
		RunID string `json:"run_id"`
	}
	json.Unmarshal(body, &res)
	const stepTrace = "5cf92f3577b34da6a3ce929d0e0e4799"
	req, _ = http.NewRequest("POST", p.base+"/api/agent/react_step", strings.NewReader(`{"user_query": "Where is login implemented?",
		"tools": [{"name": "code_search", "description": "Search the code.", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+stepTrace+"-"+parent+"-01")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("step API: %v %v", resp, err)
	}
	// SIGTERM: serve drains, closes the runtime and flushes the traces.
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("tact serve did not exit\n%s", p.logs.String())
	}
	runs := spansNamed(col.Spans(), "invoke_agent tact")
	if len(runs) != 1 {
		t.Fatalf("want one run span, got %+v\n%s", col.Spans(), p.logs.String())
	}
	if r := runs[0]; r.TraceID != traceID || r.ParentID != parent || r.Attrs["gen_ai.conversation.id"] != res.RunID {
		t.Errorf("run span: trace %s parent %s run %v; want trace %s parent %s run %s", r.TraceID, r.ParentID, r.Attrs["gen_ai.conversation.id"], traceID, parent, res.RunID)
	}
	for _, s := range col.Spans() {
		if want := map[bool]string{true: stepTrace, false: traceID}[s.Name == "invoke_agent step"]; s.TraceID != want {
			t.Errorf("%s in trace %s, not the caller's %s", s.Name, s.TraceID, want)
		}
	}
	if st := spansNamed(col.Spans(), "invoke_agent step"); len(st) != 1 || st[0].ParentID != parent {
		t.Errorf("step API spans: %+v", st)
	}
}

// A paused run (exit 12, needs_input) is exported as waiting, not failed:
// its span has the reason and a tact.needs_input event, the question's text
// only with content capture on; the run tact answer goes on with names it
// (tact.resumed_from).
func TestTelemetryPausedAndAnswered(t *testing.T) {
	dir := telemetryFixture(t)
	const question = "Which of the two configs is live?"
	os.WriteFile(filepath.Join(dir, "ask.jsonl"), []byte(`{"kind":"action","text":"{\"thought\":\"which one is it, ask the user\",\"tool\":\"ask_user\",\"args\":{\"question\":\"`+question+`\",\"options\":[\"the red one\",\"the blue one\"]}}"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "after.jsonl"), []byte(`{"kind":"action","text":"{\"thought\":\"the user said blue\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"blue is live\"}}"}`+"\n"), 0o644)
	for _, capture := range []bool{false, true} {
		col := otlptest.New(t, 200)
		env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL}
		if capture {
			env = append(env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
		}
		code, out, stderr := tactWith(t, dir, env, "run", "--json", "--no-plan", "--workspace", "ws", "--script", "ask.jsonl", "which config is live?")
		if code != 12 {
			t.Fatalf("capture %v: exit %d, want 12: %s", capture, code, stderr)
		}
		var paused struct {
			RunID string `json:"run_id"`
		}
		json.Unmarshal([]byte(out), &paused)
		code, out, stderr = tactWith(t, dir, env, "answer", "--json", "--workspace", "ws", "--script", "after.jsonl", paused.RunID, "the blue one")
		if code != 0 {
			t.Fatalf("answer: exit %d: %s", code, stderr)
		}
		var answered struct {
			RunID string `json:"run_id"`
		}
		json.Unmarshal([]byte(out), &answered)
		byRun := map[any]otlptest.Span{}
		for _, s := range spansNamed(col.Spans(), "invoke_agent tact") {
			byRun[s.Attrs["gen_ai.conversation.id"]] = s
		}
		p, a := byRun[paused.RunID], byRun[answered.RunID]
		if p.Attrs["tact.termination_reason"] != "needs_input" || p.Attrs["tact.exit_code"] != int64(12) || p.StatusCode == 2 || !slices.Contains(p.Events, "tact.needs_input") {
			t.Errorf("paused run's span: status %d, events %v, attributes %v", p.StatusCode, p.Events, p.Attrs)
		}
		if a.Attrs["tact.resumed_from"] != paused.RunID || a.Attrs["tact.termination_reason"] != "success" {
			t.Errorf("answered run's span: %v; want tact.resumed_from %s", a.Attrs, paused.RunID)
		}
		if got := bytes.Contains(col.Raw(), []byte(question)); got != capture {
			t.Errorf("capture %v: the question exported: %v", capture, got)
		}
	}
}
