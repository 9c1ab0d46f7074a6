package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/internal/buildinfo"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/instructions"
	"github.com/tactcli/tact/internal/outfile"
	"github.com/tactcli/tact/internal/procsafe"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/mcp"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/sandbox"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// Options are what a front end adds to the settings when it opens a Runtime.
type Options struct {
	// Mode names the command in trace events ("run", "plan", "exec", "batch").
	Mode string
	// SettingName names a setting in messages: its flag, or its variable
	// when the value came from the environment (nil: the flag).
	SettingName func(field string) string
	// Prompter asks a person to approve write/exec actions (nil: unattended,
	// such actions run only when --yes or a policy rule allows them).
	Prompter policy.Prompter
	// Events receives every run's events besides the trace file (the
	// progress line, a dry-run listing).
	Events react.Sink
	// MCPServers, when not nil, starts only these MCP servers (a saved
	// plan's); nil starts every configured one.
	MCPServers []string
	// OnRedactor is called with the redactor as soon as the secrets are
	// known, so a front end can redact its logs and messages from then on.
	OnRedactor func(*redact.Redactor)
	// Secrets are more values the redactor hides wherever they would
	// appear (a server's bearer token, whatever its variable is named).
	Secrets []string
	// Backends opens llama and openai (cmd/tact: backends.All); nil: only
	// the script and none backends.
	Backends Backends
	// History keeps every job this runtime runs in the run history
	// (docs/history.md), unless the settings turn it off (--no-history).
	History bool
	// GivenModelOnly (tact exec) uses a model only when one is given:
	// --model or TACT_MODEL, or PlanModel, the model a saved plan's header
	// names. The only model in the models directory is not picked on its
	// own, so a saved plan's outcome does not depend on what else was
	// pulled since.
	GivenModelOnly bool
	PlanModel      string
	// Backend, when set, is the model backend instead of the one the
	// settings name (tact test run's replay of recorded replies).
	Backend llm.Backend
}

// Runtime is everything jobs share: opened once, safe for concurrent jobs.
type Runtime struct {
	S        *config.Settings
	Backend  llm.Backend    // redacts every prompt (llm.Redacting): the planner, the executor, Warm and Complete call through it
	Info     map[string]any // backend and model, for plan headers and traces (Model().Header())
	Registry *tools.Registry
	// asker asks ask_user's questions at the terminal (nil: a run pauses).
	asker    react.Asker
	Redactor *redact.Redactor
	Env      *tools.Env

	opts      Options
	trace     *react.TraceWriter
	traceFile *os.File
	events    react.Sink // trace file and the caller's sinks
	gate      tools.Gate
	planner   *planner.Planner
	noModel   *noModel // nil: jobs can call a model
	mcp       *mcp.Manager
	closers   []io.Closer
	hist      *history.Store  // nil: runs are not recorded
	pruneStop func()          // waits for the history's first prune, stops the rest (nil: none)
	hooks     *hooks.Config   // the user's hooks file (nil: none)
	policy    *policy.Policy  // the policy file as Open read it
	approver  policy.Approver // --approve-cmd (nil: none)
	// instructions are the workspace's AGENTS.md files (read when
	// S.ProjectInstructions is on), put in every job's system prompt.
	instructions instructions.Instructions
}

// Open checks the settings, opens the trace file, the workspace, the
// policy, the MCP servers and the model backend. Every error is typed
// (KindOf). A trace opened before an error ends with a termination event.
func Open(ctx context.Context, s *config.Settings, opts Options) (rt *Runtime, err error) {
	rt = &Runtime{S: s, opts: opts}
	if opts.SettingName == nil {
		rt.opts.SettingName = func(field string) string { return "--" + config.Flag(field) }
	}
	defer func() {
		if err != nil {
			rt.openFailed(err)
			rt.Close()
			rt = nil
		}
	}()
	if err := validate(s); err != nil {
		return rt, badInput(err)
	}
	// The MCP servers file is read first: its ${VAR} header and env values
	// are secrets the redactor must know.
	mcpConfig, err := mcp.Load(mcpPath(s))
	if err != nil {
		return rt, badInput(err)
	}
	// --env values are secrets too when their names say so.
	environ := append(append(os.Environ(), s.Env...), mcpConfig.SecretEnviron()...)
	if opts.Backends != nil {
		environ = append(environ, opts.Backends.Secrets(s)...) // the API key, whatever its variable's name
	}
	for i, v := range opts.Secrets {
		environ = append(environ, fmt.Sprintf("TACT_OPTIONS_SECRET_%d_KEY=%s", i, v)) // a secret's name
	}
	if rt.Redactor, err = redact.NewRedactor(environ, s.Redact); err != nil {
		return rt, badInputf("--redact: %v", err)
	}
	if opts.OnRedactor != nil {
		opts.OnRedactor(rt.Redactor)
	}
	// Before any command runs: a root command can read /proc/PID/environ of
	// tact whatever else is done, so the secret values leave that block.
	if err := procsafe.HideEnviron(func(_, value string) bool { return rt.Redactor.Redact(value) != value }); err != nil {
		slog.Debug("hiding secrets from /proc/self/environ", "err", err)
	}
	// The trace is opened next: from here on every way out, bad input
	// included, ends it with a termination event.
	if s.Trace != "" {
		// A regular file, or a pipe with a reader, a terminal or
		// /dev/null; a FIFO nobody reads is refused, never waited on.
		f, err := filekind.OpenOutput(filekind.Spec{What: "--trace"}, s.Trace, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return rt, badInput(err)
		}
		rt.traceFile = f
		// A full disk is said at once, not only when tact exits (with 10):
		// the events after it are lost, the ones before stay whole.
		out := outfile.New(f, "--trace "+s.Trace, func(err error) {
			slog.Warn("the trace cannot be written; the events from here on are lost", "err", err)
		})
		rt.trace = react.NewTraceWriter(out, func(line string) string { return string(rt.Redactor.RedactJSON([]byte(line))) })
	}
	rt.events = react.Sinks{rt.trace, opts.Events}
	if rt.Env, err = tools.NewEnv(s.Workspace); err != nil {
		return rt, badInputf("--workspace: %v", err)
	}
	rt.Env.ToolTimeout = s.ToolTimeout
	rt.Env.ExtraEnv = s.Env
	rt.Env.Sandbox, _ = sandbox.ParseMode(s.Sandbox) // checked by validate
	rt.Env.NoNetwork = s.NoNetwork
	rt.Env.Redactor = rt.Redactor // tools cut output only where no secret is split
	if s.ProjectInstructions {
		rt.loadInstructions()
	}
	// The policy file is read before any model call: a bad one fails fast.
	pol, err := policy.LoadPolicy(s.PolicyPath())
	if err != nil {
		return rt, badInput(err)
	}
	// So is the hooks file: a malformed one must not surface mid-run.
	if rt.hooks, err = loadHooks(s); err != nil {
		return rt, badInput(err)
	}
	rt.Registry = tools.DefaultRegistry()
	if !s.NoAsk {
		// ask_user is on unless --no-ask: a run may ask its user.
		rt.Registry = tools.NewRegistry(append(tools.Builtins(), tools.AskUserTool{})...)
	}
	if len(mcpConfig.Servers) > 0 {
		rt.mcp = mcp.Start(ctx, mcpConfig, opts.MCPServers, mcp.Options{ClientVersion: buildinfo.Version, Log: slog.Default()})
		rt.Registry = rt.mcp.Registry(rt.Registry)
	}
	for _, t := range s.AllowTools {
		if _, ok := rt.Registry.Get(t); !ok {
			return rt, badInputf("--allow-tools: unknown tool %q (known: %s)", t, strings.Join(rt.Registry.Names(), ", "))
		}
	}
	if rt.Backend = opts.Backend; rt.Backend == nil {
		if rt.Backend, err = openBackend(ctx, s, opts, rt.opts.SettingName); err != nil {
			return rt, err
		}
	}
	// The one place prompts are redacted: every optional capability of the
	// backend passes through the wrapper (llm.Redacting).
	rt.Backend = llm.Redacting(rt.Backend, rt.Redactor.Redact)
	rt.Info = rt.Model().Header()
	if m, ok := rt.Backend.(llm.ModelLess); ok {
		rt.noModel = &noModel{Why: m.NoModel()}
	}
	rt.policy = pol
	if s.ApproveCmd != "" {
		rt.approver = policy.NewCommandApprover(policy.CommandApproverOptions{Command: s.ApproveCmd, Timeout: s.ApproveTimeout,
			Dir: rt.Env.Workspace, Log: slog.Default()})
	}
	rt.gate = rt.NewGate(opts.Prompter)
	rt.asker = askerOf(opts.Prompter)
	plannerTools := s.AllowTools
	if len(plannerTools) == 0 {
		plannerTools = rt.Registry.Names()
	}
	rt.planner = &planner.Planner{Backend: rt.Backend, Registry: rt.Registry,
		Tools: plannerTools, Thought: schema.ThoughtOptions{Required: s.RequireThought, MinLength: s.MinThoughtLength},
		Sampling: Sampling(s), MaxTokens: planMaxTokens(s), MaxSteps: MaxPlanSteps, Info: rt.Info,
		ContextSize: s.CtxSize, MinReplyTokens: s.MaxTokens, ProjectInstructions: rt.projectInstructions(s).Text}
	rt.openHistory(s)
	return rt, nil
}

// loadHooks reads the hooks file: the one --hooks or TACT_HOOKS names (it
// must exist), else the user's default, which may be missing. Never a file
// in the workspace: a repository must not run code through tact.
func loadHooks(s *config.Settings) (*hooks.Config, error) {
	path, explicit := s.HooksPath()
	c, err := hooks.Load(path)
	switch {
	case err == nil:
		return c, nil
	case !explicit && errors.Is(err, fs.ErrNotExist):
		return nil, nil
	}
	return nil, err
}

// noModel is a runtime without a model (llm.ModelLess): why, when the
// backend says, goes into the errors of the jobs that need one.
type noModel struct{ Why string }

func mcpPath(s *config.Settings) (string, bool, func(string) (string, bool)) {
	path, explicit := s.MCPConfigPath()
	return path, explicit, os.LookupEnv
}

// openFailed ends a trace opened before Open failed with one run_start and
// one termination event, as the contract asks of every trace tact opens.
func (rt *Runtime) openFailed(err error) {
	if rt.trace == nil {
		return
	}
	rt.trace.Emit(react.EventRunStart, map[string]any{"mode": rt.opts.Mode})
	rt.trace.Emit(react.EventTermination, TerminationOf(err).Event(llm.Usage{}))
}

// Close ends the MCP servers, the backend and the trace. Safe on a
// partly opened Runtime and more than once.
func (rt *Runtime) Close() error {
	if rt == nil {
		return nil
	}
	var errs []error
	if rt.mcp != nil {
		rt.mcp.Close()
		rt.mcp = nil
	}
	if rt.Backend != nil {
		errs = append(errs, rt.Backend.Close())
		rt.Backend = nil
	}
	if rt.trace != nil {
		if err := rt.trace.Err(); err != nil {
			errs = append(errs, fmt.Errorf("trace file: %w", err))
		}
	}
	if rt.traceFile != nil {
		errs = append(errs, rt.traceFile.Close())
		rt.traceFile = nil
	}
	if rt.pruneStop != nil {
		rt.pruneStop()
		rt.pruneStop = nil
	}
	if rt.hist != nil {
		// Its errors were the store's one warning: they never fail a run.
		_ = rt.hist.Close()
		rt.hist = nil
	}
	return errors.Join(errs...)
}

// HasModel reports whether jobs can call a model.
func (rt *Runtime) HasModel() bool { return rt.noModel == nil }

// Model is what the backend says it is (llm.Describer).
func (rt *Runtime) Model() llm.ModelInfo { return llm.InfoOf(rt.Backend) }

// Concurrency is how many jobs' model calls the backend serves at once
// (llm.Concurrent; llm.Unbounded when they never wait for each other).
func (rt *Runtime) Concurrency() int { return llm.ConcurrencyOf(rt.Backend) }

// validate checks what config cannot: the sandbox mode, --stop-when must
// compile, and --threads is capped at the CPUs present (with a warning).
func validate(s *config.Settings) error {
	if _, err := sandbox.ParseMode(s.Sandbox); err != nil {
		return fmt.Errorf("--sandbox: %v", err)
	}
	if s.StopWhen != "" {
		if err := react.CompileJQ(s.StopWhen); err != nil {
			return fmt.Errorf("--stop-when: %v", err)
		}
	}
	if _, err := answerSchema(s); err != nil {
		return err
	}
	if w := s.CapThreads(); w != "" {
		slog.Warn(w)
	}
	return nil
}

// ExitCode is the process exit code tact documents for an engine error.
func ExitCode(err error) int {
	var e *Error
	if errors.As(err, &e) && e.code != 0 {
		return e.code
	}
	switch KindOf(err) {
	case ErrBadInput, ErrNeedsModel, ErrContextTooSmall:
		return 2
	case ErrTimeout:
		return react.ReasonTimeout.ExitCode()
	case ErrCancelled:
		return react.ReasonCancelled.ExitCode()
	}
	return 1
}

// loadInstructions reads the workspace's project instructions; one that
// cannot be read is a warning, not the end of the run.
func (rt *Runtime) loadInstructions() {
	in, err := instructions.Read(rt.Env.Workspace)
	if err != nil {
		slog.Warn("running without the project instructions", "err", err)
		return
	}
	rt.instructions = in
	if in.Refused != "" {
		slog.Warn("project instructions: " + in.Refused)
	}
	if len(in.Files) > 0 {
		slog.Debug("project instructions", "root", in.Root, "files", in.Files, "bytes", len(in.Text), "cut", in.Cut,
			"text", rt.Redactor.Redact(in.Text))
	}
}
