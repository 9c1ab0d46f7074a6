package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/sandbox"
)

const (
	// DefaultMaxOutput caps what is kept of each of a hook's streams.
	DefaultMaxOutput = sandbox.DefaultProgramOutput
	// maxMessage caps a reason or context handed to the model.
	maxMessage = 8 << 10
)

// Options configure a Runner.
type Options struct {
	// Redactor hides secrets in what hooks read on stdin and in the
	// reasons and contexts they give back (nil: nothing is hidden).
	Redactor *redact.Redactor
	// Env is the hooks' environment before the TACT_* variables are added
	// (nil: os.Environ()).
	Env []string
	// DryRun lists the hooks that would run without running them, but
	// for the PreToolUse hooks of a call that runs anyway (Input.Live).
	DryRun bool
	// Log gets one warning for each hook that failed (nil: none).
	Log *slog.Logger
	// MaxOutput caps what is kept of each of stdout and stderr; the rest
	// is read and dropped (0: DefaultMaxOutput).
	MaxOutput int
}

// Runner runs the hooks of a Config. A nil *Runner runs nothing and allows
// everything.
type Runner struct {
	cfg *Config
	opt Options
}

// NewRunner returns a Runner for c's hooks (c may be nil: none).
func NewRunner(c *Config, o Options) *Runner {
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	return &Runner{cfg: c, opt: o}
}

// Has reports whether any hook is registered for ev.
func (r *Runner) Has(ev Event) bool { return r != nil && r.cfg.Has(ev) }

// Config is the Runner's hooks file (nil: none).
func (r *Runner) Config() *Config {
	if r == nil {
		return nil
	}
	return r.cfg
}

// result is one hook's Run and what its reply adds to the Outcome.
type result struct {
	run     Run
	context string
}

// Run runs every hook matching in.HookEventName and in.ToolName,
// concurrently, and combines what they decided. in.ToolInput is the call's
// raw arguments; Run adds the fields Claude Code's hooks read. It never
// fails: a hook that fails blocks a PreToolUse call (fail closed) and is a
// logged DecisionError elsewhere.
func (r *Runner) Run(ctx context.Context, in Input) Outcome {
	if r == nil {
		return Outcome{Decision: DecisionAllow}
	}
	hooks := r.cfg.Hooks(in.HookEventName, in.ToolName)
	if len(hooks) == 0 {
		return Outcome{Decision: DecisionAllow}
	}
	if r.opt.DryRun && !(in.Live && in.HookEventName == PreToolUse) {
		out := Outcome{Decision: DecisionAllow}
		for _, h := range hooks {
			out.Runs = append(out.Runs, Run{Event: h.Event, Matcher: h.Matcher, Command: h.Command, ExitCode: -1, Decision: DecisionDryRun})
		}
		return out
	}
	stdin := r.stdin(in)
	env := r.env(in)
	results := make([]result, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.runHook(ctx, h, in.Cwd, stdin, env)
		}()
	}
	wg.Wait()
	return r.combine(results)
}

// stdin is the JSON a hook reads: in, with the alias fields added to
// tool_input, redacted, then a newline (so `read` in a script sees a
// whole line).
func (r *Runner) stdin(in Input) []byte {
	if len(in.ToolInput) > 0 {
		if json.Valid(in.ToolInput) {
			in.ToolInput = withAliases(in.ToolName, in.ToolInput, in.Cwd)
		} else {
			// Not JSON (a model's broken call): passed as a string, so
			// stdin stays one valid object.
			s, _ := text.JSON(string(in.ToolInput))
			in.ToolInput = s
		}
	}
	data, err := text.JSON(in)
	if err != nil {
		in.ToolInput = nil
		data, _ = text.JSON(in)
	}
	return append(r.opt.Redactor.RedactJSON(data), '\n')
}

// hookEnv are the variables tact sets for a hook, replacing any the
// environment has.
var hookEnv = []string{"TACT_HOOK_EVENT", "TACT_RUN_ID", "TACT_WORKSPACE", "CLAUDE_PROJECT_DIR"}

func (r *Runner) env(in Input) []string {
	base := r.opt.Env
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+len(hookEnv))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !isHookEnv(name) {
			env = append(env, kv)
		}
	}
	return append(env,
		"TACT_HOOK_EVENT="+string(in.HookEventName),
		"TACT_RUN_ID="+in.SessionID,
		"TACT_WORKSPACE="+in.Cwd,
		// Claude Code's name for the project root, which its scripts use.
		"CLAUDE_PROJECT_DIR="+in.Cwd,
	)
}

func isHookEnv(name string) bool {
	for _, n := range hookEnv {
		if n == name {
			return true
		}
	}
	return false
}

// runHook runs one hook with sandbox.RunProgram (sh -c COMMAND in dir, in
// a session of its own, its group killed whole at the timeout), stdin the
// JSON, stdout and stderr captured up to MaxOutput.
func (r *Runner) runHook(ctx context.Context, h Hook, dir string, stdin []byte, env []string) result {
	res := result{run: Run{Event: h.Event, Matcher: h.Matcher, Command: h.Command, ExitCode: -1}}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	pr := sandbox.RunProgram(ctx, sandbox.Program{
		Command: h.Command, Dir: dir, Env: env, Stdin: stdin,
		Timeout: timeout, MaxOutput: r.opt.MaxOutput,
	})
	res.run.DurationMS = pr.Duration.Milliseconds()
	switch {
	case pr.StartErr != nil:
		return r.failed(res, fmt.Sprintf("could not start: %v", pr.StartErr))
	case pr.ExitCode >= 0:
	case pr.Cancelled:
		return r.failed(res, "was cancelled")
	case pr.TimedOut:
		return r.failed(res, "timed out after "+seconds(timeout))
	case pr.Signal != 0:
		return r.failed(res, fmt.Sprintf("was killed by signal %d (%v)", int(pr.Signal), pr.Signal))
	default:
		return r.failed(res, "ended without an exit status")
	}
	res.run.ExitCode = pr.ExitCode
	switch res.run.ExitCode {
	case 0:
	case 2:
		reason := strings.TrimSpace(string(pr.Stderr))
		if reason == "" {
			reason = "blocked by hook (exit 2, no reason given)"
		}
		res.run.Decision, res.run.Reason = DecisionBlock, r.message(reason)
		return res
	default:
		what := fmt.Sprintf("exited %d", res.run.ExitCode)
		if line := firstLine(string(pr.Stderr)); line != "" {
			what += ": " + line
		}
		return r.failed(res, what)
	}

	rp, err := judgeReply(h.Event, pr.Stdout, pr.StdoutCut)
	if err != nil {
		what := "gave a malformed reply: " + err.Error()
		if pr.StdoutCut {
			what = fmt.Sprintf("replied more than the %d bytes kept of its stdout: a cut reply is unknown", r.opt.MaxOutput)
		}
		return r.failed(res, what)
	}
	res.context = r.message(rp.context)
	switch rp.decision {
	case DecisionBlock:
		reason := rp.reason
		if strings.TrimSpace(reason) == "" {
			reason = "blocked by hook (no reason given)"
		}
		res.run.Decision, res.run.Reason = DecisionBlock, r.message(reason)
	case DecisionApprove:
		res.run.Decision = DecisionApprove
		res.run.Reason = r.message(rp.reason)
	default:
		res.run.Decision = DecisionAllow
	}
	return res
}

// failed records a hook that did not do its job (what says how): it blocks
// a PreToolUse call, since a guard that cannot run must not let the call
// through; for other events it is a warning with no effect.
func (r *Runner) failed(res result, what string) result {
	res.run.Reason = r.message(fmt.Sprintf("hook %s %s", quoteCommand(res.run.Command), what))
	if res.run.Event == PreToolUse {
		res.run.Decision = DecisionBlock
	} else {
		res.run.Decision = DecisionError
	}
	if r.opt.Log != nil {
		r.opt.Log.Warn("hook failed", "event", string(res.run.Event), "decision", res.run.Decision, "reason", text.OneLine(res.run.Reason))
	}
	return res
}

// combine makes the Outcome: block if any hook blocked, else approve if
// any approved, else allow; reasons and contexts in file order.
func (r *Runner) combine(results []result) Outcome {
	out := Outcome{Decision: DecisionAllow, Runs: make([]Run, len(results))}
	var reasons, contexts []string
	approved := false
	for i, res := range results {
		out.Runs[i] = res.run
		switch res.run.Decision {
		case DecisionBlock:
			reasons = append(reasons, res.run.Reason)
		case DecisionApprove:
			approved = true
		}
		if res.context != "" {
			contexts = append(contexts, res.context)
		}
	}
	switch {
	case len(reasons) > 0:
		out.Decision = DecisionBlock
		out.Reason = r.message(strings.Join(reasons, "\n"))
	case approved:
		out.Decision = DecisionApprove
	}
	out.Context = r.message(strings.Join(contexts, "\n"))
	return out
}

// message is s as it may reach the model: redacted, then capped.
func (r *Runner) message(s string) string {
	s = r.opt.Redactor.Redact(s)
	if len(s) <= maxMessage {
		return s
	}
	return s[:text.RuneStart(s, maxMessage-len("…"))] + "…"
}

// seconds is d as the hooks file gives timeouts: "60s", not "1m0s".
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// quoteCommand is a hook's command for a message: one line, short.
func quoteCommand(cmd string) string {
	return "`" + text.Clip(text.OneLine(cmd), 80) + "`"
}

// firstLine is the first non-empty line of s, trimmed and clipped.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return text.Clip(l, 200)
		}
	}
	return ""
}
