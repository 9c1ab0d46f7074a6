package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/react"
)

// Going on from the run history (docs/history.md): --resume RUN (run,
// exec) continues a run that did not succeed from its last finished step;
// --continue[=RUN] (run) and chat --resume RUN ask a follow-up with the
// earlier run's conversation as context.

// continueNewest is --continue given without a run: the newest run in the
// workspace.
const continueNewest = "newest"

// maxTurns bounds the earlier turns a follow-up collects: the executor
// folds the oldest anyway.
const maxTurns = 64

// historyFlags are the flags that name an earlier run.
type historyFlags struct {
	Resume   string // --resume RUN
	Continue string // --continue[=RUN]; continueNewest when given bare
	// Changed says whether a flag was given on the command line (a
	// resumed run keeps the recorded settings of the others).
	Changed func(flag string) bool
}

func addResumeFlag(f *pflag.FlagSet, h *historyFlags, what string) {
	defer helpGroup(f, "Run history")()
	f.StringVar(&h.Resume, "resume", "", what)
}

func addContinueFlag(f *pflag.FlagSet, h *historyFlags) {
	defer helpGroup(f, "Run history")()
	f.StringVarP(&h.Continue, "continue", "c", "", "ask a follow-up of the newest run in the workspace (--continue=RUN: of that run), with its conversation as context")
	f.Lookup("continue").NoOptDefVal = continueNewest
}

// resumeJob is the job that goes on with run ref: the run's settings come
// back unless a flag gives them (and its workspace unless --workspace
// does); a run that succeeded, or whose workspace or model file is gone,
// is refused.
func resumeJob(ctx context.Context, s *config.Settings, h *historyFlags) (agent.Job, error) {
	st, rec, err := findRun(ctx, h.Resume, s.Workspace, "resume")
	if err != nil {
		return agent.Job{}, err
	}
	defer st.Close()
	if rec.Reason == string(react.ReasonSuccess) {
		return agent.Job{}, badInputf("run %s succeeded: there is nothing to resume (tact run --continue=%s asks a follow-up)", rec.ID, rec.ID)
	}
	if err := s.Restore([]byte(rec.Settings), agent.ResumedSettings, func(field string) bool { return h.Changed(config.Flag(field)) }); err != nil {
		return agent.Job{}, badInputf("run %s: %v", rec.ID, err)
	}
	if !h.Changed("workspace") {
		s.Workspace = rec.Workspace
	}
	if fi, err := os.Stat(s.Workspace); err != nil || !fi.IsDir() {
		return agent.Job{}, badInputf("run %s cannot be resumed: its workspace %s is gone", rec.ID, s.Workspace)
	}
	if m := s.Model; m != "" && (strings.ContainsRune(m, filepath.Separator) || strings.HasSuffix(m, ".gguf")) {
		if _, err := os.Stat(m); err != nil {
			return agent.Job{}, badInputf("run %s cannot be resumed: its model %s is gone (give --model)", rec.ID, m)
		}
	}
	cp, err := st.Checkpoint(ctx, rec.ID)
	if err != nil {
		return agent.Job{}, badInputf("run history: %v", err)
	}
	budget := react.BudgetKept
	if rec.Reason == string(react.ReasonMaxIterations) || rec.Reason == string(react.ReasonTokenBudget) {
		budget = react.BudgetFresh
	}
	job := agent.Job{Query: rec.Query, Resume: &agent.Resume{From: rec.ID, Checkpoint: []byte(cp), Budget: budget}}
	if cp == "" && rec.Plan != "" {
		// No step finished: the run starts again with its plan.
		var rows []json.RawMessage
		if err := json.Unmarshal([]byte(rec.Plan), &rows); err != nil {
			return agent.Job{}, badInputf("run %s: its plan does not read: %v", rec.ID, err)
		}
		var b strings.Builder
		for _, r := range rows {
			b.Write(r)
			b.WriteByte('\n')
		}
		job.PlanName, job.PlanData = "run "+rec.ID, []byte(b.String())
	}
	return job, nil
}

// findRun opens the history and finds run ref: an id or a unique prefix
// of one, or "last" (continueNewest too), the newest run in workspace, not
// of any workspace: a `tact serve` client's run, or one in another project,
// is never picked up by accident. what ("resume", "continue") is for the
// message when there is none. The caller closes the store.
func findRun(ctx context.Context, ref, workspace, what string) (*history.Store, history.Record, error) {
	if ref != history.LastRun && ref != continueNewest {
		return openRun(ctx, history.DefaultPath, ref)
	}
	ws, err := workspaceKey(workspace)
	if err != nil {
		return nil, history.Record{}, badInputf("--workspace: %v", err)
	}
	st, err := openHistory(history.DefaultPath)
	if err != nil {
		return nil, history.Record{}, err
	}
	var rec history.Record
	if st != nil {
		rec, err = st.Last(ctx, ws)
	}
	if st == nil || errors.Is(err, history.ErrNotFound) {
		st.Close()
		return nil, history.Record{}, badInputf("no run in %s to %s (last is the newest run in this workspace; tact log lists the runs, an id names one)", ws, what)
	} else if err != nil {
		st.Close()
		return nil, history.Record{}, historyError(err)
	}
	return st, rec, nil
}

// earlierTurns are run ref's conversation, oldest first: the runs it
// followed up (its parents), then itself. ref continueNewest (a bare
// --continue) and "last" are the newest run in workspace.
func earlierTurns(ctx context.Context, ref, workspace string) ([]agent.Turn, error) {
	st, rec, err := findRun(ctx, ref, workspace, "continue")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var turns []agent.Turn
	seen := map[string]bool{}
	for len(turns) < maxTurns && !seen[rec.ID] {
		seen[rec.ID] = true
		t := agent.Turn{RunID: rec.ID, Query: rec.Query}
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
		parent, err := st.Get(ctx, rec.ParentID)
		if err != nil {
			break // pruned: the chain starts here
		}
		rec = parent
	}
	for i, j := 0, len(turns)-1; i < j; i, j = i+1, j-1 {
		turns[i], turns[j] = turns[j], turns[i]
	}
	return turns, nil
}
