package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/internal/outfile"
	"github.com/tactcli/tact/models"
)

// Exit codes outside the run's termination reasons (those live in react).
const (
	exitInternal = 1
	exitUsage    = 2
	// exitOutput: standard output or the trace could not be written (a
	// full disk, a reader that closed the pipe). Only whole lines or
	// records are left behind.
	exitOutput = 10
)

// exitCode is the process exit code for a command's outcome, the one
// place errors become codes: 0 for none; exitOutput when standard output
// or the trace could not be written, whatever else happened; the code an
// exitError carries (usage errors, pull's, a run's termination reason);
// else the engine's documented code for its typed errors, which is 1
// (exitInternal) for any other error. signal is the code of the signal
// received (130 or 143; 0 for none): an interruption reports it, so
// SIGTERM exits 143 whatever noticed it.
func exitCode(err error, signal int) int {
	if err == nil {
		return 0
	}
	if errors.As(err, new(*outfile.Error)) {
		return exitOutput
	}
	code := agent.ExitCode(err)
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.Code
	}
	if code == 130 && signal != 0 {
		code = signal
	}
	return code
}

// errorMessage is what tact says of err on stderr ("" for nothing: none,
// or one already said).
func errorMessage(err error) string {
	if err == nil || errors.Is(err, errSilent) {
		return ""
	}
	return strings.TrimSpace(err.Error())
}

// outputError is the first failed write to w, if w is tact's standard
// output (an *outfile.Writer).
func outputError(w io.Writer) error {
	if o, ok := w.(*outfile.Writer); ok {
		return o.Err()
	}
	return nil
}

// exitError carries the process exit code for an error; main prints the
// message on one line and exits with Code.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string { return e.Err.Error() }
func (e *exitError) Unwrap() error { return e.Err }

// pullExit maps a pull's error to its exit code: bad input (argument,
// checksum, not a model, already installed) is 2, an interruption 130 (143
// for SIGTERM, set by tactMain), anything else 1.
func pullExit(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return &exitError{Code: 130, Err: err} // tactMain reports 143 for SIGTERM
	case errors.Is(err, models.ErrInvalid), errors.Is(err, models.ErrExists),
		errors.Is(err, models.ErrChecksum), errors.Is(err, models.ErrBadModel):
		return badInput(err)
	}
	return err
}

// badInput marks err as bad user input or usage (exit 2).
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{Code: exitUsage, Err: err}
}

// badInputf is fmt.Errorf for bad input.
func badInputf(format string, a ...any) error { return badInput(fmt.Errorf(format, a...)) }
