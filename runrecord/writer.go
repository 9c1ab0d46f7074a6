package runrecord

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
)

// checkpointWait bounds how long a run waits for its checkpoint to be
// committed before its next action: a store slower than that (another
// process holding its lock) costs the run this much a step at most.
const checkpointWait = 2 * time.Second

// Writer is one job's record: a sink of its events that starts the record
// once the run's plan is known (or the job ends before), keeping the
// events before that. Every method is safe on a nil Writer (no history).
type Writer struct {
	store *history.Store
	red   *redact.Redactor
	mu    sync.Mutex
	run   history.Run
	rec   *history.Recorder
	held  []string // trace lines before the record began
	// lines formats events as the trace does, redacted.
	lines *react.TraceWriter
	buf   bytes.Buffer
	ended bool
}

// NewWriter is the record of run in store (nil when store is nil). run's
// text fields are the caller's, already redacted; red redacts what the
// writer is given later (queries, plans, trace lines, answers).
func NewWriter(store *history.Store, red *redact.Redactor, run history.Run) *Writer {
	if store == nil {
		return nil
	}
	w := &Writer{store: store, red: red, run: run}
	w.lines = react.NewTraceWriter(&w.buf, func(line string) string { return string(red.RedactJSON([]byte(line))) })
	return w
}

// Begin starts the record with the run's query and plan.
func (w *Writer) Begin(query string, plan []json.RawMessage) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.beginLocked(query, plan)
}

func (w *Writer) beginLocked(query string, plan []json.RawMessage) {
	if w.rec != nil {
		return
	}
	w.run.Query = w.red.Redact(query)
	if len(plan) > 0 {
		b, _ := json.Marshal(plan)
		w.run.Plan = string(w.red.RedactJSON(b))
	}
	w.rec = w.store.Begin(w.run)
	for _, line := range w.held {
		w.rec.Event(line)
	}
	w.held = nil
}

// Handle records an event: its trace line, and a step as a step.
func (w *Writer) Handle(ev react.Event) {
	if w == nil || ev.Type == react.EventProgress {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	w.lines.Handle(ev)
	line := strings.TrimSuffix(w.buf.String(), "\n")
	if w.rec == nil {
		if ev.Type == react.EventRunStart {
			w.run.StartedAt = ev.Time
		}
		w.held = append(w.held, line)
		return
	}
	if ev.Type == react.EventStep {
		var st react.StepTrace
		if err := ev.Decode("step", &st); err == nil {
			w.rec.Step(storedStep(st))
		}
	}
	w.rec.Event(line)
}

// storedStep is a trace's step as the store keeps it: its index counts
// from 0, a trace's iteration from 1 (stepTrace turns it back).
func storedStep(st react.StepTrace) history.Step {
	return history.Step{
		Index: st.Iteration - 1, Thought: st.Thought, Tool: st.Action.Tool, Args: string(st.Action.Args),
		Decision: st.Decision, Observation: st.Observation, ExitCode: st.ExitCode, StartedAt: st.Timestamp,
		Usage: storedUsage(st.TokenUsage),
	}
}

func storedUsage(u llm.Usage) history.Usage {
	return history.Usage{Prompt: int64(u.PromptTokens), Completion: int64(u.CompletionTokens), Cached: int64(u.CachedTokens)}
}

// Checkpoint keeps the run's latest checkpoint and waits (bounded) until
// it is committed, so that a finished tool run is on disk before the next
// action starts.
func (w *Writer) Checkpoint(cp react.Checkpoint) {
	if w == nil {
		return
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return
	}
	w.mu.Lock()
	rec := w.rec
	w.mu.Unlock()
	if rec == nil {
		return
	}
	// Every text in a checkpoint is redacted by the executor that makes it
	// (react.Checkpoint): its one redaction site, as the trace lines' is
	// Handle's. A second pass here cost about 1.4 ms a step (make bench).
	rec.Checkpoint(string(b))
	ctx, cancel := context.WithTimeout(context.Background(), checkpointWait)
	defer cancel()
	_ = w.store.Flush(ctx) // a store error is the store's one warning
}

// End finishes the record with the run's result, or, when the job ended
// before the executor did (res nil), with how it ended (t).
func (w *Writer) End(query string, res *react.Result, t Termination) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended = true
	w.beginLocked(query, nil)
	f := history.Final{}
	if res != nil {
		f.Answer, f.Reason, f.ExitCode = res.FinalAnswer, string(res.TerminationReason), res.ExitCode()
		f.Usage, f.Steps = storedUsage(res.TokenUsage), len(res.Trace.Steps)
		f.Duration = time.Duration(res.ExecutionTimeMS) * time.Millisecond
		// As --json prints it (no HTML escaping), so log show gives back
		// the same bytes.
		if b, jerr := text.JSON(res); jerr == nil {
			f.Result = string(w.red.RedactJSON(b))
		}
	} else {
		f.Reason, f.ExitCode = string(t.Reason), t.ExitCode
		if !t.Success() {
			t.Message = w.red.Redact(t.Message)
			f.Result = string(t.Document(w.run.ID))
		}
	}
	f.Answer = w.red.Redact(f.Answer)
	w.rec.End(f)
}
