package telemetry

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
)

// sink turns a run's events into spans: invoke_agent for the run (from
// run_start to termination), plan around the planner, chat from each
// model_call to the run's next event, execute_tool from an action to its
// step. Events of many runs arrive at once (tact batch): runs are kept by id.
type sink struct {
	t       *Telemetry
	mu      sync.Mutex
	runs    map[string]*runSpans
	capture bool
	redact  func(string) string
	max     int
}

type runSpans struct {
	ctx  context.Context // holds the invoke_agent span
	root trace.Span
	plan trace.Span
	// The planner's call (plan): when it began, returned (the first event
	// after it, or its reply), the usage of its replies (model_reply) and
	// the first one's time to first token; planExec: execute_start came,
	// so the plan event is next if the planner made one.
	planStart, planEnd     time.Time
	planUsage              llm.Usage
	planReplies            int
	planFirstMS            float64
	planExec               bool
	summaryFrom, summaryTo time.Time // a compaction's summary call, from its reply
	// calls are the model calls whose usage has not come yet, oldest
	// first: a step carries its call's usage, and a later call (the
	// fallback answer of a stalled run) may come before that step.
	calls    []*call
	tool     trace.Span
	toolCtx  context.Context
	model    string
	provider string
	sandbox  string
	// last is the time of the run's latest event: a compaction's summary
	// call (no model_call of its own) ran since then.
	last time.Time
	// counted is the usage put on plan and chat spans so far: what the
	// run's total has beyond it is a call no step recorded (a fallback
	// answer, a failed call, the question a paused run asks), put on the
	// call still open at the end.
	counted llm.Usage
}

// call is one model call's chat span.
type call struct {
	span  trace.Span
	start time.Time
	// end is the first event after the call (it returned by then); the
	// span stays open for the usage the step after it carries.
	end *time.Time
}

// provider names the backend as gen_ai.provider.name does.
func provider(backend string) string {
	switch backend {
	case "llama":
		return "llama.cpp"
	case "":
		return "unknown"
	}
	return backend
}

func str(ev react.Event, name string) string {
	var s string
	_ = ev.Decode(name, &s)
	return s
}

func (s *sink) Handle(ev react.Event) {
	if ev.Type == react.EventProgress || ev.RunID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[ev.RunID]
	if ev.Type == react.EventRunStart {
		if r == nil {
			s.start(ev)
		}
		return
	}
	if r == nil {
		return
	}
	at := trace.WithTimestamp(ev.Time)
	prev := r.last
	r.last = ev.Time
	// A model call lasts until the run's next event (it has returned by
	// then), but its usage comes with the step that records what it chose:
	// an action, a denial, a hook or an invalid action come first. The
	// span ends at that step, or at the run's end.
	for _, c := range r.calls {
		if c.end == nil {
			t := ev.Time
			c.end = &t
		}
	}
	if r.plan != nil {
		switch {
		case r.planExec && ev.Type != react.EventPlan && ev.Type != react.EventCompaction:
			// The planner made no plan: the run went on without one.
			s.endPlan(r, nil)
		case r.planEnd.IsZero() && ev.Type != react.EventModelReply:
			r.planEnd = ev.Time
		}
	}
	switch ev.Type {
	case react.EventModelReply:
		// A call's reply, as it returns (a run's calls through the engine):
		// the planner's usage for its plan span; a summary's times.
		var u llm.Usage
		_ = ev.Decode("token_usage", &u)
		switch str(ev, "kind") {
		case string(llm.KindPlan):
			if r.plan != nil {
				if r.planReplies == 0 {
					r.planFirstMS = u.FirstTokenMS
				}
				r.planReplies++
				r.planUsage = r.planUsage.Add(u)
				r.planEnd = ev.Time
			}
		case string(llm.KindSummary):
			r.summaryFrom, r.summaryTo = prev, ev.Time
		}
	case react.EventPlanning:
		s.startPlan(r, ev.Time)
		_, r.plan = s.t.tracer.Start(r.ctx, "plan", at, trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "plan"), attribute.String("gen_ai.provider.name", r.provider)))
		r.plan.SetAttributes(r.modelAttr()...)
	case react.EventReplanRequest:
		// The planner's call again, with the transcript: a plan span.
		s.startPlan(r, ev.Time)
		_, r.plan = s.t.tracer.Start(r.ctx, "plan", at, trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "plan"), attribute.String("gen_ai.provider.name", r.provider),
			attribute.Bool("tact.plan.replan", true), attribute.String("tact.reason", str(ev, "trigger"))))
		r.plan.SetAttributes(r.modelAttr()...)
		r.root.AddEvent(ev.Type, at, trace.WithAttributes(attribute.String("tact.reason", str(ev, "trigger"))))
	case react.EventReplan, react.EventReplanFailed:
		if r.plan != nil {
			if ev.Type == react.EventReplanFailed {
				r.plan.SetStatus(codes.Error, "replan failed")
			}
			s.endPlan(r, usageField(ev))
		}
		r.root.AddEvent(ev.Type, at)
	case react.EventPlan, react.EventPlanInvalid:
		span := r.plan
		if span == nil { // a saved plan (tact exec): no planner
			span = r.root
		}
		if ev.Type == react.EventPlanInvalid {
			span.AddEvent("plan_invalid", at, trace.WithAttributes(attribute.String("error", str(ev, "error"))))
			return
		}
		var rows []json.RawMessage
		_ = ev.Decode("plan", &rows)
		span.SetAttributes(attribute.Int("tact.plan.steps", len(rows)), attribute.String("tact.plan.source", str(ev, "source")))
		if r.plan != nil {
			s.content(r.plan, "tact.plan", ev, "plan")
			s.endPlan(r, usageField(ev))
		}
	case react.EventExecuteStart:
		// A planned run's plan event comes after this one.
		r.planExec = r.plan != nil
	case react.EventModelCall:
		name := r.chatName()
		var n struct {
			Kind       string `json:"kind"`
			Prompt     int    `json:"prompt_tokens"`
			MaxTokens  int    `json:"max_tokens"`
			ContextLen int    `json:"context_size"`
		}
		_ = ev.Decode("kind", &n.Kind)
		_ = ev.Decode("prompt_tokens", &n.Prompt)
		_ = ev.Decode("max_tokens", &n.MaxTokens)
		c := &call{start: ev.Time}
		_, c.span = s.t.tracer.Start(r.ctx, name, at, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", r.provider), attribute.Int("gen_ai.request.max_tokens", n.MaxTokens),
			attribute.String("tact.call.kind", n.Kind), attribute.Int("tact.prompt.counted_tokens", n.Prompt)))
		c.span.SetAttributes(r.modelAttr()...)
		r.calls = append(r.calls, c)
	case react.EventAction:
		s.endTool(r, at)
		tool := str(ev, "tool")
		class := ""
		if s.t.toolClass != nil {
			class = s.t.toolClass(tool)
		}
		r.toolCtx, r.tool = s.t.tracer.Start(r.ctx, "execute_tool "+tool, at, trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.tool.type", "function"), attribute.String("tact.tool.class", class),
			attribute.String("tact.tool.source", str(ev, "source")), attribute.String("tact.sandbox.mode", r.sandbox)))
		s.content(r.tool, "gen_ai.tool.call.arguments", ev, "args")
	case react.EventDenied:
		if r.tool != nil {
			d := str(ev, "decision")
			r.tool.SetAttributes(attribute.String("tact.tool.decision", d), attribute.String("tact.tool.decided_by", decidedBy(d)))
			r.tool.SetStatus(codes.Error, "denied")
		}
	case react.EventStep:
		s.step(r, ev, at)
	case react.EventCompaction:
		// A summary call (it emits no model_call): a chat span from the
		// run's previous event to this one, with the summary's usage.
		var u llm.Usage
		if ev.Decode("token_usage", &u) == nil && u != (llm.Usage{}) {
			from, to := prev, ev.Time
			if !r.summaryTo.IsZero() {
				from, to = r.summaryFrom, r.summaryTo
			}
			r.summaryFrom, r.summaryTo = time.Time{}, time.Time{}
			c := &call{start: from, end: &to}
			_, c.span = s.t.tracer.Start(r.ctx, r.chatName(), trace.WithTimestamp(prev), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
				attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", r.provider),
				attribute.String("tact.call.kind", "summary")))
			c.span.SetAttributes(r.modelAttr()...)
			s.endCall(r, c, &u)
		}
		r.root.AddEvent("compaction", at)
	case react.EventHook:
		span := r.tool
		if span == nil {
			span = r.root
		}
		span.AddEvent("hook", at, trace.WithAttributes(attribute.String("tact.hook.event", str(ev, "hook_event")),
			attribute.String("tact.hook.decision", str(ev, "decision"))))
	case react.EventSkip, react.EventInvalidAction, react.EventFallback:
		r.root.AddEvent(ev.Type, at, trace.WithAttributes(attribute.String("tact.reason", str(ev, "skip_reason")+str(ev, "reason")+str(ev, "trigger"))))
	case react.EventTermination:
		s.end(ev.RunID, r, ev)
	}
}

// start opens a run's invoke_agent span under the trace its context holds
// (a batch, an incoming traceparent), else a new trace.
func (s *sink) start(ev react.Event) {
	parent := ev.Ctx
	if parent == nil {
		parent = context.Background()
	}
	var sb struct {
		Mode string `json:"mode"`
	}
	_ = ev.Decode("sandbox", &sb)
	r := &runSpans{model: s.t.model, provider: provider(str(ev, "backend")), sandbox: sb.Mode}
	r.ctx, r.root = s.t.tracer.Start(parent, "invoke_agent tact", trace.WithTimestamp(ev.Time), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "tact"),
		attribute.String("gen_ai.conversation.id", ev.RunID), attribute.String("gen_ai.provider.name", r.provider), attribute.String("tact.mode", str(ev, "mode")),
		attribute.String("tact.sandbox.mode", r.sandbox)))
	r.root.SetAttributes(r.modelAttr()...)
	if from := str(ev, "resumed_from"); from != "" {
		// An answered (or resumed) run goes on with an earlier one, whose
		// trace another process may have sent: the link is its run id.
		r.root.SetAttributes(attribute.String("tact.resumed_from", from))
	}
	s.content(r.root, "gen_ai.user.message", ev, "query")
	s.runs[ev.RunID] = r
}

// modelAttr is gen_ai.request.model when the run names its model.
func (r *runSpans) modelAttr() []attribute.KeyValue {
	if r.model == "" {
		return nil
	}
	return []attribute.KeyValue{attribute.String("gen_ai.request.model", r.model)}
}

// step ends the model call that chose it (with its usage) and the tool
// call it records.
func (s *sink) step(r *runSpans, ev react.Event, at trace.SpanEventOption) {
	var st react.StepTrace
	_ = ev.Decode("step", &st)
	if len(r.calls) > 0 {
		// The step's usage is its call's (a model's action, a plan step's
		// fill), the oldest waiting: calls are recorded in order.
		var u *llm.Usage
		if st.TokenUsage != (llm.Usage{}) {
			u = &st.TokenUsage
		}
		c := r.calls[0]
		r.calls = r.calls[1:]
		s.endCall(r, c, u)
	}
	if r.tool == nil {
		if st.SkipReason != "" {
			r.root.AddEvent("skip", at, trace.WithAttributes(attribute.String("tact.reason", st.SkipReason)))
		}
		return
	}
	r.tool.SetAttributes(attribute.Int("tact.tool.exit_code", st.ExitCode), attribute.Int("tact.tool.output_bytes", len(st.Observation)))
	if st.Decision == "" {
		// The gate was not asked: a read tool, or a step allowed by its
		// class (the policy's rule).
		st.Decision = "allow"
	}
	r.tool.SetAttributes(attribute.String("tact.tool.decision", st.Decision), attribute.String("tact.tool.decided_by", decidedBy(st.Decision)))
	if st.Error != "" || st.ExitCode != 0 {
		r.tool.SetStatus(codes.Error, "exit "+itoa(st.ExitCode))
	}
	if s.capture {
		r.tool.AddEvent("gen_ai.tool.result", trace.WithAttributes(attribute.String("content", s.cut(st.Observation))))
	}
	s.endTool(r, at)
}

// startPlan notes a planner call's start (its span is opened by the
// caller).
func (s *sink) startPlan(r *runSpans, at time.Time) {
	r.planStart, r.planEnd, r.planUsage, r.planReplies, r.planFirstMS, r.planExec = at, time.Time{}, llm.Usage{}, 0, 0, false
}

// endPlan ends the plan span with its usage: its replies' (model_reply),
// else the plan event's (u), and where the call returned.
func (s *sink) endPlan(r *runSpans, u *llm.Usage) {
	if r.planReplies > 0 {
		pu := r.planUsage
		pu.FirstTokenMS = r.planFirstMS
		u = &pu
	}
	end := r.planEnd
	if end.IsZero() {
		end = r.last
	}
	if u != nil {
		r.plan.SetAttributes(callUsage(*u)...)
		r.counted = r.counted.Add(*u)
	}
	s.t.record(r, "plan", r.planStart, end, u)
	r.plan.End(trace.WithTimestamp(end))
	r.plan = nil
}

// usageField is an event's token_usage, nil without one.
func usageField(ev react.Event) *llm.Usage {
	if _, ok := ev.Fields["token_usage"]; !ok {
		return nil
	}
	var u llm.Usage
	if ev.Decode("token_usage", &u) != nil {
		return nil
	}
	return &u
}

// endCall ends a model call's span with its usage u (nil: not known),
// where the call returned: at the first event after it.
func (s *sink) endCall(r *runSpans, c *call, u *llm.Usage) {
	end := r.last
	if c.end != nil {
		end = *c.end
	}
	if u != nil {
		c.span.SetAttributes(callUsage(*u)...)
		r.counted = r.counted.Add(*u)
	}
	s.t.record(r, "chat", c.start, end, u)
	c.span.End(trace.WithTimestamp(end))
}

// callUsage is one call's usage attributes, time to first token
// (gen_ai.response.time_to_first_chunk, seconds) where the backend saw it.
func callUsage(u llm.Usage) []attribute.KeyValue {
	a := usage(u)
	if u.FirstTokenMS > 0 {
		a = append(a, attribute.Float64("gen_ai.response.time_to_first_chunk", u.FirstTokenMS/1000))
	}
	return a
}

// chatName is a chat span's name: chat and the model, as the conventions
// name it.
func (r *runSpans) chatName() string {
	if r.model != "" {
		return "chat " + r.model
	}
	return "chat"
}

func (s *sink) endTool(r *runSpans, at trace.SpanEventOption) {
	if r.tool != nil {
		r.tool.End(at)
		r.tool, r.toolCtx = nil, nil
	}
}

// end closes a run's spans with its outcome: termination reason, exit
// code, the budgets used and the run's token totals.
func (s *sink) end(id string, r *runSpans, ev react.Event) {
	at := trace.WithTimestamp(ev.Time)
	s.endTool(r, at)
	if r.plan != nil {
		s.endPlan(r, nil)
	}
	var total llm.Usage
	_ = ev.Decode("token_usage", &total)
	for i, c := range r.calls {
		// A call no step recorded (a fallback answer, a failed call, a
		// paused run's question): its usage is what the total has beyond
		// the spans' (one such call at most, in practice).
		var u *llm.Usage
		if rest := sub(total, r.counted); i == 0 && rest != (llm.Usage{}) && rest.PromptTokens >= 0 && rest.CompletionTokens >= 0 && rest.CachedTokens >= 0 {
			u = &rest
		}
		s.endCall(r, c, u)
	}
	r.calls = nil
	var f struct {
		Reason  string    `json:"reason"`
		Success bool      `json:"success"`
		Exit    int       `json:"exit_code"`
		Usage   llm.Usage `json:"token_usage"`
		State   *react.State
		MS      int64 `json:"execution_time_ms"`
	}
	_ = ev.Decode("reason", &f.Reason)
	_ = ev.Decode("success", &f.Success)
	_ = ev.Decode("exit_code", &f.Exit)
	_ = ev.Decode("token_usage", &f.Usage)
	attrs := append(usage(f.Usage), attribute.String("tact.termination_reason", f.Reason),
		attribute.Int("tact.exit_code", f.Exit), attribute.Bool("tact.success", f.Success))
	var st react.State
	if _, ok := ev.Fields["state"]; ok && ev.Decode("state", &st) == nil {
		attrs = append(attrs, attribute.Int("tact.budget.steps_used", st.Attempts), attribute.Int("tact.budget.max_steps", st.MaxSteps),
			attribute.Int("tact.replans", st.Replans), attribute.Int("tact.compactions", st.Compactions))
	}
	r.root.SetAttributes(attrs...)
	switch {
	case f.Reason == string(react.ReasonNeedsInput):
		// Paused for a person, not failed: tact answer goes on with it.
		s.paused(r, ev, at)
	case !f.Success:
		r.root.SetStatus(codes.Error, f.Reason)
	}
	if s.capture {
		if _, ok := ev.Fields["final_answer"]; ok {
			r.root.AddEvent("gen_ai.assistant.message", trace.WithAttributes(attribute.String("content", s.cut(str(ev, "final_answer")))))
		}
	}
	r.root.End(at)
	delete(s.runs, id)
}

// endAll ends the spans of runs that never terminated (the process is
// ending), so they are exported.
func (s *sink) endAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.runs {
		for _, c := range r.calls {
			c.span.End()
		}
		for _, sp := range []trace.Span{r.tool, r.plan} {
			if sp != nil {
				sp.End()
			}
		}
		r.root.SetStatus(codes.Error, "not finished")
		r.root.End()
		delete(s.runs, id)
	}
}

// content adds field's text as a span event, only when content capture is
// on, redacted and cut.
func (s *sink) content(span trace.Span, name string, ev react.Event, field string) {
	if !s.capture {
		return
	}
	var text string
	if ev.Decode(field, &text) != nil {
		raw, _ := json.Marshal(ev.Fields[field])
		if rm, ok := ev.Fields[field].(json.RawMessage); ok {
			raw = rm
		}
		text = string(raw)
	}
	span.AddEvent(name, trace.WithAttributes(attribute.String("content", s.cut(text))))
}

func (s *sink) cut(text string) string {
	if s.redact != nil {
		text = s.redact(text)
	}
	if len(text) > s.max {
		text = strings.ToValidUTF8(text[:s.max], "") + " [cut]"
	}
	return text
}

// usage is a llm.Usage in the GenAI attributes: input tokens are all the
// prompt's (evaluated and reused), cache_read the reused ones.
func usage(u llm.Usage) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int("gen_ai.usage.input_tokens", u.PromptTokens+u.CachedTokens),
		attribute.Int("gen_ai.usage.output_tokens", u.CompletionTokens),
		attribute.Int("gen_ai.usage.cache_read.input_tokens", u.CachedTokens),
		attribute.Int("tact.usage.prompt_tokens", u.PromptTokens),
	}
}

// decidedBy says who made a gate decision: a rule (policy, --yes,
// read-only), a hook, or a person or --approve-cmd.
func decidedBy(decision string) string {
	d := strings.TrimPrefix(decision, "dry_run:")
	switch {
	case strings.Contains(d, "hook"):
		return "hook"
	case d == "approved" || d == "rejected" || d == "approved_always":
		return "approver"
	case d == "":
		return ""
	}
	return "rule"
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// paused marks a run that waits for an answer (needs_input): what it
// asks is an event, its text only with content capture on.
func (s *sink) paused(r *runSpans, ev react.Event, at trace.SpanEventOption) {
	var q react.Question
	_ = ev.Decode("question", &q)
	attrs := []attribute.KeyValue{attribute.String("tact.question.kind", q.Kind)}
	if q.Call != nil {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", q.Call.Tool))
	}
	if s.capture && q.Question != "" {
		attrs = append(attrs, attribute.String("content", s.cut(q.Question)))
	}
	r.root.AddEvent("tact.needs_input", at, trace.WithAttributes(attrs...))
}

// sub is a-b, field by field (the cache and CPU figures aside).
func sub(a, b llm.Usage) llm.Usage {
	return llm.Usage{PromptTokens: a.PromptTokens - b.PromptTokens, CachedTokens: a.CachedTokens - b.CachedTokens,
		CompletionTokens: a.CompletionTokens - b.CompletionTokens}
}
