package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/exec"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/schema"
	"golang.org/x/term"
)

type runMode int

const (
	modeRun runMode = iota
	modePlan
	modeExec
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

func runCommand(ctx context.Context, o *runOptions) (err error) {
	s := o.S
	// Settings and variables were checked before the command ran
	// (config.Origin.Check in the root's PersistentPreRunE).
	if err := validateRun(s); err != nil {
		return badInput(err)
	}
	// The MCP servers file is read first: its ${VAR} header and env values
	// are secrets the redactor must know.
	mcpConfig, err := loadMCPConfig(s)
	if err != nil {
		return err
	}
	// --env values are secrets too when their names say so.
	redactor, err := exec.NewRedactor(append(append(os.Environ(), s.Env...), mcpConfig.SecretEnviron()...), s.Redact)
	if err != nil {
		return badInputf("--redact: %v", err)
	}
	redactStderr(o.IO, redactor) // logs, progress, --dry-run and messages
	// The trace is opened first; from here on every way out of the command,
	// bad input included, ends it with a termination event.
	var trace *react.TraceWriter
	if s.Trace != "" {
		f, err := os.OpenFile(s.Trace, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return badInputf("--trace: %v", err)
		}
		defer f.Close()
		trace = react.NewTraceWriter(f, func(line string) string { return string(redactor.RedactJSON([]byte(line))) })
	}
	life := &traceLife{w: trace, ctx: ctx, mode: []string{"run", "plan", "exec"}[o.Mode]}
	defer func() { life.finish(err) }()

	env, err := exec.NewEnv(s.Workspace)
	if err != nil {
		return badInputf("--workspace: %v", err)
	}
	env.ToolTimeout = s.ToolTimeout
	env.ExtraEnv = s.Env
	env.Sandbox, _ = exec.ParseSandboxMode(s.Sandbox) // checked by validateRun
	env.NoNetwork = s.NoNetwork
	life.sandbox = env.SandboxInfo()
	reg := exec.DefaultRegistry()
	env.Redactor = redactor // tools cut output only where no secret is split
	// The policy file is read before any model call: a bad one fails fast.
	policy, err := exec.LoadPolicy(s.PolicyPath())
	if err != nil {
		return badInput(err)
	}
	// MCP servers start before plans are parsed, so plans may name their
	// tools; a saved plan starts only the servers its rows name.
	var planName string
	var planData []byte
	var mcpOnly []string
	if o.Mode == modeExec {
		if planName, planData, err = readPlanInput(o); err != nil {
			return err
		}
		mcpOnly = planServers(planData)
	}
	mcpServers, reg := startMCP(ctx, mcpConfig, mcpOnly, reg)
	defer mcpServers.Close()
	for _, t := range s.AllowTools {
		if _, ok := reg.Get(t); !ok {
			return badInputf("--allow-tools: unknown tool %q (known: %s)", t, strings.Join(reg.Names(), ", "))
		}
	}

	var query string
	var plan *planner.Plan
	if o.Mode == modeExec {
		plan, err = planner.Parse(bytes.NewReader(planData), planName, reg)
		if err != nil {
			return badInput(err)
		}
		query = plan.Query()
		life.query = query
		if s.Query != "" {
			query = s.Query
		}
		if query == "" {
			query = "Carry out the plan."
		}
	} else {
		query, err = readQuery(o)
		if err != nil {
			return err
		}
		life.query = query
	}

	backend, info, err := openBackend(ctx, s, o.SettingName, o.IO)
	if err != nil {
		return err
	}
	defer backend.Close()
	none, noModel := backend.(llm.None)
	needModel := func(what, alternative string) error {
		msg := what + " needs a model: " + noModelHint() + "; or give --model PATH (or TACT_MODEL)" + alternative
		if none.Why != "" {
			msg += "; " + none.Why
		}
		return badInput(errors.New(msg))
	}

	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}

	life.start(query, info["backend"])

	sampling := samplingOf(s)
	thought := schema.ThoughtOptions{Required: s.RequireThought, MinLength: s.MinThoughtLength}
	plannerTools := s.AllowTools
	if len(plannerTools) == 0 {
		plannerTools = reg.Names()
	}
	pl := &planner.Planner{Backend: react.RedactingBackend(backend, redactor.Redact), Registry: reg, Tools: plannerTools, Thought: thought,
		Sampling: sampling, MaxTokens: planMaxTokens(s), MaxSteps: maxPlanSteps, Info: info,
		ContextSize: s.CtxSize, MinReplyTokens: s.MaxTokens}

	if s.NoPlan && noModel {
		return needModel("--no-plan", " or --script; every action comes from the model")
	}
	var planUsage llm.Usage
	if o.Mode != modeExec && !s.NoPlan {
		if noModel {
			return needModel("planning", ", --script, or run a saved plan with `tact exec`")
		}
		trace.Emit("planning", map[string]any{"query": query, "tools": pl.Tools})
		p, usage, err := pl.Plan(ctx, query, nil, nil)
		planUsage = usage
		switch {
		case err == nil:
			plan = p
		case ctx.Err() != nil:
			// Let the executor end the run: it reports the timeout or
			// cancellation like any other (result, trace event, message).
			if o.Mode == modePlan {
				life.usage = planUsage
				return contextExit(ctx)
			}
		case isContextTooSmall(err):
			life.usage = planUsage
			return contextTooSmall(err, o.SettingName)
		case o.Mode == modeRun && isInvalidPlan(err):
			// A bad plan is recorded, not fatal: the run continues as free ReAct.
			slog.Warn("the planner's reply was not a valid plan; continuing without a plan", "err", err)
			trace.Emit("plan_invalid", map[string]any{"error": err.Error()})
		default:
			life.usage = planUsage
			return fmt.Errorf("planning: %w", err)
		}
	}
	if o.Mode == modePlan {
		if s.NoPlan {
			return badInputf("tact plan: --no-plan makes no sense here")
		}
		var buf bytes.Buffer
		if s.JSON {
			// One object, like run's --json: the plan's rows and the usage.
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(map[string]any{"plan": plan.Rows(), "token_usage": planUsage}); err != nil {
				return err
			}
		} else if err := plan.WriteJSONL(&buf); err != nil {
			return err
		}
		trace.Emit("plan", map[string]any{"plan": plan.Rows(), "source": plan.Source, "token_usage": planUsage})
		life.usage = planUsage
		// Secrets never reach stdout, plans included.
		_, err := o.IO.Out.Write(redactor.RedactJSON(buf.Bytes()))
		return err
	}
	if plan != nil && noModel {
		for _, st := range plan.Steps {
			for k, v := range st.Args {
				if kind, _ := planner.ClassifyArg(v); kind == planner.ArgFill {
					msg := fmt.Sprintf("%s:%d: argument %q is \"\" (fill from context), which needs a model: %s; or give --model PATH or --script, or fix the value", plan.Source, st.Line, k, noModelHint())
					if none.Why != "" {
						msg += "; " + none.Why
					}
					return badInput(errors.New(msg))
				}
			}
		}
	}

	var prompter exec.Prompter
	if !s.NoInput && !s.DryRun {
		if p, err := exec.OpenTTYPrompter(); err == nil {
			prompter = p
			if c, ok := p.(io.Closer); ok {
				defer c.Close()
			}
		} else {
			slog.Debug("no terminal: running unattended", "err", err)
		}
	}
	gate := exec.NewGate(exec.GateOptions{Policy: policy, PolicyPath: s.PolicyPath(), Yes: s.Yes, ReadOnly: s.ReadOnly,
		DryRun: s.DryRun, Prompter: prompter, Redactor: redactor, Log: slog.Default()})

	prog := newProgress(o.IO, s.Quiet)
	defer prog.done()
	ex := &react.Executor{
		Options: react.Options{
			NoPlan: s.NoPlan || plan == nil, MaxIterations: s.MaxIterations, RetryBuffer: s.RetryBuffer,
			ReplanThreshold: s.ReplanThreshold, AllowTools: s.AllowTools, ThoughtPrompt: s.ThoughtPrompt,
			RequireThought: s.RequireThought, MinThoughtLength: s.MinThoughtLength,
			SuccessPhrases: s.SuccessPhrases, FailurePhrases: s.FailurePhrases, StallThreshold: s.StallThreshold,
			MaxObservationTokens: s.MaxObservationTokens, TokenBudget: s.TokenBudget, StopWhen: s.StopWhen,
			DryRun: s.DryRun, ContextSize: s.CtxSize, CompactAt: float64(s.CompactAt), KeepSteps: s.KeepSteps,
		},
		Registry: reg, Env: env, Backend: backend, Gate: gate, Events: react.Sinks{trace, react.ProgressSink(prog.update)}, Redact: redactor.Redact,
		Sampling: sampling, MaxTokens: s.MaxTokens, Log: slog.Default(),
		SpentUsage: planUsage,
	}
	if !noModel {
		ex.Planner = pl
	}
	if err := ex.CheckContext(query, plan); err != nil {
		return contextTooSmall(err, o.SettingName)
	}
	res := ex.Run(ctx, query, plan)
	life.ended = true // the executor wrote the termination event
	prog.done()
	if err := trace.Err(); err != nil {
		slog.Error("trace file", "err", err)
	}
	if s.DryRun && !s.Quiet {
		fmt.Fprintf(o.IO.ErrOut, "dry-run: run_command sandbox: %s\n", env.SandboxInfo())
		printDryRun(o.IO.ErrOut, res)
	}
	if err := printResult(o.IO.Out, s.JSON, res, redactor); err != nil {
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

// traceLife makes every trace that was opened end with one termination
// event, whatever way the command ends: the executor writes its own; for
// `tact plan` and for errors before or around planning (bad input
// included) finish writes it, after a run_start if none was written yet.
type traceLife struct {
	w              *react.TraceWriter
	ctx            context.Context
	mode, query    string
	sandbox        any // run_command's sandbox, once the workspace is known
	usage          llm.Usage
	started, ended bool
}

func (l *traceLife) start(query string, backend any) {
	l.w.Emit("run_start", map[string]any{"query": query, "mode": l.mode, "backend": backend, "sandbox": l.sandbox})
	l.started = true
}

func (l *traceLife) finish(err error) {
	if l.w == nil || l.ended {
		return
	}
	if !l.started {
		l.w.Emit("run_start", map[string]any{"query": l.query, "mode": l.mode})
	}
	reason, code := react.ReasonSuccess, 0
	f := map[string]any{"token_usage": l.usage}
	if err != nil {
		reason, code = react.ReasonError, exitInternal
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.Code
			if code == react.ReasonTimeout.ExitCode() {
				reason = react.ReasonTimeout
			} else if code == react.ReasonCancelled.ExitCode() {
				reason = react.ReasonCancelled
				if c := signalExitCode(l.ctx); c != 0 {
					code = c // 143 for SIGTERM
				}
			}
		}
		f["message"] = err.Error()
	}
	f["reason"], f["exit_code"], f["success"] = reason, code, err == nil
	l.w.Emit("termination", f)
	l.ended = true
}

func isContextTooSmall(err error) bool {
	var small *llm.ContextTooSmallError
	return errors.As(err, &small)
}

// contextTooSmall is the usage error (exit 2) of a context window that
// cannot hold the prompt every call needs: it names the tokens needed and
// the setting to raise.
func contextTooSmall(err error, settingName func(string) string) error {
	var small *llm.ContextTooSmallError
	if !errors.As(err, &small) {
		return err
	}
	setting := "--ctx-size"
	if settingName != nil && strings.Contains(settingName("CtxSize"), "=") {
		setting = config.Var("CtxSize") + " (--ctx-size)" // the value came from the variable
	}
	return badInputf("%v; raise %s to at least %d (or lower --max-tokens)", small, setting, small.Need())
}

func isInvalidPlan(err error) bool {
	var inv *planner.InvalidReplyError
	return errors.As(err, &inv)
}

// maxPlanSteps bounds plans in the planner's schema (and so its grammar): a
// small local model is better at short plans, and replans can extend them.
const maxPlanSteps = 12

// planMaxTokens gives the planner room for several steps.
func planMaxTokens(s *config.Settings) int {
	if s.MaxTokens <= 0 {
		return 0
	}
	return s.MaxTokens * 4
}

func contextExit(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &exitError{Code: react.ReasonTimeout.ExitCode(), Err: errors.New("timeout reached")}
	}
	return &exitError{Code: react.ReasonCancelled.ExitCode(), Err: errors.New("cancelled")}
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

// samplingOf maps the validated settings to the backend's sampling: for
// the backend a zero field means "its default", so the CLI's 0 ("off") for
// --top-k and --min-p becomes the backend's negative "off".
func samplingOf(s *config.Settings) llm.Sampling {
	sm := llm.Sampling{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, MinP: s.MinP, Seed: s.Seed}
	if sm.TopK == 0 {
		sm.TopK = -1
	}
	if sm.MinP == 0 {
		sm.MinP = -1
	}
	return sm
}

// validateRun checks what config cannot: --stop-when must compile, and
// --threads is capped at the CPUs present (with a warning).
func validateRun(s *config.Settings) error {
	if _, err := exec.ParseSandboxMode(s.Sandbox); err != nil {
		return fmt.Errorf("--sandbox: %v", err)
	}
	if s.StopWhen != "" {
		if _, err := react.CompileJQ(s.StopWhen); err != nil {
			return fmt.Errorf("--stop-when: %v", err)
		}
	}
	if w := s.CapThreads(); w != "" {
		slog.Warn(w)
	}
	return nil
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
