package main

import (
	"fmt"
	"io"

	"github.com/tactcli/tact/internal/outfile"
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

// badInput marks err as bad user input or usage (exit 2).
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{Code: exitUsage, Err: err}
}

// badInputf is fmt.Errorf for bad input.
func badInputf(format string, a ...any) error { return badInput(fmt.Errorf(format, a...)) }
