package agent

// Going on from the run history (docs/history.md): --resume RUN (run,
// exec) continues a run that did not succeed from its last finished step;
// --continue[=RUN] (run) and chat --resume RUN ask a follow-up with the
// earlier run's conversation as context. The records are read through
// runrecord; this file turns them into jobs.

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/runrecord"
)

// maxTurns bounds the earlier turns a follow-up collects: the executor
// folds the oldest anyway.
const maxTurns = 64

// ResumeJob is the job that goes on with run ref (an id, a unique prefix,
// or last: the newest run in s.Workspace): the run's settings come back
// into s unless given says its flag was given (and its workspace unless
// --workspace was); a run that succeeded, or whose workspace or model
// file is gone, is refused.
func ResumeJob(ctx context.Context, s *config.Settings, ref string, given func(flag string) bool) (Job, error) {
	b, rec, err := runrecord.OpenRunIn(ctx, history.DefaultPath, ref, s.Workspace, "resume")
	if err != nil {
		return Job{}, err
	}
	defer b.Close()
	if err := runrecord.Resumable(rec); err != nil {
		return Job{}, err
	}
	if err := s.Restore([]byte(rec.Settings), ResumedSettings, func(field string) bool { return given(config.Flag(field)) }); err != nil {
		return Job{}, badInputf("run %s: %v", rec.ID, err)
	}
	if !given("workspace") {
		s.Workspace = rec.Workspace
	}
	if fi, err := os.Stat(s.Workspace); err != nil || !fi.IsDir() {
		return Job{}, badInputf("run %s cannot be resumed: its workspace %s is gone", rec.ID, s.Workspace)
	}
	if m := s.Model; m != "" && (strings.ContainsRune(m, filepath.Separator) || strings.HasSuffix(m, ".gguf")) {
		if _, err := os.Stat(m); err != nil {
			return Job{}, badInputf("run %s cannot be resumed: its model %s is gone (give --model)", rec.ID, m)
		}
	}
	r, err := b.Resumption(ctx, rec)
	if err != nil {
		return Job{}, err
	}
	if _, perr := runrecord.PendingOf(rec.ID, r.Checkpoint); perr == nil {
		// Killed after it paused (its record reads interrupted): it still
		// waits for an answer, and a resume would go on without one.
		return Job{}, badInputf("run %s waits for an answer: tact answer %s", rec.ID, rec.ID)
	}
	return Job{Query: rec.Query, PlanName: r.PlanName, PlanData: r.PlanData,
		Resume: &Resume{From: rec.ID, Checkpoint: r.Checkpoint, Budget: r.Budget}}, nil
}

// EarlierTurns are run ref's conversation, oldest first: the runs it
// followed up (its parents), then itself. ref runrecord.Newest (a bare
// --continue) and last are the newest run in workspace.
func EarlierTurns(ctx context.Context, ref, workspace string) ([]Turn, error) {
	b, rec, err := runrecord.OpenRunIn(ctx, history.DefaultPath, ref, workspace, "continue")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Conversation(ctx, rec, maxTurns), nil
}
