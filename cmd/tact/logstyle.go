package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/tactcli/tact/policy"
)

// newLogger is the logger of the CLI's commands: with -v (level debug)
// slog's structured key=value lines; otherwise warnings and errors in the
// style of tact's other messages (plainHandler). tact serve keeps its JSON
// logs (docs/serve.md).
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	if level <= slog.LevelDebug {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(&plainHandler{w: w, level: level, mu: &sync.Mutex{}})
}

// plainHandler writes a record as one line: "tact: warning: MESSAGE: ERR
// (key=value, ...)" for warnings, "tact: MESSAGE ..." for errors, the way
// tact's final error line reads. An "err" attribute follows the message
// after a colon; the others go in parentheses.
type plainHandler struct {
	w      io.Writer
	level  slog.Level
	attrs  []slog.Attr
	prefix string // group names, "a.b."
	mu     *sync.Mutex
}

func (h *plainHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *plainHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("tact: ")
	if r.Level < slog.LevelError {
		b.WriteString("warning: ")
	}
	b.WriteString(oneLine(r.Message))
	var errs, rest []string
	add := func(a slog.Attr, prefix string) {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return
		}
		if a.Key == "err" || a.Key == "error" {
			errs = append(errs, oneLine(a.Value.String()))
			return
		}
		rest = append(rest, prefix+a.Key+"="+plainValue(a.Value))
	}
	var walk func(a slog.Attr, prefix string)
	walk = func(a slog.Attr, prefix string) {
		if a.Value.Kind() == slog.KindGroup {
			for _, g := range a.Value.Group() {
				walk(g, prefix+a.Key+".")
			}
			return
		}
		add(a, prefix)
	}
	for _, a := range h.attrs {
		walk(a, "")
	}
	r.Attrs(func(a slog.Attr) bool {
		walk(a, h.prefix)
		return true
	})
	for _, e := range errs {
		b.WriteString(": " + e)
	}
	if len(rest) > 0 {
		b.WriteString(" (" + strings.Join(rest, ", ") + ")")
	}
	// A message may quote a server, a file or a model: no terminal
	// controls get through (termLine's rule).
	line := policy.SanitizeTerminal(b.String()) + "\n"
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line)
	return err
}

func (h *plainHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	for _, a := range attrs {
		a.Key = h.prefix + a.Key
		n.attrs = append(append([]slog.Attr(nil), n.attrs...), a)
	}
	return &n
}

func (h *plainHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.prefix += name + "."
	return &n
}

// plainValue is a value as key=value shows it: quoted when it holds a
// space, a quote or a control character, or is empty.
func plainValue(v slog.Value) string {
	s := oneLine(v.String())
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// oneLine keeps a logged text on its line: line breaks become "; ".
func oneLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	return strings.ReplaceAll(s, "\n", "; ")
}
