package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// Without -v, warnings and errors read as tact's other messages: one line,
// "tact: warning: ..." or "tact: ...", the error after a colon, other
// attributes in parentheses; with -v, slog's key=value lines.
func TestLogStyle(t *testing.T) {
	var b strings.Builder
	log := newLogger(&b, slog.LevelWarn)
	log.Info("hidden")
	log.Warn("MCP server fs did not start; its tools are absent", "err", errors.New("exited with status 1: boom"))
	log.Warn("MCP tool skipped", "server", "evil", "tool", `"a b"`)
	log.With("server", "s").WithGroup("g").Warn("stopped", "pid", 7)
	log.Error("closing", "err", errors.New("two\nlines"))
	log.Warn("escape \x1b[2J here")
	want := `tact: warning: MCP server fs did not start; its tools are absent: exited with status 1: boom
tact: warning: MCP tool skipped (server=evil, tool="\"a b\"")
tact: warning: stopped (server=s, g.pid=7)
tact: closing: two; lines
tact: warning: escape \u001b[2J here
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	newLogger(&b, slog.LevelError).Warn("quiet")
	if b.Len() != 0 {
		t.Errorf("--quiet: %q", b.String())
	}
	newLogger(&b, slog.LevelDebug).Warn("verbose", "err", "x")
	if !strings.Contains(b.String(), `level=WARN msg=verbose err=x`) {
		t.Errorf("-v: %q", b.String())
	}
}
