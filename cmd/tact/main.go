// Command tact runs plans and ReAct agents from the shell. See docs/cli.md for
// the scripting contract (exit codes, --json, traces).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/internal/outfile"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/sandbox"
	"golang.org/x/term"
)

func main() {
	// First: a process started as the sandbox helper of run_command
	// supervises the command and exits here.
	sandbox.ServeHelper()
	os.Exit(tactMain())
}

// stdoutName names standard output in write errors.
const stdoutName = "standard output"

// iostreams is the CLI's view of the process's standard streams.
type iostreams struct {
	In        io.Reader
	Out       io.Writer
	ErrOut    io.Writer
	StderrTTY bool
}

func systemStreams() *iostreams {
	// A write to a closed pipe (tact ... | head -1) returns EPIPE instead
	// of killing tact with SIGPIPE, so it ends like any failed output.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return &iostreams{In: os.Stdin, Out: outfile.New(os.Stdout, stdoutName, nil), ErrOut: os.Stderr,
		StderrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
}

// signalExitAfter bounds how long tact lives after the first SIGINT or
// SIGTERM: the run's own way out (the model stops between tokens; a
// command's process group gets SIGTERM, SIGKILL after the 0.5 s kill grace;
// the termination event) normally ends it well within. What is still
// blocked then (a read no cancellation reaches, a stuck open, an MCP server
// slow to go, a command's clean-up past its grace) is not waited for: the
// watchdog kills every command and server still running and exits 130/143,
// so a signal always ends tact within a second.
const signalExitAfter = time.Second

// signalGrace is extra time the watchdog allows on top of signalExitAfter:
// tact serve's --shutdown-grace, during which requests may finish.
var signalGrace atomic.Int64

// allowSignalGrace lets the command drain for d after a signal before the
// watchdog ends it (tact serve).
func allowSignalGrace(d time.Duration) { signalGrace.Store(int64(max(d, 0))) }

// signalContext cancels on the first SIGINT/SIGTERM (the run then stops the
// model between tokens, terminates tools' process groups and writes its
// termination event) and arms the watchdog (signalExitAfter); a second
// SIGINT exits at once. exitCode reports the conventional code for the
// signal received (130 or 143), or 0. While interruptHook is set, SIGINT
// goes to it instead (tact chat's turns).
func signalContext() (ctx context.Context, exitCode func() int, stop func()) {
	// The cause carries the signal, so a run can write 143 for SIGTERM in
	// its termination event (react.ExitCoder).
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	code := make(chan int, 1)
	done := make(chan struct{})
	var watchdog *time.Timer // set on the first signal, by this goroutine only
	go func() {
		got := 0
		for {
			select {
			case <-done:
				if watchdog != nil {
					watchdog.Stop()
				}
				return
			case s := <-ch:
				if h := interruptHook.Load(); h != nil && s == syscall.SIGINT {
					(*h)()
					continue
				}
				got++
				if got == 1 {
					c, name := 130, "SIGINT"
					if s == syscall.SIGTERM {
						c, name = 143, "SIGTERM"
					}
					code <- c
					cancel(&signalError{sig: s, code: c})
					after := signalExitAfter + time.Duration(signalGrace.Load())
					watchdog = time.AfterFunc(after, func() {
						fmt.Fprintf(os.Stderr, "tact: still running %s after %s; exiting\n", after, name)
						sandbox.KillRunning()
						os.Exit(c)
					})
					continue
				}
				if s == syscall.SIGINT {
					sandbox.KillRunning()
					os.Exit(130)
				}
			}
		}
	}()
	exitCode = func() int {
		select {
		case c := <-code:
			code <- c
			return c
		default:
			return 0
		}
	}
	stop = func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
	return ctx, exitCode, stop
}

// signalError is the cancellation cause of a context ended by a signal.
type signalError struct {
	sig  os.Signal
	code int // conventional exit code: 130 for SIGINT, 143 for SIGTERM
}

func (e *signalError) Error() string { return "received " + e.sig.String() }

// ExitCode makes the executor report the signal's code (react.ExitCoder).
func (e *signalError) ExitCode() int { return e.code }

func tactMain() int {
	ctx, sigCode, stop := signalContext()
	defer stop()
	streams := systemStreams()
	f := newFactory(streams)
	root, err := newRootCmd(f)
	var cmd *cobra.Command
	if err == nil {
		root.SetArgs(os.Args[1:])
		cmd, err = root.ExecuteContextC(ctx)
	}
	// The runtime, if the command opened one, ends before tact prints its
	// last line: the trace is complete and the MCP servers are gone.
	if cerr := f.Close(); cerr != nil {
		if errors.As(cerr, new(*outfile.Error)) {
			err = cerr // the trace: warned of when it happened; the code says it too
		} else {
			slog.Error("closing", "err", cerr)
		}
	}
	// Output that was not written wins over any other outcome: a script
	// must not take a cut answer or result stream for a whole one.
	if oerr := outputError(streams.Out); oerr != nil && !errors.As(err, new(*outfile.Error)) {
		err = oerr
	}
	code := exitCode(err, sigCode())
	if readerGone(err) {
		// tact ... | head -1: the reader took what it wanted. No message;
		// 0 for a command that only prints, exitOutput for one that did
		// work, whose output was cut (docs/cli.md#exit-codes).
		if printsOnly(cmd) && sigCode() == 0 {
			return 0
		}
		return code
	}
	if msg := errorMessage(err); msg != "" {
		fmt.Fprintln(streams.ErrOut, "tact: "+termLine(msg)) // may quote a server, a file or a model
	}
	return code
}

// errSilent wraps exits whose message was already printed.
var errSilent = errors.New("")

func firstLineOf(s string) string { return text.FirstLine(s) }

// readerGone reports whether err is standard output's reader having gone
// away (EPIPE: the pipe's reader exited).
func readerGone(err error) bool {
	var oe *outfile.Error
	return errors.As(err, &oe) && oe.What == stdoutName && errors.Is(oe.Err, syscall.EPIPE)
}

// printsOnly reports whether cmd only prints what it looked up (help,
// version, a listing), so a reader that stops early wanted no more: the
// commands annotated annPrints, a --help, and cobra's help and completion.
func printsOnly(cmd *cobra.Command) bool {
	if cmd == nil {
		return true
	}
	if h := cmd.Flags().Lookup("help"); h != nil && h.Changed {
		return true
	}
	for c := cmd; c != nil; c = c.Parent() {
		if c.Name() == "help" || c.Name() == "completion" {
			return true
		}
	}
	return cmd.Annotations[annPrints] != ""
}
