package react

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

func (r *run) main() {
	e := r.e
	if e.StopWhen != "" {
		if err := CompileJQ(e.StopWhen); err != nil {
			r.end(ReasonError, "", fmt.Sprintf("--stop-when: %v", err))
			return
		}
		r.stopQuery = true
	}
	start := map[string]any{"query": r.query, "no_plan": e.NoPlan, "allowed_tools": r.allowedList(), "dry_run": e.DryRun, "context": r.contextInfo()}
	if r.resumed {
		start["resumed_steps"] = len(r.res.Trace.Steps)
		start["state"] = *r.st
	}
	r.emit(EventExecuteStart, start)
	if f := r.convFold; f != nil && !r.resumed {
		r.emit(EventCompaction, map[string]any{"scope": "conversation", "tokens_before": f.before, "tokens_after": f.after,
			"entries_compacted": f.folded, "first_turn": f.first, "last_turn": f.last, "method": "extractive",
			"context_size": r.win.size, "token_usage": llm.Usage{}})
		r.progress("compacted earlier turns %d-%d (%d -> %d tokens)", f.first, f.last, f.before, f.after)
	}
	switch {
	case r.resumed: // the checkpoint's state says what comes next
	case r.plan != nil:
		r.emitPlan(EventPlan, map[string]any{"token_usage": e.SpentUsage})
	default:
		r.forceModel = true
		r.askReason = "Choose the first action."
	}
	if r.answer != nil {
		r.applyAnswer()
	}

	for r.res.TerminationReason == "" {
		r.saveCheckpoint()
		r.turn++
		if r.checkContext() {
			return
		}
		if e.TokenBudget > 0 && r.res.TokenUsage.Total() >= e.TokenBudget {
			r.fallback(ReasonTokenBudget, fmt.Sprintf("token budget of %d reached", e.TokenBudget))
			return
		}
		if r.st.Attempts >= r.st.MaxSteps {
			msg := fmt.Sprintf("step budget of %d attempts used up without a final answer", r.st.MaxSteps)
			if r.stopSentBack > 0 {
				msg += fmt.Sprintf(" (a Stop hook sent %d answers back; the last: %s)", r.stopSentBack, firstLine(r.stopReason))
			}
			r.fallback(ReasonMaxIterations, msg)
			return
		}
		if r.plan != nil && e.Planner != nil && (r.replanDue || r.st.ConsecutiveFailures >= e.ReplanThreshold) && r.st.Replans < e.MaxReplans {
			r.replan()
			continue
		}
		r.iteration()
	}
}

// saveCheckpoint hands the run's state to OnCheckpoint when a step was
// recorded since the last checkpoint.
func (r *run) saveCheckpoint() {
	if r.e.OnCheckpoint == nil || len(r.res.Trace.Steps) == r.checkpointed || r.ctx.Err() != nil {
		// After a timeout or a cancellation the last step is the one they
		// cut short: resuming runs it again, from the checkpoint before.
		return
	}
	r.checkpointed = len(r.res.Trace.Steps)
	r.syncPending()
	r.e.OnCheckpoint(r.id, r.checkpoint())
}

// checkContext ends the run on timeout or cancellation.
func (r *run) checkContext() bool {
	err := r.ctx.Err()
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(r.ctx), context.DeadlineExceeded) {
		r.end(ReasonTimeout, r.summary(), "timeout reached")
	} else {
		r.end(ReasonCancelled, r.summary(), cancelMessage(r.ctx))
	}
	return true
}

func (r *run) end(reason Reason, answer, msg string) {
	if r.res.TerminationReason != "" {
		return
	}
	var shaped json.RawMessage
	if r.answerV != nil && reason != ReasonInvalidAnswer {
		// Under an answer schema only a value that validates is the
		// answer; a success without one is not a success.
		var err error
		if shaped, err = r.shapeAnswer(answer); err != nil && reason == ReasonSuccess {
			r.res.AnswerError = r.e.Redact(err.Error())
			reason, msg = ReasonInvalidAnswer, "the final answer does not validate against the answer schema: "+err.Error()
		}
		if shaped != nil {
			// What is printed is the redacted value: it is what must
			// validate. A secret inside it ({"code":"[REDACTED]"} under
			// a pattern) can break it, and then there is no answer.
			shaped, err = r.redactedAnswer(shaped)
			if err != nil {
				r.res.AnswerError = r.e.Redact(err.Error())
				if reason == ReasonSuccess {
					reason, msg = ReasonInvalidAnswer, "the final answer does not validate against the answer schema "+err.Error()
				}
			}
		}
	}
	r.res.TerminationReason = reason
	r.res.Success = reason == ReasonSuccess
	var coder ExitCoder
	if reason == ReasonCancelled && errors.As(context.Cause(r.ctx), &coder) {
		r.res.cancelExitCode = coder.ExitCode()
	}
	r.res.FinalAnswer = r.e.Redact(answer)
	r.res.Message = r.e.Redact(msg)
	if r.answerV != nil {
		r.res.Answer, r.res.FinalAnswer = json.RawMessage("null"), ""
		if shaped != nil {
			r.res.Answer = shaped
			r.res.FinalAnswer = string(r.res.Answer)
		}
	}
}

// cancelMessage says why a cancelled run stopped: the context's cause when
// the caller gave one (say, the signal), else that it was interrupted.
func cancelMessage(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return "interrupted: " + cause.Error()
	}
	return "interrupted before the run finished"
}

func (r *run) pending() *planner.Step {
	if r.plan == nil || r.st.PlanIndex >= len(r.plan.Steps) {
		return nil
	}
	return &r.plan.Steps[r.st.PlanIndex]
}

func (r *run) emitPlan(event string, extra map[string]any) {
	f := map[string]any{"plan": r.plan.Rows(), "source": r.plan.Source, "max_steps": r.st.MaxSteps}
	for k, v := range extra {
		f[k] = v
	}
	r.emit(event, f)
}

func (r *run) addUsage(u llm.Usage) { r.res.TokenUsage = r.res.TokenUsage.Add(u) }

// iteration decides and runs one action.
func (r *run) iteration() {
	p := r.pending()
	if p == nil && r.plan != nil && !r.forceModel {
		r.forceModel = true
		r.askReason = "The plan is used up but there is no final answer yet."
	}
	if p != nil && !r.forceModel {
		if !r.allowed[p.Tool] {
			r.skip(p, SkipToolNotPermitted, Action{Thought: p.Thought, Tool: p.Tool, Args: argsJSON(p.Args)}, "plan",
				fmt.Sprintf("tool %q is not permitted in this run (allowed: %s)", p.Tool, strings.Join(r.allowedList(), ", ")))
			r.forceModel = true
			r.askReason = fmt.Sprintf("Plan step %d cannot run: tool %s is not permitted.", r.st.PlanIndex+1, p.Tool)
			return
		}
		act, usage, skipReason, err := r.planAction(p)
		var ae *answerError
		if errors.As(err, &ae) {
			r.skip(p, SkipInvalidAction, Action{Thought: p.Thought, Tool: p.Tool, Args: argsJSON(p.Args)}, "plan", ae.Error())
			r.endInvalidAnswer(fmt.Sprintf("plan step %d: the final answer does not validate against the answer schema", r.st.PlanIndex+1), ae.err)
			return
		}
		if err != nil {
			if errors.Is(err, llm.ErrNoModel) {
				r.fallback(ReasonError, err.Error())
				return
			}
			if errors.Is(err, llm.ErrContextFull) {
				r.fallback(ReasonTokenBudget, err.Error())
				return
			}
			if r.ctx.Err() != nil {
				return
			}
			r.skip(p, skipReason, Action{Thought: p.Thought, Tool: p.Tool, Args: argsJSON(p.Args)}, "plan", err.Error())
			r.forceModel = true
			r.askReason = fmt.Sprintf("Plan step %d could not be prepared: %v", r.st.PlanIndex+1, err)
			return
		}
		if r.overBudget() && usage.Total() > 0 {
			r.notRun(act, "plan", usage)
			return
		}
		r.perform(act, "plan", usage)
		return
	}
	act, usage, err := r.askModel()
	if err != nil {
		if errors.Is(err, llm.ErrNoModel) {
			switch {
			case r.st.ConsecutiveFailures > 0 && len(r.records) > 0:
				last := r.records[len(r.records)-1]
				r.end(ReasonFailure, r.summary(), fmt.Sprintf("step %d (%s) failed and no model is configured to recover%s", last.Step, last.Tool, noModelWhy(err)))
			case p != nil:
				why := r.st.PlanSkipReason
				if n := len(r.res.Trace.Steps); n > 0 && r.res.Trace.Steps[n-1].SkipReason != "" {
					// Say why it could not run (a $jq error, a denial), not only the class.
					why += ": " + firstLine(r.res.Trace.Steps[n-1].Observation)
				}
				r.end(ReasonFailure, r.summary(), fmt.Sprintf("plan step %d (%s) cannot run (%s) and no model is configured%s", r.st.PlanIndex+1, p.Tool, why, noModelWhy(err)))
			default:
				r.fallback(ReasonMaxIterations, "the plan ended without final_answer and no model is configured")
			}
			return
		}
		if r.checkContext() {
			return
		}
		var inv *invalidAction
		if errors.As(err, &inv) {
			r.invalid(inv, usage)
			return
		}
		switch {
		case errors.Is(err, errBudget):
			r.fallback(ReasonTokenBudget, fmt.Sprintf("token budget of %d reached", r.e.TokenBudget))
		case errors.Is(err, llm.ErrContextFull):
			r.fallback(ReasonTokenBudget, err.Error())
		default:
			r.end(ReasonError, r.summary(), fmt.Sprintf("model call failed: %v", err))
		}
		return
	}
	if r.overBudget() {
		r.notRun(act, "model", usage)
		return
	}
	if act.Tool == schema.Replan {
		r.st.Attempts++
		reason := ""
		var ra struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(act.Args, &ra)
		reason = ra.Reason
		r.st.RetryCount++
		if p != nil {
			r.st.PlanSkipReason = SkipReplanRequested
		}
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: "replan requested: " + reason, ExitCode: ExitCodeNotRun, SkipReason: SkipReplanRequested, Source: "model", TokenUsage: usage})
		r.addTranscript(planner.TranscriptEntry{Step: r.st.PlanIndex + 1, Tool: act.Tool, Args: act.Args, Skip: SkipReplanRequested, Error: "replan requested: " + reason})
		r.replanDue, r.replanWhy = true, "requested"
		return
	}
	if p != nil && act.Tool != p.Tool && act.Tool != tools.FinalAnswer {
		// Divergence: the model prefers another tool than the pending step.
		// Record it once on the step and schedule one replan per plan version.
		r.st.PlanSkipReason = SkipPlanToolMismatch
		r.emit(EventSkip, map[string]any{"plan_step": r.st.PlanIndex + 1, "tool": p.Tool, "skip_reason": SkipPlanToolMismatch, "model_tool": act.Tool})
		if !r.divergenceSpent {
			r.divergenceSpent = true
			r.replanDue, r.replanWhy = true, "divergence"
		}
	}
	r.perform(act, "model", usage)
}

// overBudget reports whether the run has spent its --token-budget.
func (r *run) overBudget() bool {
	return r.e.TokenBudget > 0 && r.res.TokenUsage.Total() >= r.e.TokenBudget
}

// notRun ends the run at the token budget without running act, which the
// call that crossed the budget chose: the step is recorded, not run.
func (r *run) notRun(act Action, source string, usage llm.Usage) {
	r.st.Attempts++
	why := fmt.Sprintf("not run: the call that chose it reached the token budget of %d", r.e.TokenBudget)
	st := StepTrace{Thought: act.Thought, Action: act.call(), Observation: why, Error: why, ExitCode: ExitCodeNotRun, Source: source, TokenUsage: usage}
	if p := r.pending(); p != nil && act.Tool == p.Tool {
		st.PlanStep = r.st.PlanIndex + 1
	}
	r.record(st)
	r.fallback(ReasonTokenBudget, fmt.Sprintf("token budget of %d reached", r.e.TokenBudget))
}

func (r *run) syncPending() {
	if r.pending() != nil {
		r.st.PendingPlanStep = r.st.PlanIndex + 1
	} else {
		r.st.PendingPlanStep = 0
	}
}

// complete sends a request to the model. Its messages are redacted
// already (the prompt is an exit): the conversation's when they were added
// (addHist), a call's own by prepare; the runtime's backend redacts them
// again (llm.Redacting), finding nothing more. Redaction is per message and
// deterministic, so the append-only layout and the KV prefix reuse built on
// it are kept.
func (r *run) complete(req llm.Request) (llm.Response, error) {
	resp, err := r.e.Backend.Complete(r.ctx, req)
	// A model may write bytes that are not UTF-8 (a malformed sequence a
	// grammar's character class let through, a token cut inside a
	// character): what tact checks, keeps and prints is text, so they are
	// replaced, as encoding/json reads them anyway.
	resp.Text = strings.ToValidUTF8(resp.Text, "\uFFFD")
	return resp, err
}

// noModelWhy is "; " and what a model-less backend said of why there is no
// model (llm.None's Why, after ErrNoModel in its error), or "".
func noModelWhy(err error) string {
	if _, why, ok := strings.Cut(err.Error(), llm.ErrNoModel.Error()+": "); ok && why != "" {
		return "; " + why
	}
	return ""
}
