package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
	"golang.org/x/term"
)

// What run, plan, exec and batch share: reading their input, opening the
// runtime (the factory's), running a job and printing its result.

// runtimeFunc opens the runtime the commands share (factory.Runtime).
type runtimeFunc func(context.Context, agent.Options) (*agent.Runtime, error)

// runJob runs job (run and exec): with the terminal's approval prompt
// unless unattended, the run drawn on a terminal's stderr (each action,
// its observation, a spinner; cmd/tact/render), and --dry-run's listing as
// the steps happen. It prints the result and returns the termination
// reason's exit code; mcpOnly (not nil) starts only those MCP servers.
func runJob(ctx context.Context, ios *iostreams, s *config.Settings, runtime runtimeFunc, mode string, job agent.Job, mcpOnly []string) error {
	var prompter policy.Prompter
	if !s.NoInput && !s.DryRun {
		if p, err := policy.OpenTTYPrompter(); err == nil {
			prompter = p
			if c, ok := p.(io.Closer); ok {
				defer c.Close()
			}
		} else {
			slog.Debug("no terminal: running unattended", "err", err)
		}
	}
	// Every line on stderr goes through the renderer, which clears its
	// status line first; an approval prompt pauses it.
	rend := newRunRenderer(ios, s.Quiet)
	var events react.Sink
	say := func(line string) { fmt.Fprintln(ios.ErrOut, line) }
	if rend != nil {
		defer rend.Close()
		defer logThrough(rend.LogWriter())()
		events, say = rend, rend.Println
		prompter = pausingPrompter(prompter, rend)
	}
	rt, err := runtime(ctx, agent.Options{Mode: mode, Prompter: prompter, Events: events, MCPServers: mcpOnly, History: true})
	if err != nil {
		return err
	}
	if s.DryRun && !s.Quiet {
		job.Events = newDryRunSink(say)
	}
	res, err := rt.Run(ctx, job)
	if err != nil {
		return err
	}
	if rend != nil {
		rend.Idle()
	}
	if err := printResult(ios.Out, s.JSON, res, rt.Redactor); err != nil {
		return err
	}
	if rend != nil {
		if sum := rend.Summary(); sum != "" {
			fmt.Fprintln(ios.ErrOut, sum)
		}
	}
	if res.TerminationReason != react.ReasonSuccess {
		// With --json too: stdout holds the object, stderr the one line.
		if res.Message != "" {
			fmt.Fprintf(ios.ErrOut, "tact: %s: %s\n", res.TerminationReason, termLine(res.Message))
		}
		return &exitError{Code: res.ExitCode(), Err: errSilent}
	}
	return nil
}

// printResult prints the final answer, or with --json the whole result;
// secrets never reach stdout.
func printResult(w io.Writer, asJSON bool, res *react.Result, red *redact.Redactor) error {
	if asJSON {
		b, err := text.JSON(res)
		if err != nil {
			return err
		}
		_, err = w.Write(append(red.RedactJSON(b), '\n'))
		return err
	}
	if res.FinalAnswer == "" {
		return nil
	}
	answer := red.Redact(res.FinalAnswer)
	if !strings.HasSuffix(answer, "\n") {
		answer += "\n"
	}
	_, err := io.WriteString(w, answer)
	return err
}

// readQuery joins the arguments, or reads standard input when there are none or "-".
func readQuery(ios *iostreams, args []string) (string, error) {
	var q string
	if len(args) == 0 || (len(args) == 1 && args[0] == "-") {
		if stdinIsTerminal(ios) && len(args) == 0 {
			return "", badInputf("no query: pass it as arguments, or pipe it in (use - to type it on the terminal)")
		}
		b, err := io.ReadAll(io.LimitReader(ios.In, 1<<20+1))
		if err != nil {
			return "", badInputf("reading the query from standard input: %v", err)
		}
		if len(b) > 1<<20 {
			return "", badInputf("query on standard input is longer than 1 MiB")
		}
		q = string(b)
	} else {
		q = strings.Join(args, " ")
	}
	q = strings.TrimSpace(q)
	if q == "" {
		return "", badInputf("empty query: pass it as arguments or on standard input")
	}
	return q, nil
}

// readPlanInput reads the plan (a file, or standard input) whole: its rows
// say which MCP servers to start before it is parsed.
func readPlanInput(ios *iostreams, args []string) (name string, data []byte, err error) {
	name = "-"
	var r io.Reader = ios.In
	if len(args) == 0 && stdinIsTerminal(ios) {
		return "", nil, badInputf("no plan: pass a plan file, or pipe one in (use - to type it on the terminal)")
	}
	if len(args) == 1 && args[0] != "-" {
		name = args[0]
		// A regular file only (standard input is the way to pipe one in).
		f, err := filekind.Open(filekind.Spec{What: "plan", Max: maxPlanBytes}, name)
		if err != nil {
			return "", nil, badInput(err)
		}
		defer f.Close()
		r = bufio.NewReader(f)
	}
	data, err = io.ReadAll(io.LimitReader(r, maxPlanBytes+1))
	if err != nil {
		return "", nil, badInputf("plan %s: %v", name, err)
	}
	if len(data) > maxPlanBytes {
		return "", nil, badInputf("plan %s: larger than %d MiB", name, maxPlanBytes>>20)
	}
	return name, data, nil
}

// maxPlanBytes bounds a plan read whole (plans are a few KiB).
const maxPlanBytes = 64 << 20

// stdinIsTerminal: reading a query or plan from it would wait for typing.
func stdinIsTerminal(ios *iostreams) bool {
	f, ok := ios.In.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
