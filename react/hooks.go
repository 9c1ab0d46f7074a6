package react

import (
	"context"

	"github.com/tactcli/tact/hooks"
)

// Hooks runs the user's hook programs at the run's fixed points
// (docs/hooks.md); *hooks.Runner implements it. Run never fails: a hook
// that cannot run is a block (PreToolUse) or a warning, in the Outcome.
type Hooks interface {
	Has(ev hooks.Event) bool
	Run(ctx context.Context, in hooks.Input) hooks.Outcome
}

// EventHook is one hook program's run: event, matcher, command, exit code,
// duration and decision (hooks.Run's fields, with "hook_event" for its
// event and the tool it was called for).
const EventHook = "hook"

// Hook decisions in a step's "decision" field.
const (
	DecisionHookBlocked = "blocked_by_hook" // a PreToolUse or PostToolUse hook blocked the call
	SkipStopHook        = "stop_hook"       // a Stop hook sent the final answer back
)

func (r *run) hasHook(ev hooks.Event) bool { return r.e.Hooks != nil && r.e.Hooks.Has(ev) }

// callHooks runs the hooks of ev for this run and emits one event per hook
// program that ran (or, in a dry run, would run).
func (r *run) callHooks(ev hooks.Event, in hooks.Input) hooks.Outcome {
	if !r.hasHook(ev) {
		return hooks.Outcome{Decision: hooks.DecisionAllow}
	}
	in.SessionID, in.HookEventName, in.Query = r.id, ev, r.query
	if r.e.Env != nil {
		in.Cwd = r.e.Env.Workspace
	}
	out := r.e.Hooks.Run(r.ctx, in)
	for i := range out.Runs {
		run := &out.Runs[i]
		// The command is the user's own text, but it may hold a secret
		// (a token on the command line): the trace shows it redacted.
		run.Command = r.e.Redact(run.Command)
		f := map[string]any{"hook_event": run.Event, "command": run.Command, "exit_code": run.ExitCode,
			"duration_ms": run.DurationMS, "decision": run.Decision}
		if run.Matcher != "" {
			f["matcher"] = run.Matcher
		}
		if run.Reason != "" {
			f["reason"] = run.Reason
		}
		if in.ToolName != "" {
			f["tool"] = in.ToolName
		}
		r.emit(EventHook, f)
	}
	return out
}

// runStartContext runs the RunStart hooks; what they say goes into the
// task message.
func (r *run) runStartContext() string {
	if !r.hasHook(hooks.RunStart) {
		return ""
	}
	out := r.callHooks(hooks.RunStart, hooks.Input{})
	r.res.Hooks = append(r.res.Hooks, out.Runs...)
	return out.Context
}
