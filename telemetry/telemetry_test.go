package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tactcli/tact/internal/otlptest"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/tools"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func raw(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

// runEvents is one run's events as the engine and the executor emit them:
// planned, one model-chosen read_file, the final answer.
func runEvents(ctx context.Context, id, query, secretOut string) []react.Event {
	t0 := time.Now()
	ev := func(i int, typ string, f map[string]any) react.Event {
		return react.Event{RunID: id, Type: typ, Time: t0.Add(time.Duration(i) * time.Millisecond), Fields: f, Ctx: ctx}
	}
	u := llm.Usage{PromptTokens: 30, CachedTokens: 70, CompletionTokens: 9}
	step := react.StepTrace{Action: react.ToolCall{Tool: "read_file", Args: raw(map[string]string{"path": "a.txt"})},
		Observation: "file says " + secretOut, Source: "model", Decision: "allow", TokenUsage: u}
	return []react.Event{
		ev(0, react.EventRunStart, map[string]any{"query": query, "mode": "run", "backend": "llama", "model": "tiny.gguf", "sandbox": map[string]any{"mode": "workspace-write"}}),
		ev(1, react.EventPlanning, map[string]any{"query": query}),
		ev(2, react.EventPlan, map[string]any{"plan": []any{1, 2}, "source": "planner", "token_usage": llm.Usage{PromptTokens: 50, CompletionTokens: 20}}),
		ev(3, react.EventExecuteStart, map[string]any{"plan": raw([]any{1, 2})}),
		ev(4, react.EventModelCall, map[string]any{"kind": raw("fill"), "prompt_tokens": raw(100), "max_tokens": raw(256)}),
		ev(5, react.EventAction, map[string]any{"tool": raw("read_file"), "args": raw(map[string]string{"path": "a.txt"}), "source": raw("model")}),
		ev(6, react.EventStep, map[string]any{"step": raw(step)}),
		ev(7, react.EventTermination, map[string]any{"reason": raw("success"), "success": raw(true), "exit_code": raw(0),
			"final_answer": raw("done"), "token_usage": raw(u.Add(llm.Usage{PromptTokens: 50, CompletionTokens: 20})),
			"state": raw(react.State{Attempts: 2, MaxSteps: 5})}),
	}
}

func TestSpanTree(t *testing.T) {
	exp := newKeep()
	tel, err := New(context.Background(), Options{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	tel.SetRuntime("tiny.gguf", func(string) string { return "read" })
	// An incoming traceparent (tact serve) is the run's parent.
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx := Extract(context.Background(), h)
	for _, ev := range runEvents(ctx, "run1", "q", "x") {
		tel.Sink().Handle(ev)
	}
	tel.Shutdown(context.Background())
	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	root, ok := byName["invoke_agent tact"]
	if !ok {
		t.Fatalf("no invoke_agent span: %v", names(exp.GetSpans()))
	}
	if root.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || root.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("incoming trace not continued: trace %s parent %s", root.SpanContext.TraceID(), root.Parent.SpanID())
	}
	want := map[string]any{"gen_ai.conversation.id": "run1", "gen_ai.provider.name": "llama.cpp", "gen_ai.request.model": "tiny.gguf",
		"tact.termination_reason": "success", "tact.exit_code": int64(0), "gen_ai.usage.input_tokens": int64(150),
		"gen_ai.usage.cache_read.input_tokens": int64(70), "gen_ai.usage.output_tokens": int64(29), "tact.budget.steps_used": int64(2)}
	checkAttrs(t, root, want)
	for _, name := range []string{"plan", "chat tiny.gguf", "execute_tool read_file"} {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no %q span: %v", name, names(exp.GetSpans()))
		}
		if s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("%s: parent %s, want the run's span", name, s.Parent.SpanID())
		}
	}
	checkAttrs(t, byName["chat tiny.gguf"], map[string]any{"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.cache_read.input_tokens": int64(70), "gen_ai.request.max_tokens": int64(256)})
	checkAttrs(t, byName["execute_tool read_file"], map[string]any{"gen_ai.tool.name": "read_file", "tact.tool.decision": "allow",
		"tact.tool.decided_by": "rule", "tact.tool.exit_code": int64(0), "tact.sandbox.mode": "workspace-write"})
	checkAttrs(t, byName["plan"], map[string]any{"tact.plan.steps": int64(2), "gen_ai.usage.output_tokens": int64(20)})
	for _, s := range exp.GetSpans() {
		if len(s.Events) > 0 {
			t.Errorf("%s has events %v with content capture off", s.Name, s.Events)
		}
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := map[string]any{}
	for _, kv := range s.Attributes {
		got[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %v (%T), want %v", s.Name, k, got[k], got[k], v)
		}
	}
}

// Batch runs are siblings under one span.
func TestBatchSiblings(t *testing.T) {
	exp := newKeep()
	tel, _ := New(context.Background(), Options{Exporter: exp})
	ctx, end := tel.StartBatch(context.Background(), 2)
	for _, id := range []string{"a", "b"} {
		for _, ev := range runEvents(ctx, id, "q", "x") {
			tel.Sink().Handle(ev)
		}
	}
	end()
	tel.Shutdown(context.Background())
	var batch trace.SpanID
	for _, s := range exp.GetSpans() {
		if s.Name == "invoke_agent batch" {
			batch = s.SpanContext.SpanID()
		}
	}
	n := 0
	for _, s := range exp.GetSpans() {
		if s.Name == "invoke_agent tact" {
			n++
			if s.Parent.SpanID() != batch {
				t.Errorf("run %v: parent %s, want the batch %s", s.Attributes, s.Parent.SpanID(), batch)
			}
		}
	}
	if n != 2 || !batch.IsValid() {
		t.Fatalf("%d runs, batch %s: %v", n, batch, names(exp.GetSpans()))
	}
}

// A collector that is down, blackholed (takes the connection, never
// answers) or refusing (500) costs one warning line and no more than the
// flush bound: Shutdown never hangs and never fails.
func TestCollectorTrouble(t *testing.T) {
	const flush = 300 * time.Millisecond
	for _, tc := range []struct {
		name     string
		endpoint func(t *testing.T) string
	}{
		{"down", func(t *testing.T) string { return otlptest.Down(t) }},
		{"blackholed", func(t *testing.T) string { return otlptest.Blackhole(t) }},
		{"500", func(t *testing.T) string { return otlptest.New(t, 500).URL }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warn bytes.Buffer
			tel, err := New(context.Background(), Options{Lookup: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": tc.endpoint(t)}),
				FlushTimeout: flush, Warn: &warn})
			if err != nil || tel == nil {
				t.Fatalf("New: %v %v", tel, err)
			}
			for _, ev := range runEvents(context.Background(), "r", "q", "x") {
				tel.Sink().Handle(ev)
			}
			start := time.Now()
			tel.Shutdown(context.Background())
			took := time.Since(start)
			// Bounded by the flush bound (the exporter's own timeout is 10 s):
			// a loose margin for a busy machine, far under a hang.
			if took > flush+3*time.Second {
				t.Errorf("Shutdown took %s with a flush bound of %s", took, flush)
			}
			lines := strings.Split(strings.TrimSpace(warn.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "tact: warning: telemetry: traces not exported to ") {
				t.Errorf("want one warning line, got %q", warn.String())
			}
			tel.Shutdown(context.Background()) // a second Shutdown says nothing more
			if n := strings.Count(warn.String(), "\n"); n != 1 {
				t.Errorf("%d warning lines after a second Shutdown", n)
			}
		})
	}
}

// Off unless an endpoint is set; OTEL_SDK_DISABLED and
// OTEL_TRACES_EXPORTER=none turn it off.
func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
	} {
		if got := Enabled(env(tc.env)); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.env, got, tc.want)
		}
	}
	tel, err := New(context.Background(), Options{Lookup: env(nil)})
	if tel != nil || err != nil {
		t.Fatalf("off: %v %v", tel, err)
	}
	tel.Shutdown(context.Background()) // a nil Telemetry is a no-op
	if tel.Sink() != nil {
		t.Fatal("a nil Telemetry has a sink")
	}
}

// Content goes to span events only with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and then through
// the redactor; without it no text of the query or a tool leaves.
func TestContentCapture(t *testing.T) {
	const secret = "tok-3f9a8b7c6d5e"
	const query = "summarize the quarterly numbers"
	t.Setenv("OTEL_SERVICE_NAME", "cronjob") // read by the SDK
	for _, on := range []bool{false, true} {
		col := otlptest.New(t, 200)
		vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL}
		if on {
			vars["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
		}
		var warn bytes.Buffer
		tel, err := New(context.Background(), Options{Lookup: env(vars), Warn: &warn, FlushTimeout: 5 * time.Second,
			Redact: func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range runEvents(context.Background(), "r", query+" "+secret, secret) {
			tel.Sink().Handle(ev)
		}
		tel.Shutdown(context.Background())
		if warn.Len() > 0 {
			t.Fatalf("warning: %s", warn.String())
		}
		got := col.Raw()
		if len(col.Spans()) == 0 {
			t.Fatal("no spans received")
		}
		if col.Spans()[0].Resource["service.name"] != "cronjob" {
			t.Errorf("OTEL_SERVICE_NAME not used: %v", col.Spans()[0].Resource)
		}
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("capture %v: the secret was exported", on)
		}
		if has := bytes.Contains(got, []byte(query)); has != on {
			t.Errorf("capture %v: query exported: %v", on, has)
		}
		if has := bytes.Contains(got, []byte("file says")); has != on {
			t.Errorf("capture %v: tool output exported: %v", on, has)
		}
	}
}

// keep is an in-memory exporter whose spans outlive Shutdown.
type keep struct{ *tracetest.InMemoryExporter }

func (keep) Shutdown(context.Context) error { return nil }

func newKeep() keep { return keep{tracetest.NewInMemoryExporter()} }

var _ sdktrace.SpanExporter = keep{}

// A tool's call (a context with the run id, no span) carries the run's
// open execute_tool span as its traceparent (MCP _meta); a server reading
// that _meta continues the trace.
func TestPropagation(t *testing.T) {
	exp := newKeep()
	tel, _ := New(context.Background(), Options{Exporter: exp})
	evs := runEvents(context.Background(), "r", "q", "x")
	for _, ev := range evs[:6] { // up to the action: read_file's span is open
		tel.Sink().Handle(ev)
	}
	meta := InjectMeta(tools.WithRunID(context.Background(), "r"))
	tp, _ := meta["traceparent"].(string)
	sc := trace.SpanContextFromContext(ExtractMeta(context.Background(), meta))
	for _, ev := range evs[6:] {
		tel.Sink().Handle(ev)
	}
	tel.Shutdown(context.Background())
	var tool tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool read_file" {
			tool = s
		}
	}
	if !strings.Contains(tp, tool.SpanContext.SpanID().String()) || sc.SpanID() != tool.SpanContext.SpanID() || sc.TraceID() != tool.SpanContext.TraceID() {
		t.Fatalf("traceparent %q (extracted %s), want the tool span %s", tp, sc.SpanID(), tool.SpanContext.SpanID())
	}
	if InjectMeta(context.Background()) != nil {
		t.Error("a context with neither span nor run id carries a traceparent")
	}
}

// Runs of a batch emit at once (make test runs Concurrent tests under -race).
func TestConcurrentRuns(t *testing.T) {
	exp := newKeep()
	tel, _ := New(context.Background(), Options{Exporter: exp})
	ctx, end := tel.StartBatch(context.Background(), 8)
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			id := "run" + itoa(i)
			for _, ev := range runEvents(ctx, id, "q", "x") {
				tel.Sink().Handle(ev)
				InjectMeta(tools.WithRunID(context.Background(), id))
			}
		}()
	}
	for range 8 {
		<-done
	}
	end()
	tel.Shutdown(context.Background())
	if n := len(exp.GetSpans()); n != 1+8*4 {
		t.Fatalf("%d spans, want 33", n)
	}
}
