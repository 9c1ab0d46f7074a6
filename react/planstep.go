package react

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// planAction turns a plan row into an action: $jq args are computed, ""
// args are filled with one model call.
func (r *run) planAction(p *planner.Step) (Action, llm.Usage, string, error) {
	var usage llm.Usage
	args := map[string]json.RawMessage{}
	var missing []string
	shaped := r.answerV != nil && p.Tool == tools.FinalAnswer
	for k, v := range p.Args {
		kind, expr := planner.ClassifyArg(v)
		switch kind {
		case planner.ArgJQ:
			val, err := r.evalJQ(expr)
			if err != nil {
				return Action{}, usage, SkipInvalidAction, fmt.Errorf("argument %q: %v", k, err)
			}
			args[k] = val
		case planner.ArgFill:
			missing = append(missing, k)
		default:
			if shaped && k == "answer" {
				if _, err := r.checkAnswer(v); err != nil {
					// A planner writes the answer as text before any step
					// ran: under an answer schema it is filled instead.
					missing = append(missing, k)
					continue
				}
			}
			args[k] = v
		}
	}
	tool, _ := r.e.Registry.Get(p.Tool)
	if shaped && len(missing) > 0 && !llm.HasModel(r.e.Backend) {
		return Action{}, usage, SkipInvalidAction, &answerError{fmt.Errorf("%s", "no model to write an answer that validates")}
	}
	if len(missing) > 0 {
		filled, u, err := r.fill(p, tool, args, missing)
		usage = u
		if err != nil {
			return Action{}, usage, SkipInvalidAction, err
		}
		args = filled
	}
	raw := argsJSON(args)
	if shaped {
		if _, err := r.checkAnswer(args["answer"]); err != nil {
			return Action{}, usage, SkipInvalidAction, &answerError{err}
		}
	}
	v, err := schema.Compile(tool.Schema())
	if err == nil {
		_, err = v.ValidateJSON(raw)
	}
	if err != nil {
		return Action{}, usage, SkipInvalidAction, fmt.Errorf("arguments for %s: %v", p.Tool, err)
	}
	return Action{Thought: p.Thought, Tool: p.Tool, Args: raw}, usage, "", nil
}

func (r *run) fill(p *planner.Step, tool tools.Tool, known map[string]json.RawMessage, missing []string) (map[string]json.RawMessage, llm.Usage, error) {
	req, err := r.prepare(llm.KindFill, llm.Message{Role: llm.RoleUser, Content: prompt.Render("fill", prompt.Fill{
		Step: r.st.PlanIndex + 1, Tool: p.Tool, Thought: p.Thought, Known: string(argsJSON(known)), Missing: missing,
	})})
	if err != nil {
		return nil, llm.Usage{}, err
	}
	r.progress("step %d: filling %s arguments", r.st.PlanIndex+1, p.Tool)
	resp, err := r.send(req, schema.Fill(schema.Tool{Name: tool.Name(), Schema: tool.Schema()}))
	r.addUsage(resp.Usage)
	if err != nil {
		return nil, resp.Usage, fmt.Errorf("fill arguments: %w", err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(resp.Text), &got); err != nil {
		return nil, resp.Usage, fmt.Errorf("fill reply is not a JSON object: %v", err)
	}
	// Arguments the plan fixed win over the model's.
	for k, v := range known {
		got[k] = v
	}
	return got, resp.Usage, nil
}

// skip records a planned step that cannot run; the plan index stays.
func (r *run) skip(p *planner.Step, reason string, act Action, source, why string) {
	r.st.Attempts++
	r.st.RetryCount++
	r.st.PlanSkipReason = reason
	r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: why, ExitCode: ExitCodeNotRun, SkipReason: reason, Source: source, PlanStep: r.st.PlanIndex + 1})
	r.emit(EventSkip, map[string]any{"plan_step": r.st.PlanIndex + 1, "tool": p.Tool, "skip_reason": reason, "detail": why})
	r.addTranscript(planner.TranscriptEntry{Step: r.st.PlanIndex + 1, Tool: act.Tool, Args: act.Args, Skip: reason, Error: why})
}

// replan asks the planner for a new plan with the transcript so far.
func (r *run) replan() {
	e := r.e
	trigger := r.replanWhy
	if r.st.ConsecutiveFailures >= e.ReplanThreshold {
		trigger = "failures"
	}
	r.emit(EventReplanRequest, map[string]any{"trigger": trigger, "transcript": r.transcript, "state": *r.st})
	r.st.Replans++
	r.replanDue, r.replanWhy = false, ""
	r.progress("replanning (%s)", trigger)
	// The transcript is already redacted; so is the query the planner sees.
	np, usage, err := e.Planner.Plan(r.ctx, r.e.Redact(r.query), r.transcript, r.plan)
	r.addUsage(usage)
	r.st.ConsecutiveFailures = 0
	if err != nil {
		if r.checkContext() {
			return
		}
		r.st.Attempts++
		r.st.RetryCount++
		r.emit(EventReplanFailed, map[string]any{"error": err.Error()})
		r.record(StepTrace{Action: ToolCall{Tool: schema.Replan}, Observation: "replan failed: " + err.Error(), Error: err.Error(), ExitCode: ExitCodeNotRun, Source: "model", SkipReason: SkipInvalidAction, TokenUsage: usage})
		r.forceModel = true
		return
	}
	r.plan = np
	r.st.PlanIndex = 0
	r.st.PendingPlanStep = 1
	r.st.PlanSkipReason = ""
	r.st.MaxSteps = r.planBudget(r.st.Attempts, len(np.Steps)+e.RetryBuffer)
	r.forceModel = false
	r.askReason = ""
	if len(e.AllowTools) == 0 {
		// Tools a new plan names become allowed, as for the first plan.
		for _, n := range np.Tools() {
			r.allowed[n] = true
		}
	}
	r.emitPlan(EventReplan, map[string]any{"trigger": trigger, "transcript": r.transcript, "token_usage": usage})
	r.addHist(llm.RoleUser, "The plan was revised:\n"+strings.Join(np.Outline(), "\n"), histPlan)
}

// evalJQ computes a {"$jq": expr} argument over the run state, bounded in
// time and memory (jqx: "jq: evaluation exceeded 2s" / "256 MiB").
func (r *run) evalJQ(expr string) (json.RawMessage, error) {
	state, err := json.Marshal(r.jqState())
	if err != nil {
		return nil, err
	}
	out, err := jqx.Eval(r.ctx, jqx.Request{Expr: expr, Vars: []string{"$state"},
		VarValues: []json.RawMessage{state}, Input: state, MaxResults: 1})
	if err != nil {
		return nil, fmt.Errorf("$jq %s: %v", jqx.Excerpt(expr), err)
	}
	if len(out.Results) == 0 {
		return nil, fmt.Errorf("$jq %s produced no value", jqx.Excerpt(expr))
	}
	return out.Results[0], nil
}

// argsJSON encodes an arguments object with sorted keys and without HTML
// escaping, so ">" stays ">" in dry runs, prompts and traces (json.Marshal
// would write \u003e, also inside the raw values it is given).
func argsJSON(m map[string]json.RawMessage) json.RawMessage {
	if m == nil {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // big integers stay exact
	var v any
	if dec.Decode(&v) != nil {
		return b
	}
	if out, err := text.JSON(v); err == nil {
		return out
	}
	return b
}
