package react

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/tools"
)

// fakeHooks answers each event from a table and records what it was given.
type fakeHooks struct {
	mu  sync.Mutex
	out map[hooks.Event][]hooks.Outcome // consumed in order; the last repeats
	in  []hooks.Input
}

func (f *fakeHooks) Has(ev hooks.Event) bool { return len(f.out[ev]) > 0 }

func (f *fakeHooks) Run(_ context.Context, in hooks.Input) hooks.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in = append(f.in, in)
	q := f.out[in.HookEventName]
	o := q[0]
	if len(q) > 1 {
		f.out[in.HookEventName] = q[1:]
	}
	o.Runs = []hooks.Run{{Event: in.HookEventName, Command: "hook " + string(in.HookEventName), Decision: o.Decision}}
	return o
}

func (f *fakeHooks) inputs(ev hooks.Event) []hooks.Input {
	var out []hooks.Input
	for _, in := range f.in {
		if in.HookEventName == ev {
			out = append(out, in)
		}
	}
	return out
}

// gateSpy records the calls it is asked about and allows what a hook approved.
type gateSpy struct{ calls []tools.Call }

func (g *gateSpy) Check(_ context.Context, _ *tools.Env, calls []tools.Call) []tools.Verdict {
	g.calls = append(g.calls, calls...)
	out := make([]tools.Verdict, len(calls))
	for i, c := range calls {
		if c.HookApproved != "" {
			out[i] = tools.Verdict{Allowed: true, Decision: "approved_by_hook"}
		} else {
			out[i] = tools.Verdict{Decision: "deny", Reason: "denied by policy: test"}
		}
	}
	return out
}

func TestHooksPreToolUse(t *testing.T) {
	allow := hooks.Outcome{Decision: hooks.DecisionAllow}
	tests := []struct {
		name     string
		pre      hooks.Outcome
		calls    int // tool runs
		decision string
		obs      string
		gateSaw  string // the HookApproved the gate was given ("-": not asked)
	}{
		{"block", hooks.Outcome{Decision: hooks.DecisionBlock, Reason: "not now"}, 0, DecisionHookBlocked, "blocked by hook: not now", "-"},
		{"approve", hooks.Outcome{Decision: hooks.DecisionApprove, Reason: "fine by me"}, 1, "approved_by_hook", "echo: a", "fine by me"},
		{"approve without reason", hooks.Outcome{Decision: hooks.DecisionApprove}, 1, "approved_by_hook", "echo: a", "a PreToolUse hook approved it"},
		{"no opinion", allow, 0, "deny", "denied by policy: test", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			gate := &gateSpy{}
			fh := &fakeHooks{out: map[hooks.Event][]hooks.Outcome{hooks.PreToolUse: {tt.pre}}}
			h.ex.Gate, h.ex.Hooks = gate, fh
			res := h.run(`{"tool":"poke","args":{"msg":"a"}}
{"tool":"final_answer","args":{"answer":"x"}}`)
			st := res.Trace.Steps[0]
			if h.calls != tt.calls || st.Decision != tt.decision || !strings.Contains(st.Observation, tt.obs) {
				t.Fatalf("calls %d, step %+v", h.calls, st)
			}
			switch {
			case tt.gateSaw == "-" && len(gate.calls) != 0:
				t.Errorf("the gate was asked after a block")
			case tt.gateSaw != "-" && (len(gate.calls) != 1 || gate.calls[0].HookApproved != tt.gateSaw):
				t.Errorf("gate calls %+v, want HookApproved %q", gate.calls, tt.gateSaw)
			}
			if len(st.Hooks) != 1 || st.Hooks[0].Event != hooks.PreToolUse {
				t.Errorf("step hooks %+v", st.Hooks)
			}
			in := fh.inputs(hooks.PreToolUse)
			if len(in) != 1 || in[0].ToolName != "poke" || string(in[0].ToolInput) != `{"msg":"a"}` || in[0].SessionID != res.RunID || in[0].Cwd != h.ex.Env.Workspace {
				t.Errorf("hook input %+v", in)
			}
			if ev := h.events(EventHook); len(ev) != 1 {
				t.Errorf("hook events %v", ev)
			}
		})
	}
}

// A read tool goes through PreToolUse too, and a block stops it.
func TestHooksBlockReadTool(t *testing.T) {
	h := newHarness(t, "")
	h.ex.Hooks = &fakeHooks{out: map[hooks.Event][]hooks.Outcome{hooks.PreToolUse: {{Decision: hooks.DecisionBlock, Reason: "no reading"}}}}
	res := h.run(`{"tool":"echo","args":{"msg":"a"}}`)
	if h.calls != 0 || res.Trace.Steps[0].Decision != DecisionHookBlocked {
		t.Fatalf("calls %d, step %+v", h.calls, res.Trace.Steps[0])
	}
}

func TestHooksPostToolUse(t *testing.T) {
	h := newHarness(t, "")
	fh := &fakeHooks{out: map[hooks.Event][]hooks.Outcome{hooks.PostToolUse: {
		{Decision: hooks.DecisionAllow, Context: "seen by audit"},
		{Decision: hooks.DecisionBlock, Reason: "looks wrong"},
	}}}
	h.ex.Hooks = fh
	res := h.run(`{"tool":"echo","args":{"msg":"a"}}
{"tool":"other","args":{"msg":"b"}}`)
	s0, s1 := res.Trace.Steps[0], res.Trace.Steps[1]
	if s0.Observation != "echo: a\nContext from the user's hooks:\nseen by audit" || s0.Error != "" {
		t.Errorf("step 1 %+v", s0)
	}
	if s1.Observation != "echo: b\nerror: blocked by hook: looks wrong" || s1.Error != "blocked by hook: looks wrong" || s1.Decision != DecisionHookBlocked {
		t.Errorf("step 2 %+v", s1)
	}
	in := fh.inputs(hooks.PostToolUse)
	if len(in) != 2 || in[0].ToolResponse == nil || in[0].ToolResponse.Output != "echo: a" || !in[0].ToolResponse.Success {
		t.Errorf("post inputs %+v", in)
	}
	if h.calls != 2 {
		t.Errorf("calls %d: a PostToolUse block does not undo the run", h.calls)
	}
}

func TestHooksStopAndRunStart(t *testing.T) {
	h := newHarness(t, `{"kind":"action","text":"{\"thought\":\"done with the task\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"first\"}}"}
{"kind":"action","expect":["The final answer was not accepted: tests fail"],"text":"{\"thought\":\"fixed the tests now\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"second\"}}"}`)
	fh := &fakeHooks{out: map[hooks.Event][]hooks.Outcome{
		hooks.Stop: {
			{Decision: hooks.DecisionBlock, Reason: "tests fail"},
			{Decision: hooks.DecisionAllow},
		},
		hooks.RunStart: {{Decision: hooks.DecisionAllow, Context: "freeze on fridays"}},
	}}
	h.ex.Hooks = fh
	res := h.run("")
	if !strings.Contains(h.rec.reqs[0].Messages[1].Content, "Context from the user's hooks:\nfreeze on fridays") {
		t.Errorf("task message %q", h.rec.reqs[0].Messages[1].Content)
	}
	if !res.Success || res.FinalAnswer != "second" || len(res.Trace.Steps) != 2 || res.Trace.Steps[0].SkipReason != SkipStopHook {
		t.Fatalf("result %+v", res)
	}
	stops := fh.inputs(hooks.Stop)
	if len(stops) != 2 || stops[0].Answer != "first" || stops[0].StopHookActive || !stops[1].StopHookActive {
		t.Errorf("stop inputs %+v", stops)
	}
	if len(res.Hooks) != 1 || res.Hooks[0].Event != hooks.RunStart {
		t.Errorf("run hooks %+v", res.Hooks)
	}
	if n := len(fh.inputs(hooks.RunStart)); n != 1 {
		t.Errorf("RunStart ran %d times", n)
	}
}
