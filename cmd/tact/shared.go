package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/atomicfile"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/runrecord"
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
// -o (s.Output) receives what stdout does, atomically, when the run
// succeeds.
func runJob(ctx context.Context, ios *iostreams, s *config.Settings, runtime runtimeFunc, mode string, job agent.Job, ro agent.Options) error {
	outFile := s.Output
	if err := checkOutputFile(outFile); err != nil {
		return err
	}
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
	ro.Mode, ro.Prompter, ro.Events, ro.History = mode, prompter, events, true
	rt, err := runtime(ctx, ro)
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
	out, err := resultBytes(s.JSON, res, rt.Redactor)
	if err != nil {
		return err
	}
	if len(out) > 0 {
		if _, err := ios.Out.Write(out); err != nil {
			return err
		}
	}
	if outFile != "" && res.TerminationReason == react.ReasonSuccess && !s.DryRun {
		// Only a success replaces the file: a script reading it never
		// takes a failed run's summary for an answer. A dry run writes
		// nothing.
		if err := atomicfile.Write(outFile, out); err != nil {
			return &exitError{Code: exitOutput, Err: fmt.Errorf("-o %s: %w", outFile, err)}
		}
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

// resultBytes is what stdout gets of a result: the final answer, or with
// --json the whole result; secrets never reach it.
func resultBytes(asJSON bool, res *react.Result, red *redact.Redactor) ([]byte, error) {
	if !asJSON && res.TerminationReason == react.ReasonNeedsInput {
		// A paused run prints what it waits for, one JSON object.
		b, err := text.JSON(runrecord.Pause(res))
		if err != nil {
			return nil, err
		}
		return append(red.RedactJSON(b), '\n'), nil
	}
	if asJSON {
		b, err := text.JSON(res)
		if err != nil {
			return nil, err
		}
		return append(red.RedactJSON(b), '\n'), nil
	}
	if res.FinalAnswer == "" {
		return nil, nil
	}
	answer := red.Redact(res.FinalAnswer)
	if !strings.HasSuffix(answer, "\n") {
		answer += "\n"
	}
	return []byte(answer), nil
}

// printResult prints what resultBytes gives.
func printResult(w io.Writer, asJSON bool, res *react.Result, red *redact.Redactor) error {
	b, err := resultBytes(asJSON, res, red)
	if err != nil || len(b) == 0 {
		return err
	}
	_, err = w.Write(b)
	return err
}

// checkOutputFile refuses an -o path that could never be written, before
// anything runs: its directory must exist and it must not be a directory.
func checkOutputFile(path string) error {
	if path == "" {
		return nil
	}
	if err := atomicfile.CheckLink(path); err != nil {
		return badInputf("-o %v", err)
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return badInputf("-o %s: not a regular file", path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return badInputf("-o %s: no directory %s", path, dir)
	}
	return nil
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
