package react

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/tools"
)

// perform runs an action (from the plan or the model).
func (r *run) perform(act Action, source string, usage llm.Usage) {
	e := r.e
	p := r.pending()
	matchesPlan := p != nil && act.Tool == p.Tool
	planStep := 0
	if matchesPlan {
		planStep = r.st.PlanIndex + 1
	}
	key := act.Tool + " " + canonical(act.Args)
	r.st.Attempts++

	if act.Tool != tools.FinalAnswer && key == r.lastOK {
		r.st.RetryCount++
		obs := fmt.Sprintf("Duplicate action skipped: %s with these arguments already succeeded at step %d; use that observation instead of repeating it.", act.Tool, r.lastOKStep)
		if matchesPlan {
			r.st.PlanSkipReason = SkipDuplicateAction
			r.emit(EventSkip, map[string]any{"plan_step": planStep, "tool": act.Tool, "skip_reason": SkipDuplicateAction})
		}
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: obs, ExitCode: ExitCodeNotRun, SkipReason: SkipDuplicateAction, Source: source, PlanStep: planStep, TokenUsage: usage})
		r.appendExchange(act, source, prompt.Observation{Step: r.st.Step + 1, Tool: act.Tool, Text: obs, IsError: true})
		r.forceModel = true
		r.noteRepeat(key)
		return
	}
	if r.noteRepeat(key) {
		// The action that made the run stall is not run, but it is recorded.
		why := fmt.Sprintf("not run: %d identical actions in a row (stalled)", r.sameInRow)
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: why, Error: why, ExitCode: ExitCodeNotRun, Source: source, PlanStep: planStep, TokenUsage: usage})
		return
	}

	tool, ok := e.Registry.Get(act.Tool)
	if !ok || !r.allowed[act.Tool] {
		// Only reachable with a backend that ignores the schema.
		r.st.RetryCount++
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: "tool not permitted", Error: "tool not permitted", ExitCode: ExitCodeNotRun, SkipReason: SkipToolNotPermitted, Source: source, TokenUsage: usage})
		r.forceModel = true
		return
	}

	if act.Tool == tools.FinalAnswer {
		var fa struct {
			Answer string `json:"answer"`
		}
		_ = json.Unmarshal(act.Args, &fa)
		if r.answerV != nil {
			// The answer is a JSON value; its compact text stands for it.
			answer, err := r.checkAnswer(answerArg(act.Args))
			if err != nil {
				r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: "invalid answer: " + err.Error(), Error: err.Error(), ExitCode: ExitCodeNotRun, SkipReason: SkipInvalidAction, Source: source, PlanStep: planStep, TokenUsage: usage})
				r.endInvalidAnswer("the final answer does not validate against the answer schema", err)
				return
			}
			fa.Answer = string(answer)
		}
		stop := r.callHooks(hooks.Stop, hooks.Input{Answer: fa.Answer, StopHookActive: r.stopSentBack > 0})
		if stop.Decision == hooks.DecisionBlock {
			r.sendBack(act, source, planStep, usage, stop)
			return
		}
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: fa.Answer, Source: source, PlanStep: planStep, TokenUsage: usage, Hooks: stop.Runs})
		r.st.Step++
		if matchesPlan {
			r.st.PlanIndex++
		}
		said := fa.Answer
		if r.answerV != nil {
			// A string answer is checked as the words it holds, not as
			// its quoted JSON ("I cannot ..." starts with a quote).
			var str string
			if json.Unmarshal([]byte(fa.Answer), &str) == nil {
				said = str
			}
		}
		if phrase := r.failurePhrase(said); phrase != "" {
			r.end(ReasonFailure, fa.Answer, fmt.Sprintf("failure detected in the final answer (%q)", phrase))
			return
		}
		r.end(ReasonSuccess, fa.Answer, "")
		return
	}

	// The action as it starts, before any approval: a terminal shows it
	// above the approval prompt and the tool's output.
	r.emit(EventAction, map[string]any{"iteration": len(r.res.Trace.Steps) + 1, "tool": act.Tool, "args": act.Args, "source": source, "thought": act.Thought})
	// PreToolUse hooks come first: a block wins over every rule, an
	// approval stands where a person would be asked.
	// A read tool runs in a dry run too, so its guards do.
	pre := r.callHooks(hooks.PreToolUse, hooks.Input{ToolName: act.Tool, ToolInput: act.Args, Live: tool.Class() == tools.ClassRead})
	hookRuns := pre.Runs
	// Approval: write/exec tools go through the gate.
	decision := ""
	var result tools.Result
	switch {
	case pre.Decision == hooks.DecisionBlock:
		decision = DecisionHookBlocked
		result = tools.Result{Err: errors.New("blocked by hook: " + pre.Reason)}
		r.emit(EventDenied, map[string]any{"tool": act.Tool, "args": act.Args, "decision": decision, "reason": pre.Reason})
	case tool.Class() != tools.ClassRead:
		call := tools.Call{Tool: tool, Args: act.Args}
		if pre.Decision == hooks.DecisionApprove {
			call.HookApproved = pre.Reason
			if call.HookApproved == "" {
				call.HookApproved = "a PreToolUse hook approved it"
			}
		}
		v := e.Gate.Check(r.ctx, e.Env, []tools.Call{call})[0]
		decision = v.Decision
		switch {
		case e.DryRun:
			why := v.Reason
			if why == "" {
				why = "decision: " + v.Decision
			}
			result = tools.Result{Output: fmt.Sprintf("[%s] %s", act.Tool, why)}
			decision = "dry_run:" + v.Decision
		case !v.Allowed:
			reason := v.Reason
			if !strings.HasPrefix(reason, "denied by") {
				reason = "denied by policy: " + reason
			}
			result = tools.Result{Err: errors.New(reason), ExitCode: 0}
			r.emit(EventDenied, map[string]any{"tool": act.Tool, "args": act.Args, "decision": v.Decision, "reason": v.Reason})
		}
	}
	ran := false
	if result.Output == "" && result.Err == nil {
		r.progress("step %d: %s", r.st.Step+1, act.Tool)
		result = tool.Run(r.ctx, e.Env, act.Args)
		ran = true
	}
	if r.ctx.Err() != nil {
		// A tool interrupted by cancellation is not a tool failure.
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: "interrupted", Error: r.ctx.Err().Error(), ExitCode: result.ExitCode, Source: source, PlanStep: planStep, Decision: decision, TokenUsage: usage, Hooks: hookRuns})
		r.checkContext()
		return
	}
	failed := result.Failed()
	if result.Err != nil && result.ExitCode == 0 {
		// A tool that failed without a process exit status (denied, path
		// escape, missing file) reports 1, so scripts can test exit_code.
		result.ExitCode = 1
	}
	// The run state keeps raw values for the plan's own later steps; what
	// the model, the trace and the result see is cut (never inside a
	// secret) and redacted.
	rawErr := ""
	if result.Err != nil {
		rawErr = result.Err.Error()
	}
	obsLimit := r.win.observationLimit(e.MaxObservationTokens)
	stdoutLimit, stderrLimit := obsLimit, obsLimit
	if result.Stderr != "" && result.Output != "" {
		stderrLimit = max(obsLimit/4, minObservation)
		stdoutLimit = max(obsLimit-stderrLimit, minObservation)
	}
	obsText := r.e.Redact(r.cutToTokens(result.Output, stdoutLimit, hintFor(tool, act.Args)))
	errText := r.e.Redact(r.cutToTokens(rawErr, stderrLimit, nil))
	if errText != "" {
		if obsText == "" {
			obsText = errText
		} else {
			obsText = obsText + "\nerror: " + errText
		}
	}
	stderr := r.e.Redact(r.cutToTokens(result.Stderr, stderrLimit, nil))
	if ran && r.hasHook(hooks.PostToolUse) {
		post := r.callHooks(hooks.PostToolUse, hooks.Input{ToolName: act.Tool, ToolInput: act.Args, ToolResponse: &hooks.ToolResponse{
			Output: obsText, Stderr: stderr, Error: errText, ExitCode: result.ExitCode, Success: !failed}})
		hookRuns = append(hookRuns, post.Runs...)
		if post.Decision == hooks.DecisionBlock {
			// The tool ran, but the model is told it failed, and why.
			failed = true
			decision = DecisionHookBlocked
			note := "blocked by hook: " + post.Reason
			errText = joinLines(errText, note)
			obsText = joinLines(obsText, "error: "+note)
			rawErr = joinLines(rawErr, note)
			result.Err = errors.New(rawErr)
		}
		if post.Context != "" {
			obsText = joinLines(obsText, "Context from the user's hooks:\n"+post.Context)
		}
	}
	st := StepTrace{Thought: act.Thought, Action: act.call(), Observation: obsText, Error: errText, ExitCode: result.ExitCode, Source: source, PlanStep: planStep, Decision: decision, TokenUsage: usage, Hooks: hookRuns}
	r.appendExchange(act, source, prompt.Observation{Step: r.st.Step + 1, Tool: act.Tool, Text: obsText, IsError: failed, ExitCode: result.ExitCode, Stderr: stderr})

	rec := stepRecord{Step: len(r.records) + 1, Tool: act.Tool, Args: act.Args, Output: result.Output, ExitCode: result.ExitCode}
	if result.Err != nil {
		rec.Error = &rawErr
	}
	r.records = append(r.records, rec)
	r.addTranscript(planner.TranscriptEntry{Step: rec.Step, Tool: act.Tool, Args: act.Args, Stdout: obsText, Stderr: stderr, ExitCode: result.ExitCode, Error: errText})

	if failed {
		r.st.RetryCount++
		r.st.ConsecutiveFailures++
		r.readsInRow = 0
		r.forceModel = true
		r.askReason = fmt.Sprintf("The last action (%s) failed.", act.Tool)
	} else {
		r.st.ConsecutiveFailures = 0
		r.st.Step++
		r.lastOK, r.lastOKStep = key, r.st.Step
		if tool.Class() == tools.ClassRead {
			r.readsInRow++
		} else {
			r.readsInRow = 0
		}
		if matchesPlan {
			r.st.PlanIndex++
			r.st.PlanSkipReason = ""
			r.forceModel = false
			r.divergenceSpent = false
		} else if p != nil {
			r.forceModel = true
		}
	}
	// Recorded after the bookkeeping, so the trace's state is the state after this step.
	r.record(st)
	if r.checkPhrasesAndStop(rec, obsText) {
		return
	}
}

func (a Action) call() ToolCall { return ToolCall{Tool: a.Tool, Args: a.Args} }

// canonical renders JSON with sorted keys and no insignificant space, so
// equal arguments compare equal however they were written.
func canonical(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// sendBack records a final answer a Stop hook did not accept and sends the
// model back to work with the hook's reason. The step budget bounds how
// often: each answer is an attempt.
func (r *run) sendBack(act Action, source string, planStep int, usage llm.Usage, stop hooks.Outcome) {
	r.stopSentBack++
	r.stopReason = stop.Reason
	why := "sent back by a Stop hook: " + stop.Reason
	obs := "The final answer was not accepted: " + stop.Reason + "\nKeep working on the task, then give a new final answer."
	r.st.RetryCount++
	r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: obs, Error: why, ExitCode: ExitCodeNotRun, SkipReason: SkipStopHook,
		Source: source, PlanStep: planStep, Decision: DecisionHookBlocked, TokenUsage: usage, Hooks: stop.Runs})
	r.appendExchange(act, source, prompt.Observation{Step: r.st.Step + 1, Tool: act.Tool, Text: obs, IsError: true})
	r.forceModel = true
	r.askReason = "A Stop hook did not accept the final answer."
}

// joinLines puts b on a new line after a, without a blank line between
// (either alone when the other is empty).
func joinLines(a, b string) string {
	a = strings.TrimRight(a, "\n")
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
