package runrecord

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/react"
)

// Resumption is what going on with a recorded run (--resume) takes from
// its record, besides its settings and workspace.
type Resumption struct {
	// Checkpoint is the run's latest (react.Checkpoint, JSON); empty when
	// no step finished.
	Checkpoint []byte
	// Budget: a run that ran out of steps or tokens gets a fresh budget;
	// any other keeps what it had left.
	Budget react.Budget
	// PlanName and PlanData: the run's plan as a saved plan's lines, for
	// a run that starts again because no step finished (nil: no plan).
	PlanName string
	PlanData []byte
}

// Resumable refuses a run that succeeded: there is nothing to resume.
func Resumable(rec history.Record) error {
	if rec.Reason == string(react.ReasonSuccess) {
		return inputErrorf("run %s succeeded: there is nothing to resume (tact run --continue=%s asks a follow-up)", rec.ID, rec.ID)
	}
	if rec.Reason == string(react.ReasonNeedsInput) {
		return inputErrorf("run %s waits for an answer: tact answer %s", rec.ID, rec.ID)
	}
	return nil
}

// Resumption reads what resuming rec takes: its checkpoint, its budget,
// and its plan when no step finished.
func (b *Book) Resumption(ctx context.Context, rec history.Record) (Resumption, error) {
	cp, err := b.st.Checkpoint(ctx, rec.ID)
	if err != nil {
		return Resumption{}, inputErrorf("run history: %v", err)
	}
	r := Resumption{Checkpoint: []byte(cp), Budget: react.BudgetKept}
	if rec.Reason == string(react.ReasonMaxIterations) || rec.Reason == string(react.ReasonTokenBudget) {
		r.Budget = react.BudgetFresh
	}
	if cp == "" && rec.Plan != "" {
		// No step finished: the run starts again with its plan.
		var rows []json.RawMessage
		if err := json.Unmarshal([]byte(rec.Plan), &rows); err != nil {
			return Resumption{}, inputErrorf("run %s: its plan does not read: %v", rec.ID, err)
		}
		var sb strings.Builder
		for _, row := range rows {
			sb.Write(row)
			sb.WriteByte('\n')
		}
		r.PlanName, r.PlanData = "run "+rec.ID, []byte(sb.String())
	}
	return r, nil
}

// Turn is one earlier run of a conversation: its query and, when it
// ended, its result document.
type Turn struct {
	RunID  string
	Query  string
	Result *react.Result
}

// Conversation is rec's conversation, oldest first: the runs it followed
// up (its parents), then itself; at most max turns (the newest), and the
// chain starts where a parent was pruned.
func (b *Book) Conversation(ctx context.Context, rec history.Record, max int) []Turn {
	var turns []Turn
	seen := map[string]bool{}
	for len(turns) < max && !seen[rec.ID] {
		seen[rec.ID] = true
		t := Turn{RunID: rec.ID, Query: rec.Query}
		if rec.Result != "" {
			var res react.Result
			if json.Unmarshal([]byte(rec.Result), &res) == nil {
				t.Result = &res
			}
		}
		turns = append(turns, t)
		if rec.ParentID == "" {
			break
		}
		parent, err := b.st.Get(ctx, rec.ParentID)
		if err != nil {
			break // pruned: the chain starts here
		}
		rec = parent
	}
	for i, j := 0, len(turns)-1; i < j; i, j = i+1, j-1 {
		turns[i], turns[j] = turns[j], turns[i]
	}
	return turns
}
