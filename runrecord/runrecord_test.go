package runrecord

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
)

const secret = "hunter2-secret-value"

// record writes runs through Writers into a new store and returns its path.
func record(t *testing.T, write func(st *history.Store, red *redact.Redactor)) func() (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "runs.db")
	st, err := history.Open(path, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	red, err := redact.NewRedactor([]string{"API_TOKEN=" + secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(st, red)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return func() (string, error) { return path, nil }
}

// What the Writer records, the Book reads back: a failed job's document
// (redacted), a finished run's result, an interrupted run's steps, a
// conversation's chain and a resumption's budget.
func TestWriteThenRead(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	path := record(t, func(st *history.Store, red *redact.Redactor) {
		failed := NewWriter(st, red, history.Run{ID: "run-failed", Workspace: ws})
		failed.Handle(react.Event{Type: react.EventRunStart, Time: time.Now(), Fields: map[string]any{}})
		failed.End("q "+secret, nil, Termination{Reason: react.ReasonTimeout, ExitCode: 7, Message: "timeout " + secret})

		done := NewWriter(st, red, history.Run{ID: "run-done", Workspace: ws, ParentID: "run-failed"})
		done.Begin("follow-up", nil)
		res := &react.Result{RunID: "run-done", Success: true, FinalAnswer: "42", TerminationReason: react.ReasonMaxIterations}
		done.End("follow-up", res, Termination{})

		cut := NewWriter(st, red, history.Run{ID: "run-cut", Workspace: ws})
		cut.Begin("never ends", []json.RawMessage{json.RawMessage(`{"tool":"list_files"}`)})
		step := react.StepTrace{Iteration: 1, Thought: "look", Action: react.ToolCall{Tool: "list_files", Args: json.RawMessage(`{"path":"."}`)},
			Observation: "a.txt", TokenUsage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}
		cut.Handle(react.Event{Type: react.EventStep, Time: time.Now(), Fields: map[string]any{"step": step}})
	})

	book, rec, err := OpenRun(ctx, path, "run-failed")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := book.ResultJSON(ctx, rec)
	if err != nil || strings.Contains(string(doc), secret) || !strings.Contains(string(doc), `"termination_reason":"timeout"`) || rec.ExitCode != 7 {
		t.Errorf("failed run: %s (%v), exit %d", doc, err, rec.ExitCode)
	}
	if err := Resumable(rec); err != nil {
		t.Errorf("a timed-out run is resumable: %v", err)
	}
	book.Close()

	book, rec, err = OpenRunIn(ctx, path, Newest, ws, "continue")
	if err != nil || rec.ID != "run-cut" {
		t.Fatalf("newest in the workspace: %s, %v", rec.ID, err)
	}
	res, err := book.Result(ctx, rec)
	if err != nil || res.TerminationReason != history.ReasonInterrupted || len(res.Trace.Steps) != 1 ||
		res.Trace.Steps[0].Iteration != 1 || res.TokenUsage.PromptTokens != 10 {
		t.Errorf("interrupted run: %+v, %v", res, err)
	}
	r, err := book.Resumption(ctx, rec)
	if err != nil || len(r.Checkpoint) != 0 || string(r.PlanData) != "{\"tool\":\"list_files\"}\n" || r.Budget != react.BudgetKept {
		t.Errorf("resumption of a run without a checkpoint: %+v, %v", r, err)
	}
	done, err := book.st.Get(ctx, "run-done")
	if err != nil {
		t.Fatal(err)
	}
	turns := book.Conversation(ctx, done, 64)
	if len(turns) != 2 || turns[0].RunID != "run-failed" || turns[1].Result == nil || turns[1].Result.FinalAnswer != "42" {
		t.Errorf("conversation: %+v", turns)
	}
	if r, err := book.Resumption(ctx, done); err != nil || r.Budget != react.BudgetFresh {
		t.Errorf("a run out of steps resumes with a fresh budget: %+v, %v", r, err)
	}
	book.Close()
}

// Every way a named run is not there is an InputError (exit 2).
func TestOpenRunErrors(t *testing.T) {
	ctx := context.Background()
	none := func() (string, error) { return filepath.Join(t.TempDir(), "state", "runs.db"), nil }
	if b, err := Open(none); b != nil || err != nil {
		t.Errorf("no history yet: %v, %v", b, err)
	}
	path := record(t, func(st *history.Store, red *redact.Redactor) {
		NewWriter(st, red, history.Run{ID: "abc1"}).End("q", &react.Result{TerminationReason: react.ReasonSuccess}, Termination{})
		NewWriter(st, red, history.Run{ID: "abc2"}).End("q", &react.Result{TerminationReason: react.ReasonSuccess}, Termination{})
	})
	for _, tc := range []struct {
		path func() (string, error)
		ref  string
		want string
	}{
		{none, "abc1", `run "abc1": no runs recorded yet`},
		{path, "zzz", `run "zzz": no such run`},
		{path, "abc", "abc"},
	} {
		_, _, err := OpenRun(ctx, tc.path, tc.ref)
		if !errors.As(err, new(*InputError)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an InputError with %q", tc.ref, err, tc.want)
		}
	}
	_, rec, err := OpenRun(ctx, path, "abc1")
	if err != nil || !errors.As(Resumable(rec), new(*InputError)) {
		t.Errorf("a run that succeeded is not resumable: %v", err)
	}
}

// The termination event and the result document say the same.
func TestTermination(t *testing.T) {
	ok := Termination{Reason: react.ReasonSuccess}
	if f := ok.Event(llm.Usage{}); f["success"] != true || f["exit_code"] != 0 || f["message"] != nil {
		t.Errorf("success: %v", f)
	}
	bad := Termination{Reason: react.ReasonCancelled, ExitCode: 130, Message: "cancelled"}
	if f := bad.Event(llm.Usage{}); f["success"] != false || f["exit_code"] != 130 || f["message"] != "cancelled" || f["reason"] != react.ReasonCancelled {
		t.Errorf("cancelled: %v", f)
	}
	var doc map[string]any
	if err := json.Unmarshal(bad.Document("r1"), &doc); err != nil || doc["termination_reason"] != "cancelled" || doc["run_id"] != "r1" || doc["success"] != false {
		t.Errorf("document: %v, %v", doc, err)
	}
}
