// Package tools holds tact's tools (read, write, list, search, stat,
// run_command, jq, final_answer), the registry that offers them, the workspace they may
// touch (Env), and the Gate interface that approves their calls.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/sandbox"
)

// Class is a tool's side-effect class; approval policy is decided per class.
type Class string

const (
	ClassRead  Class = "read"  // never changes anything; never asks
	ClassWrite Class = "write" // changes files in the workspace
	ClassExec  Class = "exec"  // runs programs
)

// Env is what tools may touch. Build it with NewEnv so Workspace is absolute
// and symlink-resolved.
type Env struct {
	Workspace   string        // absolute, symlinks resolved
	ToolTimeout time.Duration // per run_command; 0 means DefaultToolTimeout
	OutputCap   int           // bytes kept of a command's stdout/stderr; 0 means DefaultOutputCap
	ReadCap     int64         // bytes read_file/jq will read; 0 means DefaultReadCap
	ExtraEnv    []string      // KEY=VALUE pairs added to run_command's allow-listed environment
	// Redactor, when set, makes tools that cut output (run_command's
	// capture, read_file's cap) cut only where no secret is split.
	Redactor *redact.Redactor
	// KillGrace is how long a terminated process group gets between SIGTERM
	// and SIGKILL; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Sandbox is run_command's Landlock mode; "" means WorkspaceWrite.
	Sandbox sandbox.Mode
	// NoNetwork forbids run_command TCP connect and bind (Landlock ABI 4+).
	NoNetwork bool
}

const (
	DefaultToolTimeout = 60 * time.Second
	DefaultOutputCap   = 64 * 1024
	DefaultReadCap     = 8 * 1024 * 1024
	DefaultKillGrace   = sandbox.DefaultKillGrace
)

// Result is what a tool run produced. Output is what the model observes
// (stdout for run_command); Stderr and ExitCode are recorded apart. Err is set
// when the tool failed (bad arguments, path escape, non-zero exit, timeout).
type Result struct {
	Output   string
	Stderr   string
	ExitCode int
	Err      error
}

// Failed reports whether the run counts as a failed tool run.
func (r Result) Failed() bool { return r.Err != nil || r.ExitCode != 0 }

// Tool is one capability offered to the model and to plans.
type Tool interface {
	Name() string
	Description() string
	Class() Class
	// Schema is the JSON Schema of the tool's arguments object.
	Schema() json.RawMessage
	// Run executes the tool. args has already been validated against Schema,
	// but Run must still decode defensively (it is fed fuzzed input in tests).
	Run(ctx context.Context, env *Env, args json.RawMessage) Result
}

// Describer is implemented by tools that can say, for an approval prompt,
// exactly what a call will do (command line and working directory, or path).
type Describer interface {
	Describe(env *Env, args json.RawMessage) string
}

// LiteralChecker is a tool with an argument its schema alone does not
// check the way a run will (final_answer's answer under an answer
// schema): a plan's literal value for it is checked by CheckLiteral when
// the plan is read, with the check the run makes. handled false: the
// tool's schema checks that argument.
type LiteralChecker interface {
	CheckLiteral(arg string, value json.RawMessage) (handled bool, err error)
}

// Registry maps tool names to tools.
type Registry struct {
	tools map[string]Tool
}

// NewRegistry builds a registry; a duplicate name is a programming error.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range tools {
		if _, dup := r.tools[t.Name()]; dup {
			panic(fmt.Sprintf("tools: duplicate tool %q", t.Name()))
		}
		r.tools[t.Name()] = t
	}
	return r
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Names returns the sorted tool names.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// List returns the tools sorted by name.
func (r *Registry) List() []Tool {
	out := make([]Tool, 0, len(r.tools))
	for _, n := range r.Names() {
		out = append(out, r.tools[n])
	}
	return out
}

// FinalAnswer is the name of the tool that ends a run.
const FinalAnswer = "final_answer"

// Call is one action the executor wants to run.
type Call struct {
	Tool Tool
	Args json.RawMessage
	// HookApproved, when set, is why a PreToolUse hook approved the call
	// (docs/hooks.md): where the gate would ask a person, or deny because
	// nobody can be asked, it approves instead. Deny rules, --read-only
	// and dry runs still win.
	HookApproved string
}

type runIDKey struct{}

// WithRunID returns ctx carrying the id of the run a call belongs to, for
// whatever the gate or a tool hands to the user's programs (an approval
// command's request).
func WithRunID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, runIDKey{}, id)
}

// RunID is the id WithRunID put in ctx, or "".
func RunID(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}

// Verdict is a Gate's answer for one call.
type Verdict struct {
	Allowed bool
	// Decision is a short word for traces: "allow", "deny", "ask" (dry run
	// only), "approved", "rejected", "approved_always".
	Decision string
	// Reason explains a denial; it becomes the model's observation
	// ("denied by policy: ...").
	Reason string
}

// Gate decides whether write/exec calls may run (policy file, --yes,
// --read-only, interactive approval). The executor asks it for every call of
// a step before running any of them; read tools are never passed to it.
type Gate interface {
	Check(ctx context.Context, env *Env, calls []Call) []Verdict
}

// AllowAll is the Gate used by library callers that trust every action.
type AllowAll struct{}

func (AllowAll) Check(_ context.Context, _ *Env, calls []Call) []Verdict {
	out := make([]Verdict, len(calls))
	for i := range out {
		out[i] = Verdict{Allowed: true, Decision: "allow"}
	}
	return out
}
