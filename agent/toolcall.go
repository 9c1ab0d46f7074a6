package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/tools"
)

// NewGate makes a gate as the runtime's own: the policy file as Open read
// it, --read-only, --yes, --dry-run and --approve-cmd (which wins over the
// prompter), asking prompter where a person decides (nil: nobody is asked,
// such calls are denied). Its "always" answers last as long as the gate,
// and its questions wait only on its own earlier ones: tact mcp serve
// gives each session one, so one client's unanswered question holds up no
// other client.
func (rt *Runtime) NewGate(prompter policy.Prompter) tools.Gate {
	return rt.newGate(prompter, rt.S.OnApproval == "pause")
}

// NewPausingGate makes a gate as NewGate(nil) that pauses where a person
// would decide, whatever --on-approval says: its caller answers pauses
// (tact mcp serve's clients on protocol 2026-07-28, whose input-required
// results are such answers). With --no-input it is NewGate(nil).
func (rt *Runtime) NewPausingGate() tools.Gate {
	return rt.newGate(nil, !rt.S.NoInput || rt.S.OnApproval == "pause")
}

func (rt *Runtime) newGate(prompter policy.Prompter, pause bool) tools.Gate {
	s := rt.S
	return policy.NewGate(policy.GateOptions{Policy: rt.policy, PolicyPath: s.PolicyPath(), Yes: s.Yes, ReadOnly: s.ReadOnly,
		DryRun: s.DryRun, Prompter: prompter, Approver: rt.approver, Redactor: rt.Redactor, Log: slog.Default(),
		PauseUnattended: pause})
}

// ToolCall is one tool call outside a run (tact mcp serve's tools/call).
type ToolCall struct {
	Tool tools.Tool
	Args json.RawMessage
	// Gate approves a write or exec call (nil: the runtime's).
	Gate tools.Gate
	// ID names the call to hooks and the approver (TACT_RUN_ID, run_id);
	// "": a fresh one.
	ID string
}

// ToolCallResult is how a ToolCall ended.
type ToolCallResult struct {
	// Result is the tool's result; when the call did not run, Err says
	// why ("blocked by hook: ...", "denied by ...").
	Result tools.Result
	// Ran: the tool ran. DryRun: --dry-run decided it and nothing ran
	// (Result.Output says what would have happened).
	Ran, DryRun bool
	// Context is what PostToolUse hooks added for the caller.
	Context string
	// NeedsInput: the gate paused the call for a person's approval
	// (Runtime.NewPausingGate); Result.Err is the question.
	NeedsInput bool
}

// CallTool makes one call as a run's step does, outside a run: the user's
// PreToolUse hooks (a block wins; an approval stands where a person would
// be asked), then for write and exec tools the gate (policy, --yes,
// --approve-cmd, the prompter), the tool in the runtime's Env, then the
// PostToolUse hooks (a block turns the result into an error). Nothing a
// client calls directly skips what a run's action goes through.
func (rt *Runtime) CallTool(ctx context.Context, c ToolCall) ToolCallResult {
	if c.ID == "" {
		c.ID = react.NewRunID()
	}
	ctx = tools.WithRunID(ctx, c.ID)
	gate := c.Gate
	if gate == nil {
		gate = rt.gate
	}
	var runner *hooks.Runner
	if !rt.hooks.Empty() {
		runner = hooks.NewRunner(rt.hooks, hooks.Options{Redactor: rt.Redactor, DryRun: rt.S.DryRun, Log: slog.Default()})
	}
	in := hooks.Input{SessionID: c.ID, Cwd: rt.Env.Workspace, ToolName: c.Tool.Name(), ToolInput: c.Args}
	pre := in
	pre.HookEventName = hooks.PreToolUse
	out := runner.Run(ctx, pre)
	if out.Decision == hooks.DecisionBlock {
		return ToolCallResult{Result: tools.Result{Err: errors.New("blocked by hook: " + out.Reason)}}
	}
	if c.Tool.Class() != tools.ClassRead {
		call := tools.Call{Tool: c.Tool, Args: c.Args}
		if out.Decision == hooks.DecisionApprove {
			call.HookApproved = out.Reason
			if call.HookApproved == "" {
				call.HookApproved = "a PreToolUse hook approved it"
			}
		}
		v := gate.Check(ctx, rt.Env, []tools.Call{call})[0]
		switch {
		case rt.S.DryRun:
			why := v.Reason
			if why == "" {
				why = "decision: " + v.Decision
			}
			return ToolCallResult{DryRun: true, Result: tools.Result{Output: fmt.Sprintf("[%s] %s", c.Tool.Name(), why)}}
		case !v.Allowed && v.Decision == tools.DecisionNeedsInput:
			return ToolCallResult{NeedsInput: true, Result: tools.Result{Err: errors.New(v.Reason)}}
		case !v.Allowed:
			reason := v.Reason
			if !strings.HasPrefix(reason, "denied by") {
				reason = "denied by policy: " + reason
			}
			return ToolCallResult{Result: tools.Result{Err: errors.New(reason)}}
		}
	}
	res := ToolCallResult{Ran: true, Result: c.Tool.Run(ctx, rt.Env, c.Args)}
	if ctx.Err() != nil || !runner.Has(hooks.PostToolUse) {
		return res
	}
	post := in
	post.HookEventName = hooks.PostToolUse
	errText := ""
	if res.Result.Err != nil {
		errText = rt.Redactor.Redact(res.Result.Err.Error())
	}
	post.ToolResponse = &hooks.ToolResponse{Output: rt.Redactor.Redact(res.Result.Output), Stderr: rt.Redactor.Redact(res.Result.Stderr),
		Error: errText, ExitCode: res.Result.ExitCode, Success: !res.Result.Failed()}
	out = runner.Run(ctx, post)
	if out.Decision == hooks.DecisionBlock {
		// The tool ran, but the caller is told it failed, and why.
		note := "blocked by hook: " + out.Reason
		if res.Result.Err != nil {
			note = res.Result.Err.Error() + "\n" + note
		}
		res.Result.Err = errors.New(note)
	}
	res.Context = out.Context
	return res
}
