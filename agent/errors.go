// Package agent is tact's engine: a Runtime is opened once from settings
// (the model loaded once, the tool registry with MCP servers' tools, the
// policy, the redactor, the trace) and runs any number of jobs on it, at
// the same time if the caller wants. Every front end calls it: `tact run`,
// `plan`, `exec`, `batch`. Commands only parse, wire and print.
package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runrecord"
)

// ErrorKind classifies the errors of Open, Plan and Run, so a command maps
// them to exit codes and a server to HTTP statuses.
type ErrorKind int

const (
	ErrInternal        ErrorKind = iota // anything else (exit 1)
	ErrBadInput                         // a setting, file, query or plan line (exit 2)
	ErrNeedsModel                       // the job needs a model and none is configured (exit 2)
	ErrContextTooSmall                  // the window cannot hold the prompt every call needs (exit 2)
	ErrTimeout                          // --timeout ended it before the executor ran (exit 7)
	ErrCancelled                        // a signal or the caller ended it (exit 130)
)

// Error is a typed error of the engine.
type Error struct {
	Kind ErrorKind
	Err  error
	code int // exit code the cancellation's cause asked for (143 for SIGTERM); 0: the kind's
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// KindOf is err's kind (ErrInternal for errors the engine did not type).
// The run record's input errors (a run that is not there, a damaged
// store) are bad input.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.As(err, new(*runrecord.InputError)) {
		return ErrBadInput
	}
	return ErrInternal
}

// TerminationOf is how a job that err ended before the executor did
// ended: its reason, exit code and message (not redacted). The one place
// an engine error becomes a termination reason; the trace's termination
// event and the run record are written from it. nil is success.
func TerminationOf(err error) runrecord.Termination {
	if err == nil {
		return runrecord.Termination{Reason: react.ReasonSuccess}
	}
	t := runrecord.Termination{Reason: react.ReasonError, ExitCode: ExitCode(err), Message: err.Error()}
	switch KindOf(err) {
	case ErrTimeout:
		t.Reason = react.ReasonTimeout
	case ErrCancelled:
		t.Reason = react.ReasonCancelled
	}
	return t
}

func badInput(err error) error { return &Error{Kind: ErrBadInput, Err: err} }

func badInputf(format string, a ...any) error {
	return &Error{Kind: ErrBadInput, Err: fmt.Errorf(format, a...)}
}

// contextError types the end of ctx: a timeout or a cancellation.
func contextError(ctx context.Context) error { return ContextError(ctx, "cancelled") }

// ContextError is the typed error of work that ctx ended: ErrTimeout
// ("timeout reached") for its deadline, else ErrCancelled saying
// cancelled, with the exit code the cancellation's cause asked for (143
// for SIGTERM).
func ContextError(ctx context.Context, cancelled string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: ErrTimeout, Err: errors.New("timeout reached")}
	}
	e := &Error{Kind: ErrCancelled, Err: errors.New(cancelled)}
	var coder react.ExitCoder
	if errors.As(context.Cause(ctx), &coder) {
		e.code = coder.ExitCode()
	}
	return e
}
