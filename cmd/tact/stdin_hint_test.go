package main

import (
	"bytes"
	"testing"

	"github.com/creack/pty"
)

// Regression (was a bug; fixed) (shared.go readPlanInput): `tact exec` with no plan
// on a terminal waited for input; `tact run` printed a hint.
// Expected: both print a hint and exit 2 at once.
func TestTerminalStdinHint(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pseudo-terminal:", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	ios := &iostreams{In: tty, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	_, _, err = readPlanInput(ios, nil)
	if err == nil || err.Error() != "no plan: pass a plan file, or pipe one in (use - to type it on the terminal)" {
		t.Fatalf("exec: %v", err)
	}
	if _, err := readQuery(ios, nil); err == nil || err.Error() != "no query: pass it as arguments, or pipe it in (use - to type it on the terminal)" {
		t.Fatalf("run: %v", err)
	}
}
