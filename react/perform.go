package react

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tactcli/tact/internal/text"
	"strings"
	"time"

	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/tools"
)

// step is one action on its way through perform's stages. Each stage
// reads what the stages before it filled in and adds its own part, so a
// stage's input and output are the fields under its name.
type step struct {
	// decide: the action, where it came from, and what it stands for.
	act         Action
	source      string    // "plan" or "model"
	usage       llm.Usage // the tokens spent choosing it
	pending     *planner.Step
	matchesPlan bool   // it carries out the pending plan step
	planStep    int    // that step's number (1-based), 0 when none
	key         string // tool and canonical arguments: duplicates, stalls
	tool        tools.Tool

	// guard: what the hooks, the policy and the approver said.
	decision string
	hookRuns []hooks.Run
	// held: the call does not run; result stands in for its run (a
	// block, a denial, a dry run's note).
	held bool
	// needsInput: nobody decided the approval; the run pauses for it.
	needsInput       bool
	approvalQuestion string

	// execute: the tool's result (or guard's stand-in) and whether it ran.
	result tools.Result
	ran    bool

	// observe: what the model, the trace and the transcript see, cut
	// (never inside a secret) and redacted; rawErr is kept raw for the
	// plan's own later steps.
	failed               bool
	obs, errText, stderr string
	rawErr               string
}

// perform walks one action (from the plan or the model) through its
// stages, each once: decide, then the final answer's own path or guard,
// execute, observe and account. A stage that ends the walk early (an
// action not run, an interrupted tool) has recorded the step itself.
func (r *run) perform(act Action, source string, usage llm.Usage) {
	s := r.decide(act, source, usage)
	if s == nil {
		return
	}
	if s.act.Tool == tools.FinalAnswer {
		r.finalAnswer(s)
		return
	}
	r.guard(s)
	switch {
	case s.needsInput:
		r.pause(s, Question{Kind: KindApproval, Question: s.approvalQuestion})
		return
	case s.act.Tool == tools.AskUser && !s.held && !r.ask(s):
		return
	}
	if !r.execute(s) {
		return
	}
	r.observe(s)
	r.account(s)
}

// decide validates the action: a repeat of one that succeeded, the action
// that makes the run stall, and a tool this run does not offer are
// recorded and not run (nil). The attempt counts against the step budget
// either way.
func (r *run) decide(act Action, source string, usage llm.Usage) *step {
	s := &step{act: act, source: source, usage: usage, pending: r.pending()}
	s.matchesPlan = s.pending != nil && act.Tool == s.pending.Tool
	if s.matchesPlan {
		s.planStep = r.st.PlanIndex + 1
	}
	s.key = act.Tool + " " + canonical(act.Args)
	r.st.Attempts++

	if act.Tool != tools.FinalAnswer && s.key == r.lastOK {
		r.st.RetryCount++
		obs := fmt.Sprintf("Duplicate action skipped: %s with these arguments already succeeded at step %d; use that observation instead of repeating it.", act.Tool, r.lastOKStep)
		if s.matchesPlan {
			r.st.PlanSkipReason = SkipDuplicateAction
			r.emit(EventSkip, map[string]any{"plan_step": s.planStep, "tool": act.Tool, "skip_reason": SkipDuplicateAction})
		}
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: obs, ExitCode: ExitCodeNotRun, SkipReason: SkipDuplicateAction, Source: source, PlanStep: s.planStep, TokenUsage: usage})
		r.appendExchange(act, source, prompt.Observation{Step: r.st.Step + 1, Tool: act.Tool, Text: obs, IsError: true})
		r.forceModel = true
		r.noteRepeat(s.key)
		return nil
	}
	if r.noteRepeat(s.key) {
		// The action that made the run stall is not run, but it is recorded.
		why := fmt.Sprintf("not run: %d identical actions in a row (stalled)", r.sameInRow)
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: why, Error: why, ExitCode: ExitCodeNotRun, Source: source, PlanStep: s.planStep, TokenUsage: usage})
		return nil
	}

	tool, ok := r.e.Registry.Get(act.Tool)
	if !ok || !r.allowed[act.Tool] {
		// Only reachable with a backend that ignores the schema.
		r.st.RetryCount++
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: "tool not permitted", Error: "tool not permitted", ExitCode: ExitCodeNotRun, SkipReason: SkipToolNotPermitted, Source: source, TokenUsage: usage})
		r.forceModel = true
		return nil
	}
	s.tool = tool
	return s
}

// finalAnswer is the final answer's path: the answer schema, the Stop
// hooks (which may send the model back to work), the failure phrases, and
// the end of the run.
func (r *run) finalAnswer(s *step) {
	act := s.act
	var fa struct {
		Answer string `json:"answer"`
	}
	_ = json.Unmarshal(act.Args, &fa)
	if r.answerV != nil {
		// The answer is a JSON value; its compact text stands for it.
		answer, err := r.checkAnswer(answerArg(act.Args))
		if err != nil {
			r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: "invalid answer: " + err.Error(), Error: err.Error(), ExitCode: ExitCodeNotRun, SkipReason: SkipInvalidAction, Source: s.source, PlanStep: s.planStep, TokenUsage: s.usage})
			r.endInvalidAnswer("the final answer does not validate against the answer schema", err)
			return
		}
		fa.Answer = string(answer)
	}
	stop := r.callHooks(hooks.Stop, hooks.Input{Answer: fa.Answer, StopHookActive: r.stopSentBack > 0})
	if stop.Decision == hooks.DecisionBlock {
		r.sendBack(s, stop)
		return
	}
	r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: fa.Answer, Source: s.source, PlanStep: s.planStep, TokenUsage: s.usage, Hooks: stop.Runs})
	r.st.Step++
	if s.matchesPlan {
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
}

// sendBack records a final answer a Stop hook did not accept and sends the
// model back to work with the hook's reason. The step budget bounds how
// often: each answer is an attempt.
func (r *run) sendBack(s *step, stop hooks.Outcome) {
	act := s.act
	r.stopSentBack++
	r.stopReason = stop.Reason
	why := "sent back by a Stop hook: " + stop.Reason
	obs := "The final answer was not accepted: " + stop.Reason + "\nKeep working on the task, then give a new final answer."
	r.st.RetryCount++
	r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: obs, Error: why, ExitCode: ExitCodeNotRun, SkipReason: SkipStopHook,
		Source: s.source, PlanStep: s.planStep, Decision: DecisionHookBlocked, TokenUsage: s.usage, Hooks: stop.Runs})
	r.appendExchange(act, s.source, prompt.Observation{Step: r.st.Step + 1, Tool: act.Tool, Text: obs, IsError: true})
	r.forceModel = true
	r.askReason = "A Stop hook did not accept the final answer."
}

// guard announces the action and asks, in order, the PreToolUse hooks (a
// block wins over every rule, an approval stands where a person would be
// asked), then, for a tool that writes or runs, the policy and the
// approver through the gate. A call it holds back gets its stand-in
// result (s.held).
func (r *run) guard(s *step) {
	act := s.act
	// The action as it starts, before any approval: a terminal shows it
	// above the approval prompt and the tool's output.
	r.emit(EventAction, map[string]any{"iteration": len(r.res.Trace.Steps) + 1, "tool": act.Tool, "args": act.Args, "source": s.source, "thought": act.Thought})
	// A read tool runs in a dry run too, so its guards do.
	pre := r.callHooks(hooks.PreToolUse, hooks.Input{ToolName: act.Tool, ToolInput: act.Args, Live: s.tool.Class() == tools.ClassRead})
	s.hookRuns = pre.Runs
	switch {
	case pre.Decision == hooks.DecisionBlock:
		s.decision = DecisionHookBlocked
		s.hold(tools.Result{Err: errors.New("blocked by hook: " + pre.Reason)})
		r.emit(EventDenied, map[string]any{"tool": act.Tool, "args": act.Args, "decision": s.decision, "reason": pre.Reason})
	case s.tool.Class() != tools.ClassRead:
		// Approval: write/exec tools go through the gate.
		call := tools.Call{Tool: s.tool, Args: act.Args}
		if pre.Decision == hooks.DecisionApprove {
			call.HookApproved = pre.Reason
			if call.HookApproved == "" {
				call.HookApproved = "a PreToolUse hook approved it"
			}
		}
		v := r.e.Gate.Check(r.ctx, r.e.Env, []tools.Call{call})[0]
		s.decision = v.Decision
		switch {
		case r.e.DryRun:
			why := v.Reason
			if why == "" {
				why = "decision: " + v.Decision
			}
			s.hold(tools.Result{Output: fmt.Sprintf("[%s] %s", act.Tool, why)})
			s.decision = "dry_run:" + v.Decision
		case !v.Allowed && v.Decision == tools.DecisionNeedsInput:
			s.needsInput = true
			s.approvalQuestion = v.Reason
		case !v.Allowed:
			reason := v.Reason
			if !strings.HasPrefix(reason, "denied by") {
				reason = "denied by policy: " + reason
			}
			s.hold(tools.Result{Err: errors.New(reason), ExitCode: 0})
			r.emit(EventDenied, map[string]any{"tool": act.Tool, "args": act.Args, "decision": v.Decision, "reason": v.Reason})
		}
	}
}

// hold keeps the call from running; res stands in for its result.
func (s *step) hold(res tools.Result) { s.result, s.held = res, true }

// execute runs the tool unless guard held it. false when the run's context
// ended meanwhile: the step is recorded as interrupted (a tool cut short by
// cancellation is not a tool failure) and the run ends.
func (r *run) execute(s *step) bool {
	if !s.held {
		r.progress("step %d: %s", r.st.Step+1, s.act.Tool)
		s.result = s.tool.Run(r.ctx, r.e.Env, s.act.Args)
		s.ran = true
	}
	if r.ctx.Err() != nil {
		r.record(StepTrace{Thought: s.act.Thought, Action: s.act.call(), Observation: "interrupted", Error: r.ctx.Err().Error(), ExitCode: s.result.ExitCode, Source: s.source, PlanStep: s.planStep, Decision: s.decision, TokenUsage: s.usage, Hooks: s.hookRuns})
		r.checkContext()
		return false
	}
	return true
}

// observe turns the result into what the model, the trace and the
// transcript see: cut to the window (stderr gets a quarter beside stdout),
// redacted, then shown to the PostToolUse hooks, which may block it after
// the fact or add context; the observation joins the conversation.
func (r *run) observe(s *step) {
	res := &s.result
	s.failed = res.Failed()
	if res.Err != nil && res.ExitCode == 0 {
		// A tool that failed without a process exit status (denied, path
		// escape, missing file) reports 1, so scripts can test exit_code.
		res.ExitCode = 1
	}
	if res.Err != nil {
		s.rawErr = res.Err.Error()
	}
	obsLimit := r.win.observationLimit(r.e.MaxObservationTokens)
	stdoutLimit, stderrLimit := obsLimit, obsLimit
	if res.Stderr != "" && res.Output != "" {
		stderrLimit = max(obsLimit/4, minObservation)
		stdoutLimit = max(obsLimit-stderrLimit, minObservation)
	}
	s.obs = r.e.Redact(r.cutToTokens(res.Output, stdoutLimit, hintFor(s.tool, s.act.Args)))
	s.errText = r.e.Redact(r.cutToTokens(s.rawErr, stderrLimit, nil))
	if s.errText != "" {
		if s.obs == "" {
			s.obs = s.errText
		} else {
			s.obs = s.obs + "\nerror: " + s.errText
		}
	}
	s.stderr = r.e.Redact(r.cutToTokens(res.Stderr, stderrLimit, nil))
	if s.ran && r.hasHook(hooks.PostToolUse) {
		post := r.callHooks(hooks.PostToolUse, hooks.Input{ToolName: s.act.Tool, ToolInput: s.act.Args, ToolResponse: &hooks.ToolResponse{
			Output: s.obs, Stderr: s.stderr, Error: s.errText, ExitCode: res.ExitCode, Success: !s.failed}})
		s.hookRuns = append(s.hookRuns, post.Runs...)
		if post.Decision == hooks.DecisionBlock {
			// The tool ran, but the model is told it failed, and why.
			s.failed = true
			s.decision = DecisionHookBlocked
			note := "blocked by hook: " + post.Reason
			s.errText = joinLines(s.errText, note)
			s.obs = joinLines(s.obs, "error: "+note)
			s.rawErr = joinLines(s.rawErr, note)
			res.Err = errors.New(s.rawErr)
		}
		if post.Context != "" {
			s.obs = joinLines(s.obs, "Context from the user's hooks:\n"+post.Context)
		}
	}
	r.appendExchange(s.act, s.source, prompt.Observation{Step: r.st.Step + 1, Tool: s.act.Tool, Text: s.obs, IsError: s.failed, ExitCode: res.ExitCode, Stderr: s.stderr})
}

// account books the step: the raw record the plan's $jq and --stop-when
// read, the replanner's transcript, the counters that the budgets, the
// duplicate and stall checks and the plan's progress read, then the trace;
// a success or failure phrase, or --stop-when, may end the run.
func (r *run) account(s *step) {
	act, res := s.act, s.result
	rec := stepRecord{Step: len(r.records) + 1, Tool: act.Tool, Args: act.Args, Output: res.Output, ExitCode: res.ExitCode}
	if res.Err != nil {
		rec.Error = &s.rawErr
	}
	r.records = append(r.records, rec)
	r.addTranscript(planner.TranscriptEntry{Step: rec.Step, Tool: act.Tool, Args: act.Args, Stdout: s.obs, Stderr: s.stderr, ExitCode: res.ExitCode, Error: s.errText})

	if s.failed {
		r.st.RetryCount++
		r.st.ConsecutiveFailures++
		r.readsInRow = 0
		r.forceModel = true
		r.askReason = fmt.Sprintf("The last action (%s) failed.", act.Tool)
	} else {
		r.st.ConsecutiveFailures = 0
		r.st.Step++
		r.lastOK, r.lastOKStep = s.key, r.st.Step
		if s.tool.Class() == tools.ClassRead {
			r.readsInRow++
		} else {
			r.readsInRow = 0
		}
		if s.matchesPlan {
			r.st.PlanIndex++
			r.st.PlanSkipReason = ""
			r.forceModel = false
			r.divergenceSpent = false
		} else if s.pending != nil {
			r.forceModel = true
		}
	}
	// Recorded after the bookkeeping, so the trace's state is the state after this step.
	r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: s.obs, Error: s.errText, ExitCode: res.ExitCode, Source: s.source, PlanStep: s.planStep, Decision: s.decision, TokenUsage: s.usage, Hooks: s.hookRuns})
	r.checkPhrasesAndStop(rec, s.obs)
}

// The bookkeeping the stages share (and the loop, for steps it records
// itself): the trace, stall detection, the transcript, the conversation.

// record appends a step to the trace, redacted, and emits it with the
// run state after it.
func (r *run) record(st StepTrace) {
	r.syncPending()
	st.Iteration = len(r.res.Trace.Steps) + 1
	st.Timestamp = time.Now().UTC()
	st.Observation = r.e.Redact(st.Observation)
	st.Thought = r.e.Redact(st.Thought)
	st.Error = r.e.Redact(st.Error)
	if st.Action.Args == nil {
		st.Action.Args = json.RawMessage(`{}`)
	}
	st.Action.Args = r.redactJSON(st.Action.Args)
	if st.Source == "model" && st.ContextTokens == 0 {
		st.ContextTokens = r.lastPromptTokens
	}
	r.lastPromptTokens = 0
	r.res.Trace.Steps = append(r.res.Trace.Steps, st)
	r.traceTurn = append(r.traceTurn, r.turn)
	r.emit(EventStep, map[string]any{"step": st, "state": *r.st})
}

// noteRepeat tracks identical actions in a row; true when the run stalled.
func (r *run) noteRepeat(key string) bool {
	if key == r.lastKey {
		r.sameInRow++
	} else {
		r.lastKey, r.sameInRow = key, 1
	}
	if r.sameInRow >= r.e.StallThreshold {
		r.fallback(ReasonStalled, fmt.Sprintf("%d identical actions in a row", r.sameInRow))
		return true
	}
	return false
}

// addTranscript keeps a redacted copy of an entry: the transcript goes only
// to the replanner's prompt and the trace.
func (r *run) addTranscript(te planner.TranscriptEntry) {
	te.Args = r.redactJSON(te.Args)
	te.Stdout, te.Stderr, te.Error = r.e.Redact(te.Stdout), r.e.Redact(te.Stderr), r.e.Redact(te.Error)
	r.transcript = append(r.transcript, te)
}

// appendExchange keeps the model's view append-only: a planned action is
// written as if the model had chosen it, then its observation follows.
func (r *run) appendExchange(act Action, source string, obs prompt.Observation) {
	if source == "plan" {
		b, _ := text.JSON(act)
		r.addMsg(llm.RoleAssistant, string(b))
	}
	r.addMsg(llm.RoleUser, prompt.Render("observation", obs))
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
