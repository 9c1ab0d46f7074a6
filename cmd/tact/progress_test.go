package main

import (
	"bytes"
	"testing"
)

// The progress line is drawn only when stderr is a terminal (and not --quiet),
// and it is erased when the run ends so only logs and the answer remain.
func TestProgressOnlyOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		tty, quiet bool
		want       string
	}{
		{false, false, ""},
		{true, true, ""},
		{true, false, "\r\033[Kstep 1: thinking\r\033[K"},
	} {
		var buf bytes.Buffer
		p := newProgress(&iostreams{ErrOut: &buf, StderrTTY: tc.tty}, tc.quiet)
		p.update("step 1: thinking")
		p.done()
		p.done() // a second done draws nothing more
		if buf.String() != tc.want {
			t.Errorf("tty=%v quiet=%v: %q, want %q", tc.tty, tc.quiet, buf.String(), tc.want)
		}
	}
}
