package telemetry

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
)

// keepMetrics is an in-memory metric exporter: each histogram's recorded
// count and sum by the value of one attribute (gen_ai.token.type or
// gen_ai.operation.name), as last exported (cumulative).
type keepMetrics struct {
	mu    sync.Mutex
	count map[string]uint64
	sum   map[string]float64
}

func (k *keepMetrics) Temporality(ik sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(ik)
}
func (k *keepMetrics) Aggregation(ik sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(ik)
}
func (k *keepMetrics) ForceFlush(context.Context) error { return nil }
func (k *keepMetrics) Shutdown(context.Context) error   { return nil }
func (k *keepMetrics) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.count, k.sum = map[string]uint64{}, map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					typ, _ := p.Attributes.Value("gen_ai.token.type")
					k.count[m.Name+" "+typ.AsString()] += p.Count
					k.sum[m.Name+" "+typ.AsString()] += float64(p.Sum)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					op, _ := p.Attributes.Value("gen_ai.operation.name")
					k.count[m.Name+" "+op.AsString()] += p.Count
					k.sum[m.Name+" "+op.AsString()] += p.Sum
				}
			}
		}
	}
	return nil
}

// callEvents is a free ReAct run whose calls end in every way a call
// ends: a step after a denial, an invalid action's step, a compaction's
// summary (no model_call of its own), and a fallback answer no step
// records. Each usage is distinct so a misplaced one shows.
func callEvents(id string) ([]react.Event, []llm.Usage) {
	t0 := time.Now()
	ev := func(i int, typ string, f map[string]any) react.Event {
		return react.Event{RunID: id, Type: typ, Time: t0.Add(time.Duration(i) * time.Millisecond), Fields: f}
	}
	u := []llm.Usage{
		{PromptTokens: 300, CompletionTokens: 11, FirstTokenMS: 12.5},
		{PromptTokens: 20, CachedTokens: 290, CompletionTokens: 7, FirstTokenMS: 3},
		{PromptTokens: 150, CompletionTokens: 40},
		{PromptTokens: 25, CachedTokens: 60, CompletionTokens: 5, FirstTokenMS: 8},
		{PromptTokens: 30, CachedTokens: 100, CompletionTokens: 9},
	}
	var total llm.Usage
	for _, x := range u {
		total = total.Add(x)
	}
	step := func(x llm.Usage) map[string]any {
		return map[string]any{"step": raw(react.StepTrace{Action: react.ToolCall{Tool: "run_command"}, Source: "model", TokenUsage: x})}
	}
	return []react.Event{
		ev(0, react.EventRunStart, map[string]any{"mode": "run", "backend": "llama"}),
		ev(1, react.EventExecuteStart, map[string]any{}),
		ev(2, react.EventModelCall, map[string]any{"kind": "action"}),
		ev(40, react.EventAction, map[string]any{"tool": "run_command"}),
		ev(41, react.EventDenied, map[string]any{"decision": "deny"}),
		ev(42, react.EventStep, step(u[0])),
		ev(43, react.EventModelCall, map[string]any{"kind": "action"}),
		ev(60, react.EventInvalidAction, map[string]any{"reason": "bad"}),
		ev(61, react.EventStep, step(u[1])),
		ev(90, react.EventCompaction, map[string]any{"token_usage": raw(u[2])}),
		// A plan step's fill, then the stalled run's fallback answer, then
		// the fill's step.
		ev(91, react.EventModelCall, map[string]any{"kind": "fill"}),
		ev(100, react.EventModelCall, map[string]any{"kind": "answer"}),
		ev(120, react.EventFallback, map[string]any{"reason": "stalled"}),
		ev(121, react.EventStep, step(u[3])),
		ev(122, react.EventTermination, map[string]any{"reason": "max_steps", "success": false, "exit_code": 4, "token_usage": raw(total)}),
	}, u
}

// Every model call is a chat span with its own tokens (their sum is the
// run's total), time to first token where the backend saw it, and the
// same calls in the GenAI client metrics.
func TestCallSpansAndMetrics(t *testing.T) {
	exp, mexp := newKeep(), &keepMetrics{}
	tel, err := New(context.Background(), Options{Exporter: exp, MetricExporter: mexp})
	if err != nil {
		t.Fatal(err)
	}
	tel.SetRuntime("tiny.gguf", nil)
	evs, u := callEvents("r1")
	for _, ev := range evs {
		tel.Sink().Handle(ev)
	}
	tel.Shutdown(context.Background())
	var chats []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "chat tiny.gguf" {
			chats = append(chats, s)
		}
	}
	if len(chats) != 5 {
		t.Fatalf("%d chat spans, want 5: %v", len(chats), names(exp.GetSpans()))
	}
	// Spans are exported as they end: in call order.
	kinds := []string{"action", "action", "summary", "fill", "answer"}
	for i, s := range chats {
		checkAttrs(t, s, map[string]any{"tact.call.kind": kinds[i], "gen_ai.usage.input_tokens": int64(u[i].PromptTokens + u[i].CachedTokens),
			"gen_ai.usage.output_tokens": int64(u[i].CompletionTokens), "gen_ai.usage.cache_read.input_tokens": int64(u[i].CachedTokens),
			"gen_ai.provider.name": "llama.cpp", "gen_ai.request.model": "tiny.gguf"})
		ttft, want := attr(s, "gen_ai.response.time_to_first_chunk"), u[i].FirstTokenMS/1000
		if (want == 0 && ttft != nil) || (want != 0 && ttft != want) {
			t.Errorf("call %d: time to first chunk %v, want %v", i, ttft, want)
		}
		if !s.EndTime.After(s.StartTime) {
			t.Errorf("call %d: %s to %s", i, s.StartTime, s.EndTime)
		}
	}
	// The first call ended when it returned (its action), not at its step.
	if d := chats[0].EndTime.Sub(chats[0].StartTime); d != 38*time.Millisecond {
		t.Errorf("first call lasted %s, want 38ms (model_call to action)", d)
	}
	mexp.mu.Lock()
	defer mexp.mu.Unlock()
	want := map[string]float64{"gen_ai.client.token.usage input": 300 + 310 + 150 + 85 + 130, "gen_ai.client.token.usage output": 11 + 7 + 40 + 5 + 9}
	for k, v := range want {
		if mexp.sum[k] != v || mexp.count[k] != 5 {
			t.Errorf("%s: %d values summing to %v, want 5 summing to %v", k, mexp.count[k], mexp.sum[k], v)
		}
	}
	if n := mexp.count["gen_ai.client.operation.duration chat"]; n != 5 {
		t.Errorf("%d chat durations, want 5 (%v)", n, mexp.count)
	}
}

func attr(s tracetest.SpanStub, key string) any {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.AsInterface()
		}
	}
	return nil
}

// A paused run (needs_input) is no error: its span says it waits, the
// question's text only with content capture on; the run that answers it
// names it (tact.resumed_from).
func TestPausedRun(t *testing.T) {
	for _, capture := range []bool{false, true} {
		exp := newKeep()
		tel, _ := New(context.Background(), Options{Exporter: exp, Lookup: env(map[string]string{
			"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": map[bool]string{true: "true"}[capture]})})
		t0 := time.Now()
		for i, ev := range []react.Event{
			{RunID: "p", Type: react.EventRunStart, Fields: map[string]any{"backend": "script"}},
			{RunID: "p", Type: react.EventModelCall, Fields: map[string]any{"kind": "action"}},
			{RunID: "p", Type: react.EventAction, Fields: map[string]any{"tool": "ask_user"}},
			{RunID: "p", Type: react.EventTermination, Fields: map[string]any{"reason": "needs_input", "success": false, "exit_code": 12,
				"question": raw(react.Question{Kind: react.KindQuestion, Question: "which colour?"})}},
			{RunID: "a", Type: react.EventRunStart, Fields: map[string]any{"backend": "script", "resumed_from": "p"}},
			{RunID: "a", Type: react.EventTermination, Fields: map[string]any{"reason": "success", "success": true}},
		} {
			ev.Time = t0.Add(time.Duration(i) * time.Millisecond)
			tel.Sink().Handle(ev)
		}
		tel.Shutdown(context.Background())
		var paused, answered tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			switch attr(s, "gen_ai.conversation.id") {
			case "p":
				paused = s
			case "a":
				answered = s
			}
		}
		if paused.Status.Code == codes.Error || attr(paused, "tact.termination_reason") != "needs_input" || attr(paused, "tact.exit_code") != int64(12) {
			t.Errorf("paused run: status %v, attributes %v", paused.Status, paused.Attributes)
		}
		var asked []sdktrace.Event
		for _, e := range paused.Events {
			if e.Name == "tact.needs_input" {
				asked = append(asked, e)
			}
		}
		if len(asked) != 1 {
			t.Fatalf("paused run's events: %+v", paused.Events)
		}
		var content any
		for _, kv := range asked[0].Attributes {
			if kv.Key == "content" {
				content = kv.Value.AsString()
			}
		}
		if (content == "which colour?") != capture || (content != nil) != capture {
			t.Errorf("capture %v: question content %v", capture, content)
		}
		if attr(answered, "tact.resumed_from") != "p" {
			t.Errorf("answered run: %v", answered.Attributes)
		}
	}
}

// Metrics follow the same variables, with their own endpoint and
// OTEL_METRICS_EXPORTER=none.
func TestMetricsSwitch(t *testing.T) {
	for _, tc := range []struct {
		env           map[string]string
		traces, metrs bool
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, true, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_METRICS_EXPORTER": "none"}, true, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://x/v1/metrics"}, false, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false, false},
	} {
		if Enabled(env(tc.env)) != tc.traces || metricsOn(env(tc.env)) != tc.metrs {
			t.Errorf("%v: traces %v metrics %v, want %v %v", tc.env, Enabled(env(tc.env)), metricsOn(env(tc.env)), tc.traces, tc.metrs)
		}
		tel, err := New(context.Background(), Options{Lookup: env(tc.env), FlushTimeout: time.Millisecond})
		if err != nil || (tel == nil) != (!tc.traces && !tc.metrs) || (tel != nil && ((tel.tp != nil) != tc.traces || (tel.meters != nil) != tc.metrs)) {
			t.Errorf("%v: New %+v %v", tc.env, tel, err)
		}
		tel.Shutdown(context.Background())
	}
	if u, _ := signalURL(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}), "METRICS", "/v1/metrics", "http/protobuf"); u != "http://c:4318/v1/metrics" {
		t.Errorf("metrics URL %s", u)
	}
}

// A planned run's events in the engine's order: the planner's reply
// (model_reply) before execute_start, the plan after it with the same
// usage. The plan span has it once, the plan's rows, and ends at the reply.
func TestPlanSpanFromReply(t *testing.T) {
	exp := newKeep()
	tel, _ := New(context.Background(), Options{Exporter: exp})
	t0 := time.Now()
	pu := llm.Usage{PromptTokens: 40, CachedTokens: 3980, CompletionTokens: 119, FirstTokenMS: 150}
	total := llm.Usage{}.Add(pu)
	for i, ev := range []react.Event{
		{Type: react.EventRunStart, Fields: map[string]any{"backend": "llama"}},
		{Type: react.EventPlanning},
		{Type: react.EventModelReply, Fields: map[string]any{"kind": "plan", "token_usage": raw(pu)}},
		{Type: react.EventExecuteStart},
		{Type: react.EventPlan, Fields: map[string]any{"plan": []any{1, 2}, "source": "planner", "token_usage": raw(pu)}},
		{Type: react.EventTermination, Fields: map[string]any{"reason": "success", "success": true, "token_usage": raw(total)}},
	} {
		ev.RunID, ev.Time = "r", t0.Add(time.Duration(i)*10*time.Millisecond)
		tel.Sink().Handle(ev)
	}
	tel.Shutdown(context.Background())
	var plans []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "plan" {
			plans = append(plans, s)
		}
	}
	if len(plans) != 1 {
		t.Fatalf("plan spans: %v", names(exp.GetSpans()))
	}
	checkAttrs(t, plans[0], map[string]any{"gen_ai.usage.input_tokens": int64(4020), "gen_ai.usage.output_tokens": int64(119),
		"gen_ai.usage.cache_read.input_tokens": int64(3980), "tact.plan.steps": int64(2), "gen_ai.response.time_to_first_chunk": 0.15})
	if d := plans[0].EndTime.Sub(plans[0].StartTime); d != 10*time.Millisecond {
		t.Errorf("plan span lasted %s, want 10ms (planning to the reply)", d)
	}
}
