package redact

import (
	"io"
	"sync"
)

// RedactWriter redacts what is written through it, so nothing reaches the
// underlying writer (the CLI's stderr) unredacted. Its Redactor may be set
// after it is built: the CLI knows its secrets only once the flags are
// parsed, and text written before passes unchanged. Each Write is redacted
// as a unit, so callers write whole messages: slog writes one record a
// Write, fmt.Fprintf one message.
type RedactWriter struct {
	mu  sync.Mutex
	w   io.Writer
	red *Redactor
}

// NewRedactWriter wraps w; it redacts nothing until SetRedactor.
func NewRedactWriter(w io.Writer) *RedactWriter { return &RedactWriter{w: w} }

// SetRedactor makes later writes redacted with r (nil: none).
func (rw *RedactWriter) SetRedactor(r *Redactor) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.red = r
}

// Redactor returns the Redactor in use (nil when none).
func (rw *RedactWriter) Redactor() *Redactor {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.red
}

// Write redacts p and writes it whole; it reports len(p) on success, as
// io.Writer requires, whatever the redacted length.
func (rw *RedactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.red == nil {
		return rw.w.Write(p)
	}
	if _, err := io.WriteString(rw.w, rw.red.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
