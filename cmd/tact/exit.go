package main

import "fmt"

// Exit codes outside the run's termination reasons (those live in react).
const (
	exitInternal = 1
	exitUsage    = 2
)

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
