// Package runplan turns a recorded run into a saved plan (`tact plan
// --from RUN`): the run's successful tool calls become plan steps with
// their literal arguments and thoughts, and a final_answer step ends it.
//
// Where a data argument of a kept step repeats an earlier kept step's
// output, or one line of it, it becomes a {"$jq": ...} reference to that
// output, so replaying the plan passes values between steps as the model
// did, and a changed output (another file name, another commit) flows
// through. A command, a working directory, a path written to, and any
// argument of an exec or MCP tool are never linked (Options.LinkOutputs
// asks for it): an output must not decide what the replay runs.
//
// Only the trace is available, so everything is built from what the model
// saw: thoughts, arguments and observations are redacted, and observations
// may have been cut by the executor. An observation that was cut or that
// holds a redaction marker differs from the raw output the plan's $jq will
// see when it runs, so it is never matched; an argument the run's redaction
// replaced is written as the trace shows it ([REDACTED]). A match is by
// value only: an argument that merely happens to equal an earlier output
// (or one of its lines) is referenced too, which is why empty and very
// short values are never matched.
package runplan

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// Options shape the plan Build writes.
type Options struct {
	// RunID is recorded in the header as planner {"from_run": RunID}
	// (left out when empty).
	RunID string
	// AnswerJQ is the final answer's $jq expression over the run state
	// (for example ".steps[-1].output"), so the plan runs without a model.
	// Empty: the answer is "" and one model call fills it from the
	// observations when the plan runs.
	AnswerJQ string
	// Created is the header's creation time (zero: now).
	Created time.Time
	// Registry checks the kept steps whose tools it has, as planner.Parse
	// will (nil: tools.DefaultRegistry()). A step naming a tool it lacks
	// (an MCP tool SERVER.TOOL) is kept unchecked; parsing the plan with a
	// registry that has it is the caller's concern.
	Registry *tools.Registry
	// LinkOutputs links every argument to the earlier output it repeats,
	// commands and written paths too (tact plan --link-outputs). Without
	// it only data is linked: an earlier output (a file the run read, a
	// web page, a command's output) never becomes a command, a working
	// directory, a path written to, or an argument of a tool whose
	// arguments tact cannot tell apart (exec tools, MCP tools): replaying
	// the plan would run whatever the output says the next time.
	LinkOutputs bool
}

// Omitted is a recorded step that is not in the plan, and why.
type Omitted struct {
	Iteration int    // the step's iteration in the run's trace (1-based)
	Tool      string // "" for an invalid action that named none
	Why       string
}

// String is one line for stderr: "step 3 (run_command) left out: failed
// with exit 2".
func (o Omitted) String() string {
	if o.Tool == "" {
		return fmt.Sprintf("step %d left out: %s", o.Iteration, o.Why)
	}
	return fmt.Sprintf("step %d (%s) left out: %s", o.Iteration, o.Tool, o.Why)
}

// answerThought is the final step's thought.
const answerThought = "Answer the query from the steps' output."

// Build makes a plan of query's recorded steps (Result.Trace.Steps): each
// tool run that succeeded becomes a step, in order, and a final_answer step
// ends the plan (so a run without a successful tool step still yields one).
// Omitted lists the other steps except the run's own successful
// final_answer, which the plan's final step replaces. The error is an
// AnswerJQ that does not compile.
func Build(query string, steps []react.StepTrace, o Options) (*planner.Plan, []Omitted, error) {
	reg := o.Registry
	if reg == nil {
		reg = tools.DefaultRegistry()
	}
	answer, err := answerStep(o.AnswerJQ)
	if err != nil {
		return nil, nil, err
	}
	var (
		kept    []planner.Step
		outputs []string // the kept steps' observations, as the model saw them
		omitted []Omitted
	)
	for _, st := range steps {
		why := leftOutWhy(st)
		if why == "" && st.Action.Tool == tools.FinalAnswer {
			continue // the plan's own final step replaces it
		}
		var s planner.Step
		if why == "" {
			s, why = keptStep(st, reg)
		}
		if why != "" {
			omitted = append(omitted, Omitted{Iteration: st.Iteration, Tool: st.Action.Tool, Why: why})
			continue
		}
		linkArgs(s.Args, outputs, linkable(s.Tool, reg, o.LinkOutputs))
		kept = append(kept, s)
		outputs = append(outputs, st.Observation)
	}
	created := o.Created
	if created.IsZero() {
		created = time.Now().UTC()
	}
	h := &planner.Header{Type: "plan", Query: query, Created: created}
	source := "run"
	if o.RunID != "" {
		h.Planner = map[string]any{"from_run": o.RunID}
		source += " " + o.RunID
	}
	return &planner.Plan{Header: h, Steps: append(kept, answer), Source: source}, omitted, nil
}

// linkable says which arguments of tool may become references to earlier
// outputs: all with all; else a read tool's, a built-in write tool's but
// its path, and none of an exec tool's or a tool the registry lacks.
func linkable(tool string, reg *tools.Registry, all bool) func(arg string) bool {
	t, known := reg.Get(tool)
	switch {
	case all:
		return func(string) bool { return true }
	case !known:
		return func(string) bool { return false }
	}
	switch t.Class() {
	case tools.ClassRead:
		return func(string) bool { return true }
	case tools.ClassWrite:
		return func(arg string) bool { return arg != "path" }
	}
	return func(string) bool { return false }
}

// answerStep is the plan's final step, checked as planner.Parse checks a
// row (a $jq that does not compile is an error).
func answerStep(expr string) (planner.Step, error) {
	answer := json.RawMessage(`""`)
	if expr != "" {
		answer = jqArg(expr)
	}
	s := planner.Step{Thought: answerThought, Tool: tools.FinalAnswer, Args: map[string]json.RawMessage{"answer": answer}}
	if err := planner.CheckStep(&s, tools.NewRegistry(tools.FinalAnswerTool{})); err != nil {
		return planner.Step{}, fmt.Errorf("final answer: %w", err)
	}
	return s, nil
}

// approved are the gate decisions under which a step really ran ("" for
// read tools, which are never asked): a rule, a person, an "always" answer
// or a PreToolUse hook said yes.
var approved = map[string]bool{"": true, policy.DecisionAllow: true, policy.DecisionApproved: true,
	policy.DecisionApprovedAlways: true, policy.DecisionHookApproved: true}

// leftOutWhy says why a recorded step did not run successfully, or "" when
// it did.
func leftOutWhy(st react.StepTrace) string {
	switch {
	case st.SkipReason != "":
		return skipWhy(st)
	case strings.HasPrefix(st.Decision, "dry_run:"):
		return "not run (dry run)"
	case !approved[st.Decision]:
		if strings.HasPrefix(st.Error, "denied") {
			return oneLine(st.Error)
		}
		return "denied (" + st.Decision + ")"
	case st.Observation == "interrupted" && st.Error != "":
		return "interrupted"
	case st.ExitCode == react.ExitCodeNotRun:
		if st.Error != "" {
			return oneLine(st.Error)
		}
		return "not run"
	case st.ExitCode != 0:
		return fmt.Sprintf("failed with exit %d", st.ExitCode)
	case st.Error != "":
		return "failed: " + oneLine(st.Error)
	case st.Action.Tool == schema.Replan:
		return "replan requested"
	case st.Action.Tool == "":
		return "no tool"
	}
	return ""
}

func skipWhy(st react.StepTrace) string {
	switch st.SkipReason {
	case react.SkipReplanRequested:
		return "replan requested"
	case react.SkipDuplicateAction:
		return "duplicate of an earlier step (skipped)"
	case react.SkipToolNotPermitted:
		return "tool not permitted (skipped)"
	case react.SkipInvalidAction:
		if st.Error != "" {
			return "invalid action: " + oneLine(st.Error)
		}
		return "invalid action: " + oneLine(st.Observation)
	}
	return "skipped (" + st.SkipReason + ")"
}

// keptStep is the plan step of a successful tool run, or why it cannot be
// one: its arguments are not an object, or fail the check planner.Parse
// makes of them.
func keptStep(st react.StepTrace, reg *tools.Registry) (planner.Step, string) {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(st.Action.Args, &args); err != nil || args == nil {
		return planner.Step{}, "arguments are not a JSON object"
	}
	for k, v := range args {
		args[k] = keepLiteral(v)
	}
	s := planner.Step{Thought: st.Thought, Tool: st.Action.Tool, Args: args}
	if _, ok := reg.Get(s.Tool); ok {
		if err := planner.CheckStep(&s, reg); err != nil {
			return planner.Step{}, oneLine(err.Error())
		}
	}
	return s, ""
}

// oneLine keeps a reason to the first line of s, clipped.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return text.Clip(s, 160)
}
