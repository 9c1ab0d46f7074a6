package react

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tactcli/tact/internal/text"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/redact"
)

// Event names: the trace's "event" field. docs/cli.md lists them.
const (
	EventRunStart      = "run_start"
	EventPlanning      = "planning"
	EventPlanInvalid   = "plan_invalid"
	EventExecuteStart  = "execute_start"
	EventPlan          = "plan"
	EventAction        = "action" // a tool call as it starts, before approval and its run
	EventStep          = "step"
	EventSkip          = "skip"
	EventInvalidAction = "invalid_action"
	EventDenied        = "denied"
	EventReplanRequest = "replan_request"
	EventReplan        = "replan"
	EventReplanFailed  = "replan_failed"
	EventModelCall     = "model_call"
	// EventModelReply is a model call's reply (every kind, the planner's
	// too) and its prompt's digest (llm.PromptDigest): what tact test
	// record makes a cassette of.
	EventModelReply  = "model_reply"
	EventCompaction  = "compaction"
	EventFallback    = "fallback"
	EventTermination = "termination"
	// EventProgress is a one-line status for a terminal ("line"); it is not
	// written to the trace.
	EventProgress = "progress"
)

// Event is one thing that happened in a run. Fields hold JSON-ready values,
// already redacted when the executor made them.
type Event struct {
	RunID  string
	Type   string
	Time   time.Time
	Fields map[string]any
	// Ctx is the context of the run's caller (run_start's at least): a
	// sink that continues a trace (package telemetry) finds its parent
	// there. Never written to the trace.
	Ctx context.Context
}

// Decode reads field name into v: the executor's fields are JSON already
// (json.RawMessage), the engine's are Go values.
func (ev Event) Decode(name string, v any) error {
	raw, ok := ev.Fields[name].(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(ev.Fields[name]); err != nil {
			return err
		}
	}
	return json.Unmarshal(raw, v)
}

// Sink receives a run's events: the JSONL trace, the terminal progress line
// and the dry-run listing are sinks. Handle may be called from several runs
// at once; a sink that keeps state locks it.
type Sink interface {
	Handle(Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

func (f SinkFunc) Handle(ev Event) { f(ev) }

// Sinks fans an event out to every non-nil sink, in order.
type Sinks []Sink

func (s Sinks) Handle(ev Event) {
	for _, k := range s {
		if k != nil {
			k.Handle(ev)
		}
	}
}

// NewRunID returns a fresh random run id (16 hex digits).
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// MaxRunIDLength bounds a run id a client chooses (CheckRunID).
const MaxRunIDLength = 128

// CheckRunID refuses a run id a client chose that is not a plain word: it
// reaches hooks and approvers as TACT_RUN_ID and "run_id", the run history
// and file names, where a NUL stops a hook from starting, and "/", ".." or a
// newline mislead whoever uses it. Allowed: 1 to 128 letters, digits, '.',
// '_' and '-', starting with a letter or a digit, no "..".
func CheckRunID(id string) error {
	switch {
	case id == "":
		return errors.New("empty")
	case len(id) > MaxRunIDLength:
		return fmt.Errorf("%d bytes, at most %d", len(id), MaxRunIDLength)
	case strings.Contains(id, ".."):
		return fmt.Errorf("%q holds \"..\"", id)
	}
	for i, c := range []byte(id) {
		word := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !word && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("%q: byte %d (%q) is not allowed (letters, digits, '.', '_' and '-', starting with a letter or digit)", id, i, c)
		}
	}
	return nil
}

// progressSink calls fn with each progress line.
type progressSink struct {
	mu sync.Mutex
	fn func(string)
}

// ProgressSink is a sink that passes each progress event's line to fn.
func ProgressSink(fn func(line string)) Sink { return &progressSink{fn: fn} }

func (p *progressSink) Handle(ev Event) {
	if ev.Type != EventProgress {
		return
	}
	line, _ := ev.Fields["line"].(string)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn(line)
}

// progress sends a one-line status to a terminal (not to the trace).
func (r *run) progress(format string, a ...any) {
	if r.e.Events != nil {
		r.e.Events.Handle(Event{RunID: r.id, Type: EventProgress, Time: time.Now(), Fields: map[string]any{"line": fmt.Sprintf(format, a...)}})
	}
}

// emit writes a trace event with its fields redacted (the trace is an exit,
// whatever redaction the TraceWriter itself applies).
func (r *run) emit(event string, fields map[string]any) {
	if r.e.Events == nil {
		return
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		b, err := text.JSON(v)
		if err != nil {
			out[k] = v
			continue
		}
		out[k] = json.RawMessage(redact.RedactJSONWith(b, r.e.Redact))
	}
	r.e.Events.Handle(Event{RunID: r.id, Type: event, Time: time.Now(), Fields: out, Ctx: r.ctx})
}

// redactJSON redacts the strings of a JSON value, keeping it valid JSON.
func (r *run) redactJSON(raw json.RawMessage) json.RawMessage {
	return redact.RedactJSONWith(raw, r.e.Redact)
}
