package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/exec"
	"github.com/tactcli/tact/react"
	"golang.org/x/term"
)

type runMode int

const (
	modeRun runMode = iota
	modePlan
	modeExec
	modeBatch // tact batch: run's flags without --json (always JSONL) and --query
)

// runOptions is the test seam of run, plan and exec: everything the command
// needs, parsed, so runCommand can be called directly.
type runOptions struct {
	S    *config.Settings
	IO   *iostreams
	Mode runMode
	Args []string
	// SettingName names a setting in messages: its flag, and its variable
	// when the value came from the environment (nil: the flag).
	SettingName func(field string) string
}

func newRunCmd(s *config.Settings, origin *config.Origin, streams *iostreams, mode runMode) *cobra.Command {
	o := &runOptions{S: s, IO: streams, Mode: mode}
	cmd := &cobra.Command{}
	switch mode {
	case modeRun:
		cmd.Use = "run [QUERY...]"
		cmd.Short = "Plan, then execute; print the final answer"
		cmd.Long = "Plan the query, then execute the plan with the ReAct executor and print only the\nfinal answer on stdout. The query is the joined arguments, or standard input when\nthere are none (or \"-\")."
	case modePlan:
		cmd.Use = "plan [QUERY...]"
		cmd.Short = "Plan only; print the plan as JSONL"
		cmd.Long = "Plan the query and print the plan as JSONL: a header row, then one row a step, to\nreview, edit and run later with `tact exec`. --json prints one object instead,\n{\"plan\": [rows], \"token_usage\": {...}}. The query is the joined arguments, or\nstandard input when there are none (or \"-\")."
	case modeExec:
		cmd.Use = "exec [PLAN.jsonl|-]"
		cmd.Short = "Execute a JSONL plan from a file or standard input"
		cmd.Long = "Execute a JSONL plan from a file, or from standard input when none is given (or\n\"-\"). The whole plan is checked first: a bad row (unknown tool or field, a\nmissing required argument, a $jq expression that does not compile) exits 2 with\nFILE:LINE before any step runs."
		cmd.Args = cobra.MaximumNArgs(1)
	}
	cmd.RunE = func(c *cobra.Command, args []string) error {
		o.Args = args
		o.SettingName = func(field string) string {
			f := c.Flag(config.Flag(field))
			return origin.Name(field, f != nil && f.Changed)
		}
		return runCommand(c.Context(), o)
	}
	addRunFlags(cmd.Flags(), s, mode)
	cmd.Annotations = map[string]string{annSettings: "flags"}
	return cmd
}

func runCommand(ctx context.Context, o *runOptions) error {
	s := o.S
	// The command's input first: a plan names the MCP servers to start.
	job := agent.Job{Query: s.Query}
	var mcpOnly []string
	if o.Mode == modeExec {
		name, data, err := readPlanInput(o)
		if err != nil {
			return err
		}
		job.PlanName, job.PlanData = name, data
		mcpOnly = planServers(data)
	} else {
		query, err := readQuery(o)
		if err != nil {
			return err
		}
		job.Query = query
	}
	if err := pullForRun(ctx, s, o.IO); err != nil {
		return err
	}
	var prompter exec.Prompter
	if !s.NoInput && !s.DryRun && o.Mode != modePlan {
		if p, err := exec.OpenTTYPrompter(); err == nil {
			prompter = p
			if c, ok := p.(io.Closer); ok {
				defer c.Close()
			}
		} else {
			slog.Debug("no terminal: running unattended", "err", err)
		}
	}
	prog := newProgress(o.IO, s.Quiet)
	defer prog.done()
	// Logs, progress, --dry-run and messages are redacted from the moment
	// the runtime knows the secrets.
	rt, err := agent.Open(ctx, s, agent.Options{Mode: []string{"run", "plan", "exec"}[o.Mode], SettingName: o.SettingName,
		Prompter: prompter, Events: react.ProgressSink(prog.update), MCPServers: mcpOnly,
		OnRedactor: func(red *exec.Redactor) { redactStderr(o.IO, red) }})
	if err != nil {
		return engineExit(err)
	}
	defer func() {
		if err := rt.Close(); err != nil {
			slog.Error("closing", "err", err)
		}
	}()

	if o.Mode == modePlan {
		plan, usage, err := rt.Plan(ctx, job)
		if err != nil {
			return engineExit(err)
		}
		var buf bytes.Buffer
		if s.JSON {
			// One object, like run's --json: the plan's rows and the usage.
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(map[string]any{"plan": plan.Rows(), "token_usage": usage}); err != nil {
				return err
			}
		} else if err := plan.WriteJSONL(&buf); err != nil {
			return err
		}
		// Secrets never reach stdout, plans included.
		_, err = o.IO.Out.Write(rt.Redactor.RedactJSON(buf.Bytes()))
		return err
	}

	res, err := rt.Run(ctx, job)
	if err != nil {
		return engineExit(err)
	}
	prog.done()
	if s.DryRun && !s.Quiet {
		fmt.Fprintf(o.IO.ErrOut, "dry-run: run_command sandbox: %s\n", rt.Env.SandboxInfo())
		printDryRun(o.IO.ErrOut, res)
	}
	if err := printResult(o.IO.Out, s.JSON, res, rt.Redactor); err != nil {
		return err
	}
	if res.TerminationReason != react.ReasonSuccess {
		// With --json too: stdout holds the object, stderr the one line.
		if res.Message != "" {
			fmt.Fprintf(o.IO.ErrOut, "tact: %s: %s\n", res.TerminationReason, res.Message)
		}
		return &exitError{Code: res.ExitCode(), Err: errSilent}
	}
	return nil
}

// engineExit maps an engine error to its documented exit code.
func engineExit(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{Code: agent.ExitCode(err), Err: err}
}

func printResult(w io.Writer, asJSON bool, res *react.Result, red *exec.Redactor) error {
	if asJSON {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return err
		}
		_, err := w.Write(red.RedactJSON(buf.Bytes()))
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

// printDryRun shows each action of a --dry-run with the decision it got:
// read tools ran, write/exec tools show what the policy would decide.
func printDryRun(w io.Writer, res *react.Result) {
	for _, st := range res.Trace.Steps {
		decision := "ran (read)"
		switch {
		case strings.HasPrefix(st.Decision, "dry_run:"):
			decision = "would " + strings.TrimPrefix(st.Decision, "dry_run:")
		case st.SkipReason != "":
			decision = "skipped: " + st.SkipReason
		case st.Action.Tool == "final_answer":
			decision = "final answer"
		}
		fmt.Fprintf(w, "dry-run: step %d: %s %s -> %s\n", st.Iteration, st.Action.Tool, st.Action.Args, decision)
	}
}

// readQuery joins the arguments, or reads standard input when there are none or "-".
func readQuery(o *runOptions) (string, error) {
	var q string
	if len(o.Args) == 0 || (len(o.Args) == 1 && o.Args[0] == "-") {
		if stdinIsTerminal(o) && len(o.Args) == 0 {
			return "", badInputf("no query: pass it as arguments, or pipe it in (use - to type it on the terminal)")
		}
		b, err := io.ReadAll(io.LimitReader(o.IO.In, 1<<20+1))
		if err != nil {
			return "", badInputf("reading the query from standard input: %v", err)
		}
		if len(b) > 1<<20 {
			return "", badInputf("query on standard input is longer than 1 MiB")
		}
		q = string(b)
	} else {
		q = strings.Join(o.Args, " ")
	}
	q = strings.TrimSpace(q)
	if q == "" {
		return "", badInputf("empty query: pass it as arguments or on standard input")
	}
	return q, nil
}

// readPlanInput reads the plan (a file, or standard input) whole: its rows
// say which MCP servers to start before it is parsed.
func readPlanInput(o *runOptions) (name string, data []byte, err error) {
	name = "-"
	var r io.Reader = o.IO.In
	if len(o.Args) == 0 && stdinIsTerminal(o) {
		return "", nil, badInputf("no plan: pass a plan file, or pipe one in (use - to type it on the terminal)")
	}
	if len(o.Args) == 1 && o.Args[0] != "-" {
		name = o.Args[0]
		f, err := os.Open(name)
		if err != nil {
			return "", nil, badInputf("plan: %v", err)
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
func stdinIsTerminal(o *runOptions) bool {
	f, ok := o.IO.In.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
