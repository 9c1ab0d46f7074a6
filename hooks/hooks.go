// Package hooks runs the user's own programs at fixed points of a run
// (docs/hooks.md): before a tool runs (PreToolUse: may block it, or approve
// it where policy would ask a person), after it ran (PostToolUse: may add
// context for the model, or turn the observation into an error), before a
// final answer is accepted (Stop: may send the model back to work), and
// when a run starts (RunStart: may add context to the task message).
//
// The file format and the protocol (JSON on stdin; exit 0 allows, exit 2
// blocks with stderr as the reason; a JSON reply's "decision" is honoured)
// follow Claude Code's hooks, so a hook written for it works unchanged.
// Hooks are the user's code: they run outside the sandbox, with the user's
// environment, in their own process group, never with a terminal; what they
// receive on stdin is redacted like the trace.
package hooks

import (
	"encoding/json"
)

// Event names a point of the run where hooks are called; the hooks file
// uses these words as keys.
type Event string

const (
	PreToolUse  Event = "PreToolUse"
	PostToolUse Event = "PostToolUse"
	Stop        Event = "Stop"
	RunStart    Event = "RunStart"
)

// Decisions, as an Outcome and a Run report them.
const (
	DecisionAllow   = "allow"   // nothing to say: the run goes on as it would
	DecisionBlock   = "block"   // exit 2, {"decision":"block"}, or a failed PreToolUse hook
	DecisionApprove = "approve" // {"decision":"approve"} (PreToolUse only)
	DecisionDryRun  = "dry_run" // --dry-run: listed, not run
	DecisionError   = "error"   // a hook of another event failed: a warning, no effect
)

// Input is what a hook reads on stdin, one JSON object. Fields that do not
// apply to the event are left out.
type Input struct {
	SessionID     string `json:"session_id"` // the run id
	HookEventName Event  `json:"hook_event_name"`
	Cwd           string `json:"cwd"` // the workspace
	Query         string `json:"query,omitempty"`
	// ToolName is tact's name (run_command, SERVER.TOOL); hooks match it
	// and its aliases (Bash, mcp__SERVER__TOOL).
	ToolName string `json:"tool_name,omitempty"`
	// ToolInput is the call's arguments plus the field names Claude Code's
	// hooks read (file_path beside path); set by Runner from Args.
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// ToolResponse (PostToolUse): the tool's result as the model sees it.
	ToolResponse *ToolResponse `json:"tool_response,omitempty"`
	// Answer (Stop): the final answer about to be accepted.
	Answer string `json:"answer,omitempty"`
	// StopHookActive (Stop): a Stop hook already sent the model back in
	// this run, as in Claude Code; a hook can use it to avoid loops.
	StopHookActive bool `json:"stop_hook_active,omitempty"`
	// Live (not sent) marks a call that runs even in a dry run: a read
	// tool's. Its PreToolUse hooks then run too, rather than being
	// listed, so a guard that blocks a read blocks it in a dry run.
	Live bool `json:"-"`
}

// ToolResponse is a finished tool run as PostToolUse hooks see it.
type ToolResponse struct {
	Output   string `json:"output"`
	Stderr   string `json:"stderr,omitempty"`
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exit_code"`
	Success  bool   `json:"success"`
}

// Run is one hook program's run: a trace event and an entry of a step's
// "hooks" in --json.
type Run struct {
	Event      Event  `json:"event"`
	Matcher    string `json:"matcher,omitempty"`
	Command    string `json:"command"`
	ExitCode   int    `json:"exit_code"` // -1: it did not exit (timeout, could not start, killed)
	DurationMS int64  `json:"duration_ms"`
	Decision   string `json:"decision"`
	Reason     string `json:"reason,omitempty"` // block (or approval) reason, or why a hook failed
}

// Outcome is what the hooks matching one call decided together: block if
// any blocked; approve if one approved and none blocked; the reasons and
// contexts of all of them, in file order.
type Outcome struct {
	Decision string // DecisionAllow, DecisionBlock or DecisionApprove
	Reason   string // the block reasons, for the model
	Context  string // additional context for the model
	Runs     []Run
}
