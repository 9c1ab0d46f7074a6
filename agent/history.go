package agent

// The run history (package history, docs/history.md): every job a
// recording runtime runs is kept as a record, written from the same
// redacted events as the trace, off the model's path, never failing a run.

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
)

// checkpointWait bounds how long a run waits for its checkpoint to be
// committed before its next action: a store slower than that (another
// process holding its lock) costs the run this much a step at most.
const checkpointWait = 2 * time.Second

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

// runRecord is one job's record: a sink of its events that starts the
// record once the run's plan is known (or the job ends before), keeping
// the events before that.
type runRecord struct {
	rt   *Runtime
	mu   sync.Mutex
	run  history.Run
	rec  *history.Recorder
	held []string // trace lines before the record began
	// lines formats events as the trace does, redacted.
	lines *react.TraceWriter
	buf   bytes.Buffer
	ended bool
}

func (rt *Runtime) newRecord(l *life, job Job) *runRecord {
	if rt.hist == nil {
		return nil
	}
	r := &runRecord{rt: rt, run: history.Run{
		ID: l.id, Command: rt.opts.Mode, Workspace: rt.Env.Workspace,
		Backend: infoString(rt.Info, "backend"), Model: infoString(rt.Info, "model"),
		Settings: string(rt.Redactor.RedactJSON(l.s.Snapshot(ResumedSettings))),
	}}
	if job.Resume != nil {
		r.run.ResumedFrom = job.Resume.From
	}
	r.run.ParentID = job.ParentID
	if r.run.ParentID == "" && job.Conversation != nil {
		r.run.ParentID = job.Conversation.lastRun()
	}
	r.lines = react.NewTraceWriter(&r.buf, func(line string) string { return string(rt.Redactor.RedactJSON([]byte(line))) })
	return r
}

func infoString(info map[string]any, key string) string {
	s, _ := info[key].(string)
	return s
}

// begin starts the record with the run's query and plan.
func (r *runRecord) begin(query string, plan []json.RawMessage) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beginLocked(query, plan)
}

func (r *runRecord) beginLocked(query string, plan []json.RawMessage) {
	if r.rec != nil {
		return
	}
	r.run.Query = r.rt.Redactor.Redact(query)
	if len(plan) > 0 {
		b, _ := json.Marshal(plan)
		r.run.Plan = string(r.rt.Redactor.RedactJSON(b))
	}
	r.rec = r.rt.hist.Begin(r.run)
	for _, line := range r.held {
		r.rec.Event(line)
	}
	r.held = nil
}

// Handle records an event: its trace line, and a step as a step.
func (r *runRecord) Handle(ev react.Event) {
	if r == nil || ev.Type == react.EventProgress {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Reset()
	r.lines.Handle(ev)
	line := strings.TrimSuffix(r.buf.String(), "\n")
	if r.rec == nil {
		if ev.Type == react.EventRunStart {
			r.run.StartedAt = ev.Time
		}
		r.held = append(r.held, line)
		return
	}
	if ev.Type == react.EventStep {
		var st react.StepTrace
		if err := ev.Decode("step", &st); err == nil {
			r.rec.Step(historyStep(st))
		}
	}
	r.rec.Event(line)
}

func historyStep(st react.StepTrace) history.Step {
	return history.Step{
		Index: st.Iteration - 1, Thought: st.Thought, Tool: st.Action.Tool, Args: string(st.Action.Args),
		Decision: st.Decision, Observation: st.Observation, ExitCode: st.ExitCode, StartedAt: st.Timestamp,
		Usage: historyUsage(st.TokenUsage),
	}
}

func historyUsage(u llm.Usage) history.Usage {
	return history.Usage{Prompt: int64(u.PromptTokens), Completion: int64(u.CompletionTokens), Cached: int64(u.CachedTokens)}
}

// checkpoint keeps the run's latest checkpoint and waits (bounded) until
// it is committed, so that a finished tool run is on disk before the next
// action starts.
func (r *runRecord) checkpoint(cp react.Checkpoint) {
	if r == nil {
		return
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return
	}
	r.mu.Lock()
	rec := r.rec
	r.mu.Unlock()
	if rec == nil {
		return
	}
	// Every text in a checkpoint is redacted by the executor that makes it
	// (react.Checkpoint): its one redaction site, as the trace lines' is
	// Handle's. A second pass here cost about 1.4 ms a step (make bench).
	rec.Checkpoint(string(b))
	ctx, cancel := context.WithTimeout(context.Background(), checkpointWait)
	defer cancel()
	_ = r.rt.hist.Flush(ctx) // a store error is the store's one warning
}

// end finishes the record with the run's result, or with err when the job
// ended before the executor did.
func (r *runRecord) end(query string, res *react.Result, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = true
	r.beginLocked(query, nil)
	f := history.Final{}
	if res != nil {
		f.Answer, f.Reason, f.ExitCode = res.FinalAnswer, string(res.TerminationReason), res.ExitCode()
		f.Usage, f.Steps = historyUsage(res.TokenUsage), len(res.Trace.Steps)
		f.Duration = time.Duration(res.ExecutionTimeMS) * time.Millisecond
		// As --json prints it (no HTML escaping), so log show gives back
		// the same bytes.
		if b, jerr := text.JSON(res); jerr == nil {
			f.Result = string(r.rt.Redactor.RedactJSON(b))
		}
	} else {
		f.Reason, f.ExitCode = string(react.ReasonError), ExitCode(err)
		switch KindOf(err) {
		case ErrTimeout:
			f.Reason = string(react.ReasonTimeout)
		case ErrCancelled:
			f.Reason = string(react.ReasonCancelled)
		}
		if err != nil {
			f.Answer = ""
			b, _ := text.JSON(map[string]any{"run_id": r.run.ID, "success": false, "final_answer": "",
				"termination_reason": f.Reason, "message": r.rt.Redactor.Redact(err.Error())})
			f.Result = string(b)
		}
	}
	f.Answer = r.rt.Redactor.Redact(f.Answer)
	r.rec.End(f)
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
