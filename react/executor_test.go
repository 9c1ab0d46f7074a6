package react

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/tools"
)

// fakeTool is a deterministic tool: "echo" prints args.msg, "fail" fails
// with exit code 1 and stderr, "slow" waits for ctx, "poke" is write-class.
type fakeTool struct {
	name  string
	class tools.Class
	calls *int
}

func (f fakeTool) Name() string        { return f.name }
func (f fakeTool) Description() string { return "test tool " + f.name }
func (f fakeTool) Class() tools.Class  { return f.class }
func (f fakeTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"},"n":{"type":"integer"}},"required":["msg"],"additionalProperties":false}`)
}
func (f fakeTool) Run(ctx context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
	if f.calls != nil {
		*f.calls++
	}
	var a struct {
		Msg string `json:"msg"`
	}
	_ = json.Unmarshal(args, &a)
	switch f.name {
	case "fail":
		return tools.Result{Output: "partial " + a.Msg, Stderr: "boom: " + a.Msg, ExitCode: 1, Err: errors.New("exit status 1")}
	case "slow":
		<-ctx.Done()
		return tools.Result{Err: ctx.Err(), ExitCode: -1}
	}
	return tools.Result{Output: "echo: " + a.Msg}
}

func registry(calls *int) *tools.Registry {
	return tools.NewRegistry(
		tools.FinalAnswerTool{},
		fakeTool{name: "echo", class: tools.ClassRead, calls: calls},
		fakeTool{name: "other", class: tools.ClassRead, calls: calls},
		fakeTool{name: "fail", class: tools.ClassExec, calls: calls},
		fakeTool{name: "slow", class: tools.ClassExec, calls: calls},
		fakeTool{name: "poke", class: tools.ClassWrite, calls: calls},
	)
}

// recorder wraps a backend and keeps every request.
type recorder struct {
	mu   sync.Mutex
	b    llm.Backend
	reqs []llm.Request
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.b.Complete(ctx, req)
}
func (r *recorder) Close() error { return nil }
func (r *recorder) kinds() []llm.Kind {
	var out []llm.Kind
	for _, q := range r.reqs {
		out = append(out, q.Kind)
	}
	return out
}

type harness struct {
	t       testing.TB
	ex      *Executor
	rec     *recorder
	trace   bytes.Buffer
	calls   int
	planner *planner.Planner
}

func newHarness(t testing.TB, script string) *harness {
	t.Helper()
	h := &harness{t: t}
	reg := registry(&h.calls)
	var backend llm.Backend = llm.None{}
	if script != "" {
		sc, err := llm.ParseScript(strings.NewReader(script), "test.script")
		if err != nil {
			t.Fatal(err)
		}
		h.rec = &recorder{b: sc}
		backend = h.rec
	}
	h.ex = &Executor{
		Options: Options{
			MaxIterations: 10, RetryBuffer: 2, ReplanThreshold: 2, RequireThought: true, MinThoughtLength: 10,
			StallThreshold: 3, MaxObservationTokens: 2000,
		},
		Registry: reg, Env: &tools.Env{Workspace: t.TempDir()}, Backend: backend,
	}
	h.ex.Events = NewTraceWriter(&h.trace, nil)
	if script != "" {
		h.planner = &planner.Planner{Backend: backend, Registry: reg, Tools: reg.Names()}
		h.ex.Planner = h.planner
	}
	return h
}

func (h *harness) plan(jsonl string) *planner.Plan {
	h.t.Helper()
	p, err := planner.Parse(strings.NewReader(jsonl), "plan.jsonl", h.ex.Registry)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) run(plan string) *Result {
	h.t.Helper()
	var p *planner.Plan
	if plan != "" {
		p = h.plan(plan)
	}
	return h.ex.Run(context.Background(), "test query", p)
}

func (h *harness) events(name string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(h.trace.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			h.t.Fatalf("trace line %q: %v", line, err)
		}
		if m["event"] == name {
			out = append(out, m)
		}
	}
	return out
}

func action(thought, tool string, args string) string {
	b, _ := json.Marshal(map[string]any{"kind": "action", "text": fmt.Sprintf(`{"thought":%q,"tool":%q,"args":%s}`, thought, tool, args)})
	return string(b) + "\n"
}

func planReply(steps ...string) string {
	b, _ := json.Marshal(map[string]any{"kind": "plan", "text": `{"plan":[` + strings.Join(steps, ",") + `]}`})
	return string(b) + "\n"
}

func planStep(tool, args string) string {
	return fmt.Sprintf(`{"thought":"planned step for %s","tool":%q,"args":%s}`, tool, tool, args)
}

func skipReasons(res *Result) []string {
	var out []string
	for _, s := range res.Trace.Steps {
		if s.SkipReason != "" {
			out = append(out, s.SkipReason)
		}
	}
	return out
}

const thought = "the observation tells me what I need"

func TestFixedPlanRunsWithoutModel(t *testing.T) {
	h := newHarness(t, "")
	res := h.run(`{"type":"plan","query":"q","created":"2026-01-01T00:00:00Z"}
{"step":1,"thought":"say hi","tool":"echo","args":{"msg":"hi"}}
{"step":2,"tool":"echo","args":{"msg":{"$jq":".steps[0].output + \"!\""}}}
{"step":3,"tool":"final_answer","args":{"answer":{"$jq":".steps[-1].output"}}}
`)
	if res.TerminationReason != ReasonSuccess || res.ExitCode() != 0 {
		t.Fatalf("reason %s (%s)", res.TerminationReason, res.Message)
	}
	if res.FinalAnswer != "echo: echo: hi!" {
		t.Fatalf("answer %q", res.FinalAnswer)
	}
	if res.State.Step != 3 || res.State.Attempts != 3 || res.State.RetryCount != 0 || res.State.MaxSteps != 5 {
		t.Fatalf("state %+v", res.State)
	}
	if res.Trace.Steps[0].Thought != "say hi" || res.Trace.Steps[0].Source != "plan" {
		t.Fatalf("step 1 %+v", res.Trace.Steps[0])
	}
}

func TestBudgetArithmetic(t *testing.T) {
	tests := []struct {
		name                                       string
		buffer                                     int
		plan                                       string
		wantMax, wantAttempts, wantRetry, wantStep int
		reason                                     Reason
	}{
		{"all succeed", 2, `{"tool":"echo","args":{"msg":"a"}}
{"tool":"final_answer","args":{"answer":"done"}}`, 4, 2, 0, 2, ReasonSuccess},
		{"buffer zero, failure ends budget", 0, `{"tool":"fail","args":{"msg":"a"}}
{"tool":"final_answer","args":{"answer":"done"}}`, 2, 2, 2, 0, ReasonMaxIterations},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := ""
			if tc.reason != ReasonSuccess {
				// After the failure the model retries the failing tool with new args.
				script = action(thought, "fail", `{"msg":"b"}`) + `{"kind":"fallback","text":"{\"answer\":\"gave up\"}"}` + "\n"
			}
			h := newHarness(t, script)
			h.ex.Planner = nil
			h.ex.RetryBuffer = tc.buffer
			res := h.run(tc.plan)
			if res.TerminationReason != tc.reason {
				t.Fatalf("reason %s (%s)", res.TerminationReason, res.Message)
			}
			st := res.State
			if st.MaxSteps != tc.wantMax || st.Attempts != tc.wantAttempts || st.RetryCount != tc.wantRetry || st.Step != tc.wantStep {
				t.Fatalf("state %+v", st)
			}
		})
	}
}

// MaxIterations, when set, bounds a planned run's budget (and after a
// replan); a free run's budget is MaxIterations, 10 when unset.
func TestMaxIterationsBoundsPlannedRuns(t *testing.T) {
	plan := `{"tool":"echo","args":{"msg":"a"}}
{"tool":"echo","args":{"msg":"b"}}
{"tool":"echo","args":{"msg":"c"}}
{"tool":"final_answer","args":{"answer":"done"}}`
	for _, tc := range []struct {
		max, wantMax, wantAttempts int
		reason                     Reason
	}{
		{0, 6, 4, ReasonSuccess},
		{50, 6, 4, ReasonSuccess},
		{2, 2, 2, ReasonMaxIterations},
	} {
		h := newHarness(t, `{"kind":"fallback","text":"{\"answer\":\"partial\"}"}`+"\n")
		h.ex.Planner = nil
		h.ex.RetryBuffer = 2
		h.ex.MaxIterations = tc.max
		res := h.run(plan)
		if res.TerminationReason != tc.reason || res.State.MaxSteps != tc.wantMax || res.State.Attempts != tc.wantAttempts {
			t.Errorf("max %d: %s, state %+v; want %s, max_steps %d, attempts %d", tc.max, res.TerminationReason, res.State, tc.reason, tc.wantMax, tc.wantAttempts)
		}
	}
	for max, want := range map[int]int{0: 10, 3: 3} {
		e := Options{MaxIterations: max}
		if got := e.freeBudget(); got != want {
			t.Errorf("free budget with MaxIterations %d: %d, want %d", max, got, want)
		}
	}
}

func TestStepAdvancesOnlyOnSuccess(t *testing.T) {
	h := newHarness(t, action(thought, "echo", `{"msg":"recovered"}`))
	h.ex.Planner = nil
	h.ex.AllowTools = []string{"fail", "echo"}
	res := h.run(`{"tool":"fail","args":{"msg":"x"}}
{"tool":"final_answer","args":{"answer":"ok"}}`)
	// fail (attempt 1, step 0, retry 1) -> model echo (attempt 2, step 1) -> model is asked again? no:
	// echo diverged from pending "fail", so the pending step stays; no planner means no replan,
	// and the script is used up, so the run ends with an error from the script backend.
	if res.State.Attempts != 2 || res.State.Step != 1 || res.State.RetryCount != 1 || res.State.PlanIndex != 0 {
		t.Fatalf("state %+v", res.State)
	}
	if res.State.PlanSkipReason != SkipPlanToolMismatch || res.State.PendingPlanStep != 1 {
		t.Fatalf("skip %q pending %d", res.State.PlanSkipReason, res.State.PendingPlanStep)
	}
}

func TestToolNotPermittedSkip(t *testing.T) {
	h := newHarness(t, action(thought, "final_answer", `{"answer":"done without other"}`))
	h.ex.AllowTools = []string{"echo"}
	res := h.run(`{"tool":"echo","args":{"msg":"a"}}
{"tool":"other","args":{"msg":"b"}}
{"tool":"final_answer","args":{"answer":"planned"}}`)
	if res.TerminationReason != ReasonSuccess || res.FinalAnswer != "done without other" {
		t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
	}
	if got := skipReasons(res); len(got) != 1 || got[0] != SkipToolNotPermitted {
		t.Fatalf("skips %v", got)
	}
	skip := res.Trace.Steps[1]
	if skip.PlanStep != 2 || skip.Action.Tool != "other" {
		t.Fatalf("skip step %+v", skip)
	}
	// The model was asked with the pending step still at 2, and "other" is not offered.
	last := h.rec.reqs[len(h.rec.reqs)-1]
	if !strings.Contains(last.Messages[len(last.Messages)-1].Content, "Pending plan step 2: other") {
		t.Fatalf("prompt lacks pending step: %s", last.Messages[len(last.Messages)-1].Content)
	}
	if strings.Contains(string(last.Schema), `"const":"other"`) {
		t.Fatal("schema offers a tool that is not permitted")
	}
	if ev := h.events("skip"); len(ev) != 1 || ev[0]["skip_reason"] != SkipToolNotPermitted {
		t.Fatalf("trace skip events %v", ev)
	}
}

func TestSkipKeepsPlanIndexWithoutModel(t *testing.T) {
	h := newHarness(t, "")
	h.ex.AllowTools = []string{"echo"}
	res := h.run(`{"tool":"other","args":{"msg":"b"}}
{"tool":"final_answer","args":{"answer":"planned"}}`)
	if res.TerminationReason != ReasonFailure || res.ExitCode() != 3 {
		t.Fatalf("reason %s", res.TerminationReason)
	}
	if res.State.PlanIndex != 0 || res.State.PendingPlanStep != 1 || res.State.PlanSkipReason != SkipToolNotPermitted {
		t.Fatalf("state %+v", res.State)
	}
	if !strings.Contains(res.Message, "no model") {
		t.Fatalf("message %q", res.Message)
	}
}

func TestInvalidActionRecorded(t *testing.T) {
	script := `{"kind":"action","text":"this is not json"}
{"kind":"action","text":"{\"thought\":\"ok\",\"tool\":\"echo\",\"args\":{\"msg\":\"x\"}}"}
{"kind":"action","text":"{\"thought\":\"a long enough thought\",\"tool\":\"echo\",\"args\":{\"wrong\":1}}"}
` + action(thought, "final_answer", `{"answer":"fine"}`)
	h := newHarness(t, script)
	h.ex.NoPlan = true
	res := h.run("")
	if res.TerminationReason != ReasonSuccess || res.FinalAnswer != "fine" {
		t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
	}
	if got := skipReasons(res); strings.Join(got, ",") != "invalid_action,invalid_action,invalid_action" {
		t.Fatalf("skips %v", got)
	}
	if !strings.Contains(res.Trace.Steps[0].Error, "invalid JSON") {
		t.Fatalf("error %q", res.Trace.Steps[0].Error)
	}
	if !strings.Contains(res.Trace.Steps[1].Error, "thought") {
		t.Fatalf("short thought accepted: %q", res.Trace.Steps[1].Error)
	}
	if res.State.RetryCount != 3 || res.State.Attempts != 4 {
		t.Fatalf("state %+v", res.State)
	}
	if len(h.events("invalid_action")) != 3 {
		t.Fatal("invalid actions missing from the trace")
	}
}

func TestDegenerateThoughts(t *testing.T) {
	for _, tc := range []struct {
		thought string
		bad     bool
	}{
		{"I will use the tool", true},
		{"  thinking...  ", true},
		{"use echo", true},
		{"echo echo echo echo", true},
		{"short", true},
		{"The config file should say which port is used", false},
	} {
		got := degenerateThought(tc.thought, "echo", 10)
		if (got != "") != tc.bad {
			t.Errorf("%q: got %q", tc.thought, got)
		}
	}
}

func TestRequireThoughtOff(t *testing.T) {
	h := newHarness(t, `{"kind":"action","text":"{\"tool\":\"final_answer\",\"args\":{\"answer\":\"a\"}}"}`+"\n")
	h.ex.NoPlan = true
	h.ex.RequireThought = false
	if res := h.run(""); res.TerminationReason != ReasonSuccess {
		t.Fatalf("%s %s", res.TerminationReason, res.Message)
	}
}

func TestDuplicateActionSkipped(t *testing.T) {
	script := action(thought, "echo", `{"msg":"a"}`) +
		action(thought, "echo", `{ "msg" : "a" }`) +
		action(thought, "final_answer", `{"answer":"done"}`)
	h := newHarness(t, script)
	h.ex.NoPlan = true
	res := h.run("")
	if res.TerminationReason != ReasonSuccess {
		t.Fatalf("%s %s", res.TerminationReason, res.Message)
	}
	if h.calls != 1 {
		t.Fatalf("tool ran %d times, want 1", h.calls)
	}
	if got := skipReasons(res); len(got) != 1 || got[0] != SkipDuplicateAction {
		t.Fatalf("skips %v", got)
	}
	// The model was told about the duplicate.
	last := h.rec.reqs[len(h.rec.reqs)-1].Messages
	found := false
	for _, m := range last {
		if strings.Contains(m.Content, "Duplicate action skipped") {
			found = true
		}
	}
	if !found {
		t.Fatal("model was not told about the duplicate")
	}
}

func TestDuplicatePlanStepSkipped(t *testing.T) {
	h := newHarness(t, action(thought, "final_answer", `{"answer":"done"}`))
	res := h.run(`{"tool":"echo","args":{"msg":"a"}}
{"tool":"echo","args":{"msg":"a"}}
{"tool":"final_answer","args":{"answer":"x"}}`)
	if res.Trace.Steps[1].SkipReason != SkipDuplicateAction || res.Trace.Steps[1].PlanStep != 2 {
		t.Fatalf("step 2 %+v", res.Trace.Steps[1])
	}
	if res.State.PlanIndex != 1 {
		t.Fatalf("plan index moved: %+v", res.State)
	}
}

func TestStall(t *testing.T) {
	script := strings.Repeat(action(thought, "fail", `{"msg":"same"}`), 3) + `{"kind":"fallback","text":"{\"answer\":\"stuck\"}"}` + "\n"
	h := newHarness(t, script)
	h.ex.NoPlan = true
	res := h.run("")
	if res.TerminationReason != ReasonStalled || res.ExitCode() != 5 {
		t.Fatalf("%s %s", res.TerminationReason, res.Message)
	}
	if res.FinalAnswer != "stuck" {
		t.Fatalf("answer %q", res.FinalAnswer)
	}
	if h.calls != 2 {
		t.Fatalf("tool ran %d times; the third identical action should stall before running", h.calls)
	}
}

func TestReplanAfterThreshold(t *testing.T) {
	script := planReply(planStep("echo", `{"msg":"new plan"}`), planStep("final_answer", `{"answer":"replanned"}`)) +
		action(thought, "fail", `{"msg":"second"}`)
	h := newHarness(t, script)
	res := h.run(`{"tool":"fail","args":{"msg":"first"}}
{"tool":"final_answer","args":{"answer":"old"}}`)
	if res.TerminationReason != ReasonSuccess || res.FinalAnswer != "replanned" {
		t.Fatalf("%s %q %s", res.TerminationReason, res.FinalAnswer, res.Message)
	}
	if k := h.rec.kinds(); fmt.Sprint(k) != "[action plan]" {
		t.Fatalf("calls %v", k)
	}
	// The planner saw the transcript: tools, args, stdout, stderr and exit codes.
	planReq := h.rec.reqs[1]
	user := planReq.Messages[len(planReq.Messages)-1].Content
	for _, want := range []string{"fail", `"msg":"first"`, `"msg":"second"`, "partial first", "boom: second", "exit code 1"} {
		if !strings.Contains(user, want) {
			t.Errorf("replan prompt lacks %q:\n%s", want, user)
		}
	}
	ev := h.events("replan")
	if len(ev) != 1 || ev[0]["trigger"] != "failures" {
		t.Fatalf("replan events %v", ev)
	}
	tr, _ := json.Marshal(ev[0]["transcript"])
	if !strings.Contains(string(tr), `"stderr":"boom: first"`) || !strings.Contains(string(tr), `"exit_code":1`) {
		t.Fatalf("transcript %s", tr)
	}
	// max_steps was extended: 2 attempts used + 2 new steps + buffer 2.
	if res.State.MaxSteps != 6 || res.State.Replans != 1 {
		t.Fatalf("state %+v", res.State)
	}
}

func TestTranscriptKeptAcrossReplans(t *testing.T) {
	script := planReply(planStep("fail", `{"msg":"p2"}`)) +
		action(thought, "fail", `{"msg":"m1"}`) +
		action(thought, "fail", `{"msg":"m2"}`) +
		planReply(planStep("final_answer", `{"answer":"third plan"}`))
	h := newHarness(t, script)
	res := h.run(`{"tool":"fail","args":{"msg":"p1"}}`)
	if res.FinalAnswer != "third plan" {
		t.Fatalf("%s %q %s kinds=%v", res.TerminationReason, res.FinalAnswer, res.Message, h.rec.kinds())
	}
	second := h.rec.reqs[len(h.rec.reqs)-1].Messages[1].Content
	for _, want := range []string{`"msg":"p1"`, `"msg":"m1"`, `"msg":"p2"`, `"msg":"m2"`} {
		if !strings.Contains(second, want) {
			t.Errorf("second replan lacks %s", want)
		}
	}
}

func TestDivergenceReplansOnce(t *testing.T) {
	// The model diverges twice from the pending step; only one replan happens.
	script := action(thought, "other", `{"msg":"1"}`) +
		planReply(planStep("fail", `{"msg":"again"}`), planStep("final_answer", `{"answer":"x"}`)) +
		action(thought, "echo", `{"msg":"2"}`) +
		action(thought, "final_answer", `{"answer":"after divergence"}`)
	h := newHarness(t, script)
	h.ex.AllowTools = []string{"fail", "echo", "other"}
	res := h.run(`{"tool":"fail","args":{"msg":"a"}}
{"tool":"final_answer","args":{"answer":"x"}}`)
	if res.TerminationReason != ReasonSuccess || res.FinalAnswer != "after divergence" {
		t.Fatalf("%s %q %s %v", res.TerminationReason, res.FinalAnswer, res.Message, h.rec.kinds())
	}
	if n := len(h.events("replan_request")); n != 1 {
		t.Fatalf("%d replans, want 1; calls %v", n, h.rec.kinds())
	}
	ev := h.events("replan")[0]
	if ev["trigger"] != "divergence" {
		t.Fatalf("trigger %v", ev["trigger"])
	}
}

func TestReplanRequested(t *testing.T) {
	script := action(thought, "replan", `{"reason":"the plan is wrong"}`) +
		planReply(planStep("final_answer", `{"answer":"new"}`))
	h := newHarness(t, script)
	res := h.run(`{"tool":"fail","args":{"msg":"a"}}`)
	if res.FinalAnswer != "new" {
		t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
	}
	if got := skipReasons(res); fmt.Sprint(got) != "[replan_requested]" {
		t.Fatalf("skips %v", got)
	}
}

func TestFallbackAnswer(t *testing.T) {
	t.Run("model", func(t *testing.T) {
		h := newHarness(t, action(thought, "echo", `{"msg":"1"}`)+action(thought, "echo", `{"msg":"2"}`)+`{"kind":"fallback","text":"{\"answer\":\"partial: 1 and 2\"}"}`+"\n")
		h.ex.NoPlan = true
		h.ex.MaxIterations = 2
		res := h.run("")
		if res.TerminationReason != ReasonMaxIterations || res.ExitCode() != 4 || res.FinalAnswer != "partial: 1 and 2" {
			t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
		}
		if k := h.rec.kinds(); k[len(k)-1] != llm.KindFallback {
			t.Fatalf("calls %v", k)
		}
		if !strings.Contains(res.Message, "budget") {
			t.Fatalf("message %q", res.Message)
		}
	})
	t.Run("no model", func(t *testing.T) {
		h := newHarness(t, "")
		res := h.run(`{"tool":"echo","args":{"msg":"1"}}`)
		if res.TerminationReason != ReasonMaxIterations {
			t.Fatalf("%s", res.TerminationReason)
		}
		if !strings.Contains(res.FinalAnswer, "1. echo") || !strings.Contains(res.FinalAnswer, "echo: 1") {
			t.Fatalf("summary %q", res.FinalAnswer)
		}
	})
}

func TestJQArguments(t *testing.T) {
	h := newHarness(t, "")
	res := h.run(`{"tool":"echo","args":{"msg":"a"}}
{"tool":"echo","args":{"msg":{"$jq":"(.steps | length | tostring) + \" \" + .query"}}}
{"tool":"final_answer","args":{"answer":{"$jq":"$state.steps[1].output"}}}`)
	if res.FinalAnswer != "echo: 1 test query" {
		t.Fatalf("%s %q %s", res.TerminationReason, res.FinalAnswer, res.Message)
	}
	t.Run("error is an invalid action", func(t *testing.T) {
		h := newHarness(t, "")
		res := h.run(`{"tool":"echo","args":{"msg":{"$jq":".steps[0].output | error"}}}`)
		if res.Trace.Steps[0].SkipReason != SkipInvalidAction || !strings.Contains(res.Trace.Steps[0].Observation, "$jq") {
			t.Fatalf("%+v", res.Trace.Steps[0])
		}
	})
}

func TestFillArguments(t *testing.T) {
	h := newHarness(t, `{"kind":"fill","text":"{\"msg\":\"from model\",\"n\":3}"}`+"\n")
	res := h.run(`{"tool":"echo","args":{"msg":"","n":1}}
{"tool":"final_answer","args":{"answer":{"$jq":".steps[0].args | tojson"}}}`)
	if res.FinalAnswer != `{"msg":"from model","n":1}` {
		t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
	}
	if k := h.rec.kinds(); fmt.Sprint(k) != "[fill]" {
		t.Fatalf("calls %v", k)
	}
}

func TestStopWhen(t *testing.T) {
	h := newHarness(t, "")
	h.ex.StopWhen = `.output | test("b")`
	res := h.run(`{"tool":"echo","args":{"msg":"a"}}
{"tool":"echo","args":{"msg":"b"}}
{"tool":"echo","args":{"msg":"c"}}`)
	if res.TerminationReason != ReasonCustom || res.ExitCode() != 8 || res.FinalAnswer != "echo: b" {
		t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
	}
}

func TestPhrases(t *testing.T) {
	t.Run("failure phrase in answer", func(t *testing.T) {
		h := newHarness(t, "")
		h.ex.FailurePhrases = []string{"NOT FOUND"}
		res := h.run(`{"tool":"final_answer","args":{"answer":"config not found"}}`)
		if res.TerminationReason != ReasonFailure || res.ExitCode() != 3 || res.Success {
			t.Fatalf("%s", res.TerminationReason)
		}
	})
	t.Run("model says it cannot", func(t *testing.T) {
		h := newHarness(t, "")
		res := h.run(`{"tool":"final_answer","args":{"answer":"I cannot read that disk."}}`)
		if res.TerminationReason != ReasonFailure {
			t.Fatalf("%s", res.TerminationReason)
		}
	})
	t.Run("success phrase in observation", func(t *testing.T) {
		h := newHarness(t, "")
		h.ex.SuccessPhrases = []string{"echo: ready"}
		res := h.run(`{"tool":"echo","args":{"msg":"ready"}}
{"tool":"echo","args":{"msg":"never"}}`)
		if res.TerminationReason != ReasonSuccess || res.FinalAnswer != "echo: ready" || h.calls != 1 {
			t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
		}
	})
}

func TestTokenBudget(t *testing.T) {
	h := newHarness(t, strings.Repeat(action(thought, "echo", `{"msg":"a"}`), 1)+action(thought, "echo", `{"msg":"b"}`))
	h.ex.NoPlan = true
	h.ex.TokenBudget = 50
	res := h.run("")
	if res.TerminationReason != ReasonTokenBudget || res.ExitCode() != 6 {
		t.Fatalf("%s", res.TerminationReason)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		reason Reason
	}{
		{"timeout", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, ReasonTimeout},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, ReasonCancelled},
	} {
		t.Run(tc.name+" during tool", func(t *testing.T) {
			h := newHarness(t, "")
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			res := h.ex.Run(ctx, "q", h.plan(`{"tool":"slow","args":{"msg":"a"}}`))
			if res.TerminationReason != tc.reason {
				t.Fatalf("%s", res.TerminationReason)
			}
			// The tool runs until cancelled: the bound only says that the
			// cancellation ended it, generous for a busy machine.
			if time.Since(start) > 30*time.Second {
				t.Fatal("too slow")
			}
			if ev := h.events("termination"); len(ev) != 1 || ev[0]["reason"] != string(tc.reason) {
				t.Fatalf("termination events %v", ev)
			}
		})
		t.Run(tc.name+" during model", func(t *testing.T) {
			// The reply takes a minute; ending well before it is the
			// cancellation's doing, with room for a busy machine.
			h := newHarness(t, `{"kind":"action","delay_ms":60000,"text":"{\"thought\":\"slow slow slow slow\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"late\"}}"}`+"\n")
			h.ex.NoPlan = true
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			res := h.ex.Run(ctx, "q", nil)
			if res.TerminationReason != tc.reason || time.Since(start) > 30*time.Second {
				t.Fatalf("%s after %v", res.TerminationReason, time.Since(start))
			}
		})
	}
}

func TestObservationTruncated(t *testing.T) {
	h := newHarness(t, "")
	h.ex.MaxObservationTokens = 10
	long := strings.Repeat("x", 500)
	res := h.run(`{"tool":"echo","args":{"msg":"` + long + `"}}
{"tool":"final_answer","args":{"answer":"ok"}}`)
	obs := res.Trace.Steps[0].Observation
	if len(obs) > 160 || !strings.Contains(obs, "[... line 1 cut (") || !strings.Contains(obs, " bytes, about ") {
		t.Fatalf("observation %d bytes: %q", len(obs), obs)
	}
}

func TestErrorsMarkedInObservations(t *testing.T) {
	h := newHarness(t, action(thought, "final_answer", `{"answer":"x"}`))
	h.ex.Planner = nil
	h.run(`{"tool":"fail","args":{"msg":"a"}}`)
	var obs string
	for _, m := range h.rec.reqs[0].Messages {
		if strings.HasPrefix(m.Content, "Observation") {
			obs = m.Content
		}
	}
	if !strings.Contains(obs, "ERROR exit code 1") || !strings.Contains(obs, "stderr:\nboom: a") {
		t.Fatalf("observation %q", obs)
	}
}

func TestReadOnlyNudge(t *testing.T) {
	script := ""
	for i := 0; i < 5; i++ {
		script += action(thought, "echo", fmt.Sprintf(`{"msg":"%d"}`, i))
	}
	script += action(thought, "final_answer", `{"answer":"x"}`)
	h := newHarness(t, script)
	h.ex.NoPlan = true
	h.run("")
	nudged := func(i int) bool {
		m := h.rec.reqs[i].Messages
		return strings.Contains(m[len(m)-1].Content, "If you can answer now")
	}
	if nudged(4) || !nudged(5) {
		t.Fatalf("nudge at 4=%v 5=%v", nudged(4), nudged(5))
	}
}

func TestConversationIsAppendOnly(t *testing.T) {
	// Each action request extends the previous one: KV prefix reuse depends on it.
	script := action(thought, "echo", `{"msg":"1"}`) + action(thought, "fail", `{"msg":"2"}`) + action(thought, "final_answer", `{"answer":"x"}`)
	h := newHarness(t, script)
	h.ex.NoPlan = true
	h.run("")
	for i := 1; i < len(h.rec.reqs); i++ {
		prev, cur := h.rec.reqs[i-1].Messages, h.rec.reqs[i].Messages
		if len(cur) <= len(prev) {
			t.Fatalf("request %d did not grow", i)
		}
		for j := range prev {
			if prev[j] != cur[j] {
				t.Fatalf("request %d changed message %d", i, j)
			}
		}
	}
}

func TestPlannedStepsAppearInConversation(t *testing.T) {
	h := newHarness(t, action(thought, "final_answer", `{"answer":"x"}`))
	h.run(`{"thought":"look first","tool":"echo","args":{"msg":"seen"}}`)
	msgs := h.rec.reqs[0].Messages
	var joined []string
	for _, m := range msgs {
		joined = append(joined, string(m.Role)+": "+m.Content)
	}
	all := strings.Join(joined, "\n")
	if !strings.Contains(all, `assistant: {"thought":"look first","tool":"echo","args":{"msg":"seen"}}`) || !strings.Contains(all, "echo: seen") {
		t.Fatalf("conversation:\n%s", all)
	}
}

func TestGateDenial(t *testing.T) {
	h := newHarness(t, "")
	h.ex.Gate = denyGate{}
	res := h.run(`{"tool":"poke","args":{"msg":"a"}}
{"tool":"final_answer","args":{"answer":"x"}}`)
	if h.calls != 0 {
		t.Fatal("denied tool ran")
	}
	if !strings.Contains(res.Trace.Steps[0].Observation, "denied by policy") {
		t.Fatalf("observation %q", res.Trace.Steps[0].Observation)
	}
	if ev := h.events("denied"); len(ev) != 1 {
		t.Fatalf("denied events %v", ev)
	}
}

func TestDryRun(t *testing.T) {
	h := newHarness(t, "")
	h.ex.DryRun = true
	h.ex.Gate = denyGate{}
	res := h.run(`{"tool":"echo","args":{"msg":"a"}}
{"tool":"poke","args":{"msg":"b"}}
{"tool":"final_answer","args":{"answer":"x"}}`)
	if h.calls != 1 {
		t.Fatalf("calls %d: only the read tool may run", h.calls)
	}
	if res.TerminationReason != ReasonSuccess || res.Trace.Steps[1].Decision != "dry_run:deny" {
		t.Fatalf("%s %+v", res.TerminationReason, res.Trace.Steps[1])
	}
}

type denyGate struct{}

func (denyGate) Check(_ context.Context, _ *tools.Env, calls []tools.Call) []tools.Verdict {
	out := make([]tools.Verdict, len(calls))
	for i := range out {
		out[i] = tools.Verdict{Decision: "deny", Reason: "test says no"}
	}
	return out
}

func TestExitCodes(t *testing.T) {
	want := map[Reason]int{ReasonSuccess: 0, ReasonError: 1, ReasonFailure: 3, ReasonMaxIterations: 4, ReasonStalled: 5,
		ReasonTokenBudget: 6, ReasonTimeout: 7, ReasonCustom: 8, ReasonCancelled: 130}
	for r, c := range want {
		if r.ExitCode() != c {
			t.Errorf("%s: %d, want %d", r, r.ExitCode(), c)
		}
	}
}

func TestNoPlanMaxIterations(t *testing.T) {
	script := ""
	for i := 0; i < 3; i++ {
		script += action(thought, "echo", fmt.Sprintf(`{"msg":"%d"}`, i))
	}
	h := newHarness(t, script)
	h.ex.NoPlan = true
	h.ex.MaxIterations = 3
	res := h.run("")
	if res.TerminationReason != ReasonMaxIterations || res.State.MaxSteps != 3 || res.Iterations != 3 {
		t.Fatalf("%s %+v", res.TerminationReason, res.State)
	}
}

func TestStallingActionIsRecorded(t *testing.T) {
	script := strings.Repeat(action(thought, "fail", `{"msg":"same"}`), 3)
	h := newHarness(t, script)
	h.ex.NoPlan = true
	res := h.run("")
	if res.TerminationReason != ReasonStalled || len(res.Trace.Steps) != res.State.Attempts {
		t.Fatalf("%s: %d steps for %d attempts", res.TerminationReason, len(res.Trace.Steps), res.State.Attempts)
	}
	if last := res.Trace.Steps[len(res.Trace.Steps)-1]; !strings.Contains(last.Error, "stalled") {
		t.Fatalf("last step %+v", last)
	}
}

type userRejects struct{}

func (userRejects) Check(_ context.Context, _ *tools.Env, calls []tools.Call) []tools.Verdict {
	return []tools.Verdict{{Decision: "rejected", Reason: "denied by user: rejected at the approval prompt"}}
}

func TestDenialObservationsAndExitCode(t *testing.T) {
	h := newHarness(t, "")
	h.ex.Gate = userRejects{}
	res := h.run(`{"tool":"poke","args":{"msg":"a"}}`)
	st := res.Trace.Steps[0]
	if st.Observation != "denied by user: rejected at the approval prompt" {
		t.Fatalf("observation %q", st.Observation)
	}
	// A tool that failed without a process exit status reports 1.
	if st.ExitCode != 1 {
		t.Fatalf("exit code %d", st.ExitCode)
	}
}

// The model-free summary lists each step's arguments cut as the run display
// cuts them: a 1 MB argument is one short line, with its size.
func TestSummaryCutsArguments(t *testing.T) {
	h := newHarness(t, "")
	h.ex.AllowTools = []string{"poke", "echo"}
	big := strings.Repeat("A", 1_000_000)
	res := h.run(`{"tool":"echo","args":{"msg":"first"}}
{"tool":"poke","args":{"msg":"` + big + `"}}`)
	// The plan has no final answer: the run ends with the summary.
	if res.TerminationReason == ReasonSuccess {
		t.Fatalf("reason %q, answer %.200q", res.TerminationReason, res.FinalAnswer)
	}
	steps, _, _ := strings.Cut(res.FinalAnswer, "Last output:") // the output is cut on its own
	if len(steps) > 500 || strings.Contains(steps, strings.Repeat("A", 100)) {
		t.Fatalf("steps listed in %d bytes: %.300q", len(steps), steps)
	}
	if !strings.Contains(res.FinalAnswer, `2. poke {"msg":"AAAA`) || !strings.Contains(res.FinalAnswer, `… (1.0MB)"}: `) {
		t.Errorf("summary:\n%s", res.FinalAnswer)
	}
}

// invalidUTF8 replies with an answer holding bytes that are not UTF-8.
type invalidUTF8 struct{}

func (invalidUTF8) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Text: "{\"thought\":\"answer with what the model wrote\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"a\xfd\xffb\"}}"}, nil
}
func (invalidUTF8) Close() error { return nil }

// Bytes a model writes that are not UTF-8 never reach the answer, the
// record or stdout: they are replaced as the reply comes in.
func TestReplyInvalidUTF8Replaced(t *testing.T) {
	h := newHarness(t, "")
	h.ex.Backend = invalidUTF8{}
	res := h.run("")
	if res.TerminationReason != ReasonSuccess || res.FinalAnswer != "a\uFFFDb" {
		t.Fatalf("%s %q", res.TerminationReason, res.FinalAnswer)
	}
	if !utf8.ValidString(h.trace.String()) {
		t.Errorf("the trace holds bytes that are not UTF-8")
	}
}
