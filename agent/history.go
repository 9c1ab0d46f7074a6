package agent

// The run history (package history, docs/history.md): every job a
// recording runtime runs is kept as a record, written from the same
// redacted events as the trace, off the model's path, never failing a run.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/runrecord"
)

// openHistory opens the run history when the front end records runs and
// the settings keep it; a store that cannot be opened is one warning.
func (rt *Runtime) openHistory(s *config.Settings) {
	if !rt.opts.History || !s.History {
		return
	}
	path, err := history.DefaultPath()
	if err != nil {
		slog.Warn("no run history: "+err.Error(), "hint", "set XDG_STATE_HOME or HOME, or --no-history")
		return
	}
	var once sync.Once
	warn := func(err error) {
		once.Do(func() {
			slog.Warn("runs go on unrecorded: "+err.Error(), "hint", "--no-history turns the history off")
		})
	}
	rt.hist = history.OpenBestEffort(path, history.Options{Warn: warn})
	if rt.hist == nil {
		return
	}
	rt.startPruning(s.HistoryMaxAge, int64(s.HistoryMaxSize))
}

// pruneWait bounds how long Close waits for the history's prune to finish
// (a short command, cron's, exits after it, so the limits hold from the next
// run); one cut there is not recorded and runs again next time.
const pruneWait = 10 * time.Second

// pruneEvery is how often a runtime that stays open (tact serve, tact mcp
// serve, tact chat) asks whether a prune is due (history.MaybePrune: once
// a day, or at once when a quarter over --history-max-size); a variable
// for tests.
var pruneEvery = time.Hour

// startPruning prunes the history in the background, now and then every
// pruneEvery until Close, which waits for the first prune (within
// pruneWait) and stops the rest.
func (rt *Runtime) startPruning(maxAge time.Duration, maxSize int64) {
	ctx, cancel := context.WithCancel(context.Background())
	first, done := make(chan struct{}), make(chan struct{})
	rt.pruneStop = func() {
		select {
		case <-first:
		case <-time.After(pruneWait):
			slog.Debug("pruning the run history: not finished within " + pruneWait.String() + "; it goes on at the next run")
		}
		cancel()
		<-done
	}
	hist := rt.hist
	go func() {
		defer close(done)
		prune := func() {
			if _, _, err := hist.MaybePrune(ctx, maxAge, maxSize); err != nil && ctx.Err() == nil {
				slog.Debug("pruning the run history", "err", err)
			}
		}
		prune()
		close(first)
		tick := time.NewTicker(pruneEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				prune()
			}
		}
	}()
}

// newRecord is job's record in the run history (nil: none), written
// through runrecord.Writer.
func (rt *Runtime) newRecord(l *life, job Job) *runrecord.Writer {
	if rt.hist == nil {
		return nil
	}
	run := history.Run{
		ID: l.id, Command: rt.opts.Mode, Workspace: l.env.Workspace,
		Backend: infoString(rt.Info, "backend"), Model: infoString(rt.Info, "model"),
		Settings: string(rt.Redactor.RedactJSON(l.s.Snapshot(ResumedSettings))),
	}
	if job.Resume != nil {
		run.ResumedFrom = job.Resume.From
	}
	run.ParentID = job.ParentID
	if run.ParentID == "" && job.Conversation != nil {
		run.ParentID = job.Conversation.lastRun()
	}
	return runrecord.NewWriter(rt.hist, rt.Redactor, run)
}

func infoString(info map[string]any, key string) string {
	s, _ := info[key].(string)
	return s
}

// ResumedSettings are the settings a run's record keeps and a resumed run
// reuses unless its command line gives them: what changes what the run
// does. Secrets and values that may hold them (--env, --redact, the API
// key's variable) are not among them.
var ResumedSettings = []string{
	"NoPlan", "MaxIterations", "RetryBuffer", "ReplanThreshold", "AllowTools", "StopWhen", "ThoughtPrompt",
	"RequireThought", "MinThoughtLength", "SuccessPhrases", "FailurePhrases", "StallThreshold",
	"MaxObservationTokens", "CompactAt", "KeepSteps", "TokenBudget", "Timeout",
	"Backend", "Script", "Model", "BaseURL", "APIModel", "CtxSize", "Temperature", "TopK", "TopP", "MinP", "Seed", "MaxTokens",
	"ReadOnly", "DryRun", "Sandbox", "NoNetwork", "ToolTimeout",
}
