package react

import (
	"context"
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
)

const askPlan = `{"type":"plan","query":"q","created":"2026-01-01T00:00:00Z"}
{"tool":"echo","args":{"msg":"one"}}
{"tool":"ask_user","args":{"question":"which one? key s3cr3t-42"}}
{"tool":"final_answer","args":{"answer":{"$jq":".steps[-1].output"}}}
`

func askHarness(t *testing.T) *harness {
	h := newHarness(t, "")
	h.ex.Registry = tools.NewRegistry(append(registry(&h.calls).List(), tools.AskUserTool{})...)
	h.ex.Redact = func(s string) string { return strings.ReplaceAll(s, "s3cr3t-42", "[REDACTED]") }
	return h
}

// Nobody to ask: the run pauses with the call pending in its checkpoint;
// the answer is the call's observation and the step before is not run
// again.
func TestAskUserPausesAndResumes(t *testing.T) {
	h := askHarness(t)
	var last Checkpoint
	h.ex.OnCheckpoint = func(_ string, cp Checkpoint) { last = cp }
	res := h.ex.RunWithID(context.Background(), "first", "q", h.plan(askPlan))
	if res.TerminationReason != ReasonNeedsInput || res.ExitCode() != 12 || h.calls != 1 {
		t.Fatalf("paused run: %s (exit %d), %d tool runs", res.TerminationReason, res.ExitCode(), h.calls)
	}
	if res.Question == nil || res.Question.Kind != KindQuestion || res.Question.Question != "which one? key [REDACTED]" {
		t.Fatalf("question %+v", res.Question)
	}
	if last.Pending == nil || last.Pending.Action.Tool != tools.AskUser || strings.Contains(string(last.Pending.Action.Args), "s3cr3t") {
		t.Fatalf("checkpoint's pending call %+v", last.Pending)
	}
	h2 := askHarness(t)
	res2, err := h2.ex.ResumeAnswer(context.Background(), "second", roundTrip(t, last), Answer{Text: "the blue one"})
	if err != nil {
		t.Fatal(err)
	}
	if res2.TerminationReason != ReasonSuccess || res2.FinalAnswer != "the blue one" || h2.calls != 0 {
		t.Fatalf("answered run: %s %q (%s), %d tool runs", res2.TerminationReason, res2.FinalAnswer, res2.Message, h2.calls)
	}
	if st := res2.Trace.Steps[1]; st.Action.Tool != tools.AskUser || st.Observation != "the blue one" || st.Decision != DecisionAnswered {
		t.Errorf("ask_user step %+v", st)
	}
	if _, err := h2.ex.ResumeAnswer(context.Background(), "third", &Checkpoint{Version: CheckpointVersion}, Answer{Text: "x"}); err == nil {
		t.Error("a checkpoint with nothing pending was answered")
	}
}

// A terminal answers inline: no pause.
func TestAskUserInline(t *testing.T) {
	h := askHarness(t)
	var asked string
	h.ex.Asker = func(_ context.Context, q string, _ []string) (string, error) { asked = q; return "red", nil }
	res := h.ex.RunWithID(context.Background(), "first", "q", h.plan(askPlan))
	if res.TerminationReason != ReasonSuccess || res.FinalAnswer != "red" || asked != "which one? key [REDACTED]" {
		t.Fatalf("%s %q, asked %q", res.TerminationReason, res.FinalAnswer, asked)
	}
}

// pauseGate leaves every write/exec call to a person who is not there.
type pauseGate struct{}

func (pauseGate) Check(_ context.Context, _ *tools.Env, calls []tools.Call) []tools.Verdict {
	v := make([]tools.Verdict, len(calls))
	for i := range v {
		v[i] = tools.Verdict{Decision: tools.DecisionNeedsInput, Reason: "Run this?"}
	}
	return v
}

// An approval nobody gave pauses; --deny is the observation, --approve runs it.
func TestApprovalPause(t *testing.T) {
	const plan = `{"type":"plan","query":"q","created":"2026-01-01T00:00:00Z"}
{"tool":"poke","args":{"msg":"x"}}
{"tool":"final_answer","args":{"answer":{"$jq":".steps[-1].error // .steps[-1].output"}}}
`
	h := askHarness(t)
	h.ex.Gate = pauseGate{}
	var last Checkpoint
	h.ex.OnCheckpoint = func(_ string, cp Checkpoint) { last = cp }
	res := h.ex.RunWithID(context.Background(), "first", "q", h.plan(plan))
	if res.TerminationReason != ReasonNeedsInput || res.Question.Kind != KindApproval || res.Question.Call == nil || h.calls != 0 {
		t.Fatalf("%s %+v, %d runs", res.TerminationReason, res.Question, h.calls)
	}
	for _, c := range []struct {
		a     Answer
		runs  int
		reply string
	}{
		{Answer{Deny: "denied by user: tact answer --deny"}, 0, "denied by user: tact answer --deny"},
		{Answer{Approve: true}, 1, ""},
	} {
		h2 := askHarness(t)
		h2.ex.Gate = pauseGate{}
		res2, err := h2.ex.ResumeAnswer(context.Background(), "second", roundTrip(t, last), c.a)
		if err != nil {
			t.Fatal(err)
		}
		if obs := res2.Trace.Steps[0].Observation; h2.calls != c.runs || !strings.Contains(obs, c.reply) {
			t.Errorf("answer %+v: %d runs, observation %q (%s)", c.a, h2.calls, obs, res2.TerminationReason)
		}
	}
}
