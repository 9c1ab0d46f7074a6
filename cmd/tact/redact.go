package main

import (
	"io"

	"github.com/tactcli/tact/redact"
)

// redactingStderr wraps the CLI's stderr once, before logging is set up, so
// that logs, the progress line, --dry-run's listing and the final message
// all pass through one redacting writer.
func redactingStderr(streams *iostreams) {
	if _, ok := streams.ErrOut.(*redact.RedactWriter); !ok {
		streams.ErrOut = redact.NewRedactWriter(streams.ErrOut)
	}
}

// redactStderr makes everything written to stderr from now on redacted
// with red (see redactingStderr).
func redactStderr(streams *iostreams, red *redact.Redactor) {
	if rw, ok := streams.ErrOut.(*redact.RedactWriter); ok {
		rw.SetRedactor(red)
	}
}

// stderrRedactor is the Redactor stderr is redacted with (nil: none).
func stderrRedactor(w io.Writer) *redact.Redactor {
	if rw, ok := w.(*redact.RedactWriter); ok {
		return rw.Redactor()
	}
	return nil
}
