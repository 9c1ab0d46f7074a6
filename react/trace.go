package react

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"
)

// TraceWriter appends JSONL events, one Write per event, so a killed run
// leaves a readable trace up to its last event (open the file with O_APPEND;
// an *os.File is unbuffered, so each event reaches the kernel at once).
type TraceWriter struct {
	mu     sync.Mutex
	w      io.Writer
	redact func(string) string
	err    error
}

// NewTraceWriter writes to w, passing every line through redact (may be nil).
func NewTraceWriter(w io.Writer, redact func(string) string) *TraceWriter {
	return &TraceWriter{w: w, redact: redact}
}

// Handle writes a run's event with its run_id; progress events are not
// written (they only draw the terminal's status line).
func (t *TraceWriter) Handle(ev Event) {
	if t == nil || ev.Type == EventProgress {
		return
	}
	f := make(map[string]any, len(ev.Fields)+1)
	for k, v := range ev.Fields {
		f[k] = v
	}
	if ev.RunID != "" {
		f["run_id"] = ev.RunID
	}
	t.write(ev.Type, ev.Time, f)
}

// Emit writes one event that belongs to no run. Errors are remembered (Err)
// and later events dropped.
func (t *TraceWriter) Emit(event string, fields map[string]any) {
	t.write(event, time.Now(), fields)
}

func (t *TraceWriter) write(event string, at time.Time, fields map[string]any) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	m := make(map[string]any, len(fields)+2)
	for k, v := range fields {
		m[k] = v
	}
	m["event"] = event
	m["time"] = at.UTC().Format(time.RFC3339Nano)
	// No HTML escaping: "<" and ">" stay readable in commands and output.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.err = err
		return
	}
	line := strings.TrimSuffix(buf.String(), "\n")
	if t.redact != nil {
		line = t.redact(line)
	}
	_, t.err = io.WriteString(t.w, line+"\n")
}

// Err returns the first write error.
func (t *TraceWriter) Err() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
