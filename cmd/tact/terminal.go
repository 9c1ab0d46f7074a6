package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/cmd/tact/render"
	"github.com/tactcli/tact/policy"
	"golang.org/x/term"
)

// What run, exec and chat share on a terminal: the renderer of a run's
// events, approval prompts that pause its status line, logs that clear it.

// newRunRenderer draws a run on stderr when stderr is a terminal and
// --quiet is off (nil otherwise).
func newRunRenderer(ios *iostreams, quiet bool) *render.Renderer {
	if !ios.StderrTTY || quiet {
		return nil
	}
	return render.New(ios.ErrOut, render.Options{Color: render.ColorFor(true), Spinner: true, Width: stderrWidth, Hint: "Ctrl-C to interrupt"})
}

// stderrWidth is the terminal's width (0: unknown).
func stderrWidth() int {
	w, _, err := term.GetSize(int(os.Stderr.Fd()))
	if err != nil {
		return 0
	}
	return w
}

// pausingPrompter clears the renderer's status line while a question is
// shown and answered, so an approval block never starts on the status line
// (tact run once printed `step 1: thinkingwrite_file (write)`).
func pausingPrompter(p policy.Prompter, r *render.Renderer) policy.Prompter {
	if p == nil || r == nil {
		return p
	}
	return &pausing{p: p, r: r}
}

type pausing struct {
	p policy.Prompter
	r *render.Renderer
}

func (q *pausing) Ask(ctx context.Context, summary string, options []string) (string, error) {
	defer q.r.Pause()()
	return q.p.Ask(ctx, summary, options)
}

// Display shows the step's overview when the prompter can; else the gate
// puts it in the first question.
func (q *pausing) Display(text string) error {
	d, ok := q.p.(policy.Displayer)
	if !ok {
		return errNoDisplay
	}
	defer q.r.Pause()()
	return d.Display(text)
}

var errNoDisplay = errors.New("the prompter cannot display text")

// logThrough sends the default logger's records through w (the renderer's
// LogWriter, which clears the status line first) at the same level, until
// the returned restore is called.
func logThrough(w io.Writer) (restore func()) {
	old := slog.Default()
	level := slog.LevelError
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if old.Enabled(context.Background(), l) {
			level = l
			break
		}
	}
	slog.SetDefault(newLogger(w, level))
	return func() { slog.SetDefault(old) }
}

// interruptHook, when set, takes SIGINT instead of signalContext (tact
// chat: Ctrl-C during a turn ends the turn, not tact).
var interruptHook atomic.Pointer[func()]

func setInterruptHook(f func()) {
	if f == nil {
		interruptHook.Store(nil)
		return
	}
	interruptHook.Store(&f)
}

// AskText reads ask_user's free-text answer when the prompter can.
func (q *pausing) AskText(ctx context.Context, question string) (string, error) {
	t, ok := q.p.(agent.TextAsker)
	if !ok {
		return "", errors.New("this terminal takes only chosen answers")
	}
	defer q.r.Pause()()
	return t.AskText(ctx, question)
}
