package main

import (
	"io"

	"github.com/tactcli/tact/exec"
)

// redactingStderr wraps the CLI's stderr once, before logging is set up, so
// that logs, the progress line, --dry-run's listing and the final message
// all pass through one redacting writer.
func redactingStderr(streams *iostreams) {
	if _, ok := streams.ErrOut.(*exec.RedactWriter); !ok {
		streams.ErrOut = exec.NewRedactWriter(streams.ErrOut)
	}
}

// redactStderr makes everything written to stderr from now on redacted
// with red (see redactingStderr).
func redactStderr(streams *iostreams, red *exec.Redactor) {
	if rw, ok := streams.ErrOut.(*exec.RedactWriter); ok {
		rw.SetRedactor(red)
	}
}

// stderrRedactor is the Redactor stderr is redacted with (nil: none).
func stderrRedactor(w io.Writer) *exec.Redactor {
	if rw, ok := w.(*exec.RedactWriter); ok {
		return rw.Redactor()
	}
	return nil
}
