package agent

import (
	"context"
	"github.com/tactcli/tact/agent/agenttest"
	"testing"
)

// scriptRuntime is a runtime whose model is a script of action replies.
func scriptRuntime(t *testing.T, replies ...string) *Runtime {
	t.Helper()
	rt, err := Open(context.Background(), agenttest.Settings(t, agenttest.ScriptLines(replies...)), Options{Mode: "serve"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// A job's own settings replace the runtime's for that job only.
func TestJobSettings(t *testing.T) {
	rt := scriptRuntime(t,
		`{"thought":"list the files to see them","tool":"list_files","args":{}}`,
		`{"thought":"list the files once more","tool":"list_files","args":{"path":"."}}`)
	js := *rt.S
	js.NoPlan, js.MaxIterations = true, 1
	res, err := rt.Run(context.Background(), Job{Query: "q", Settings: &js})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.MaxSteps != 1 || rt.S.NoPlan {
		t.Fatalf("max steps %d, runtime no-plan %v", res.State.MaxSteps, rt.S.NoPlan)
	}
}

// A paused run's answer lock is released whatever ends the answering run,
// a refused run id (before any event) included: the next answer must not
// find the run still locked.
func TestAnswerLockReleasedOnBadRunID(t *testing.T) {
	rt := scriptRuntime(t)
	released := 0
	_, err := rt.Run(context.Background(), Job{ID: "../x", Query: "q", Resume: &Resume{From: "r1", Release: func() { released++ }}})
	if KindOf(err) != ErrBadInput {
		t.Fatalf("err %v (kind %v), want bad input", err, KindOf(err))
	}
	if released != 1 {
		t.Fatalf("released %d times, want 1", released)
	}
}
