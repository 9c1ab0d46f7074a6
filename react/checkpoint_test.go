package react

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const sixEchoes = `{"type":"plan","query":"q","created":"2026-01-01T00:00:00Z"}
{"tool":"echo","args":{"msg":"one"}}
{"tool":"echo","args":{"msg":"two"}}
{"tool":"echo","args":{"msg":"three"}}
{"tool":"echo","args":{"msg":{"$jq":".steps[2].output + \" four\""}}}
{"tool":"echo","args":{"msg":"five"}}
{"tool":"echo","args":{"msg":"six"}}
{"tool":"final_answer","args":{"answer":{"$jq":"[.steps[].output] | join(\"|\")"}}}
`

// roundTrip is what the run history does with a checkpoint: JSON out, JSON in.
func roundTrip(t *testing.T, cp Checkpoint) *Checkpoint {
	t.Helper()
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var back Checkpoint
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

// A run cut after its third step goes on from its checkpoint: steps 4-6
// run, 1-3 do not run again, and $jq arguments still see their outputs.
func TestResumeAfterCut(t *testing.T) {
	h := newHarness(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	var last Checkpoint
	h.ex.OnCheckpoint = func(id string, cp Checkpoint) {
		last = cp
		if len(cp.Steps) == 3 {
			cancel()
		}
	}
	res := h.ex.RunWithID(ctx, "first", "test query", h.plan(sixEchoes))
	if res.TerminationReason != ReasonCancelled || h.calls != 3 || len(last.Steps) != 3 {
		t.Fatalf("cut run: %s, %d tool runs, checkpoint of %d steps", res.TerminationReason, h.calls, len(last.Steps))
	}

	h2 := newHarness(t, "")
	var cps int
	h2.ex.OnCheckpoint = func(string, Checkpoint) { cps++ }
	res2, err := h2.ex.Resume(context.Background(), "second", roundTrip(t, last), BudgetKept)
	if err != nil {
		t.Fatal(err)
	}
	if res2.TerminationReason != ReasonSuccess {
		t.Fatalf("resumed: %s (%s)", res2.TerminationReason, res2.Message)
	}
	if h2.calls != 3 {
		t.Errorf("resumed run made %d tool runs, want 3 (steps 4-6)", h2.calls)
	}
	if want := "echo: one|echo: two|echo: three|echo: echo: three four|echo: five|echo: six"; res2.FinalAnswer != want {
		t.Errorf("answer %q, want %q", res2.FinalAnswer, want)
	}
	if n := len(res2.Trace.Steps); n != 7 || res2.Trace.Steps[6].Iteration != 7 || res2.RunID != "second" {
		t.Errorf("resumed result: %d steps, run id %q", n, res2.RunID)
	}
	if res2.State.Step != 7 || res2.State.Attempts != 7 || res2.State.MaxSteps != last.State.MaxSteps {
		t.Errorf("resumed state %+v (checkpoint's max_steps %d)", res2.State, last.State.MaxSteps)
	}
	if cps != 3 {
		t.Errorf("%d checkpoints after resuming, want one after each step the loop goes on from (3)", cps)
	}
	start := h2.events(EventExecuteStart)
	if len(start) != 1 || start[0]["resumed_steps"] != float64(3) {
		t.Errorf("execute_start %v", start)
	}
}

// A run that used up its step budget gets a fresh one when resumed with
// BudgetFresh; BudgetKept ends it again at once.
func TestResumeBudget(t *testing.T) {
	h := newHarness(t, action(thought, "echo", `{"msg":"a"}`)+action(thought, "echo", `{"msg":"b"}`))
	h.ex.NoPlan, h.ex.MaxIterations = true, 2
	var last Checkpoint
	h.ex.OnCheckpoint = func(_ string, cp Checkpoint) { last = cp }
	res := h.ex.Run(context.Background(), "q", nil)
	if res.TerminationReason != ReasonMaxIterations || len(last.Steps) != 2 {
		t.Fatalf("first run: %s (%s), checkpoint of %d steps", res.TerminationReason, res.Message, len(last.Steps))
	}
	for _, tc := range []struct {
		budget Budget
		reason Reason
		steps  int
	}{{BudgetKept, ReasonMaxIterations, 2}, {BudgetFresh, ReasonSuccess, 4}} {
		h2 := newHarness(t, action(thought, "echo", `{"msg":"c"}`)+action(thought, "final_answer", `{"answer":"done"}`))
		h2.ex.NoPlan, h2.ex.MaxIterations = true, 2
		res2, err := h2.ex.Resume(context.Background(), "r", roundTrip(t, last), tc.budget)
		if err != nil {
			t.Fatal(err)
		}
		if res2.TerminationReason != tc.reason || len(res2.Trace.Steps) != tc.steps {
			t.Errorf("budget %d: %s with %d steps, want %s with %d", tc.budget, res2.TerminationReason, len(res2.Trace.Steps), tc.reason, tc.steps)
		}
	}
}

// The resumed run's model sees the cut run's conversation: its first
// request starts with the messages the checkpoint holds.
func TestResumeKeepsModelView(t *testing.T) {
	script := action(thought, "echo", `{"msg":"first look"}`) + action(thought, "echo", `{"msg":"second look"}`)
	h := newHarness(t, script)
	h.ex.NoPlan = true
	ctx, cancel := context.WithCancel(context.Background())
	var last Checkpoint
	h.ex.OnCheckpoint = func(_ string, cp Checkpoint) {
		last = cp
		cancel()
	}
	h.ex.RunWithID(ctx, "a", "look around", nil)
	if len(last.Steps) != 1 {
		t.Fatalf("checkpoint of %d steps", len(last.Steps))
	}
	h2 := newHarness(t, action(thought, "final_answer", `{"answer":"done"}`))
	h2.ex.NoPlan = true
	res, err := h2.ex.Resume(context.Background(), "b", roundTrip(t, last), BudgetKept)
	if err != nil || res.TerminationReason != ReasonSuccess {
		t.Fatalf("resumed: %v %+v", err, res)
	}
	if len(h2.rec.reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(h2.rec.reqs))
	}
	msgs := h2.rec.reqs[0].Messages
	if len(msgs) <= len(last.Hist) {
		t.Fatalf("request of %d messages, checkpoint of %d", len(msgs), len(last.Hist))
	}
	for i, m := range last.Hist {
		if msgs[i].Content != m.Content || msgs[i].Role != m.Role {
			t.Fatalf("message %d differs from the checkpoint's", i)
		}
	}
	if !strings.Contains(msgs[len(last.Hist)-1].Content, "echo: first look") {
		t.Errorf("the cut run's observation is not in the resumed prompt")
	}
}

func TestResumeRefusesOtherLayout(t *testing.T) {
	h := newHarness(t, "")
	for _, cp := range []*Checkpoint{{Version: CheckpointVersion + 1}, {Version: CheckpointVersion}} {
		if _, err := h.ex.Resume(context.Background(), "x", cp, BudgetKept); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("version %d: err = %v", cp.Version, err)
		}
	}
}

// Secrets never reach a checkpoint: the tool runs' raw outputs are
// redacted in it.
func TestCheckpointRedacted(t *testing.T) {
	h := newHarness(t, "")
	h.ex.Redact = func(s string) string { return strings.ReplaceAll(s, "hunter2", "[REDACTED]") }
	var all []byte
	h.ex.OnCheckpoint = func(_ string, cp Checkpoint) {
		b, _ := json.Marshal(cp)
		all = append(all, b...)
	}
	h.ex.Run(context.Background(), "q", h.plan(`{"tool":"echo","args":{"msg":"hunter2"}}
{"tool":"final_answer","args":{"answer":"ok"}}
`))
	if len(all) == 0 || strings.Contains(string(all), "hunter2") {
		t.Fatalf("checkpoint holds the secret (or none was taken): %s", all)
	}
}

// A damaged checkpoint is refused or resumed, never a crash: the run
// history is a file on disk.
func FuzzResume(f *testing.F) {
	h := newHarness(f, "")
	var seed Checkpoint
	h.ex.OnCheckpoint = func(_ string, cp Checkpoint) { seed = cp }
	h.ex.Run(context.Background(), "q", h.plan(sixEchoes))
	b, _ := json.Marshal(seed)
	f.Add(b)
	f.Add([]byte(`{"version":1,"history":[{"role":"user","content":"x","kind":9}]}`))
	f.Add([]byte(`{"version":1,"history":[{"role":"user","content":"x"}],"steps":[{}],"trace_turn":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var cp Checkpoint
		if json.Unmarshal(data, &cp) != nil {
			return
		}
		h := newHarness(t, "")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if res, err := h.ex.Resume(ctx, "fz", &cp, BudgetKept); err == nil && res.TerminationReason == "" {
			t.Fatal("a resumed run without a termination reason")
		}
	})
}

// Every reason has its own exit code (scripts tell outcomes apart by it).
func TestReasonsHaveDistinctCodes(t *testing.T) {
	seen := map[int]Reason{}
	for _, r := range Reasons {
		if other, dup := seen[r.ExitCode()]; dup {
			t.Errorf("%s and %s share exit code %d", r, other, r.ExitCode())
		}
		seen[r.ExitCode()] = r
	}
}
