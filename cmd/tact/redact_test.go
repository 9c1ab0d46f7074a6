package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/tactcli/tact/redact"
)

// Everything written to stderr once the run knows its secrets is redacted:
// logs and the progress line, whose 78-column cut must not split a secret
// into a part the redactor no longer recognises.
func TestStderrRedacted(t *testing.T) {
	const secret = "supersecretval"
	var buf bytes.Buffer
	streams := &iostreams{ErrOut: &buf, StderrTTY: true}
	redactingStderr(streams)
	redactingStderr(streams) // wrapping twice keeps one writer
	if _, ok := streams.ErrOut.(*redact.RedactWriter); !ok {
		t.Fatalf("stderr is %T", streams.ErrOut)
	}
	red, err := redact.NewRedactor([]string{"MY_API_KEY=" + secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	redactStderr(streams, red)
	p := newProgress(streams, false)
	p.update("step 1: reading " + secret)
	p.update(strings.Repeat("x", 70) + secret + " and more")
	p.done()
	slog.New(slog.NewTextHandler(streams.ErrOut, nil)).Warn("invalid plan", "err", "tool "+secret)
	out := buf.String()
	for i := 0; i+4 <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+4]) {
			t.Fatalf("stderr holds %q: %q", secret[i:i+4], out)
		}
	}
	if !strings.Contains(out, "reading [REDACTED]") || !strings.Contains(out, "tool [REDACTED]") {
		t.Fatalf("stderr %q", out)
	}
}
