package react

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tactcli/tact/exec"
	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/schema"

	"github.com/tactcli/tact/internal/text"
)

// Options are the PRD's tunables (see config.Settings for defaults).
type Options struct {
	NoPlan               bool     // free ReAct: every action from the model
	MaxIterations        int      // budget in free mode
	RetryBuffer          int      // max_steps = plan steps + RetryBuffer
	ReplanThreshold      int      // consecutive failed tool runs before a replan
	MaxReplans           int      // replans per run (0: 3)
	AllowTools           []string // empty: the tools the plan names
	ThoughtPrompt        string
	RequireThought       bool
	MinThoughtLength     int
	SuccessPhrases       []string
	FailurePhrases       []string
	StallThreshold       int
	MaxObservationTokens int
	TokenBudget          int
	StopWhen             string // jq; true for a finished step ends the run (custom)
	DryRun               bool
	ReadOnlyNudgeAfter   int // consecutive read-only steps before nudging (0: 5)
	// ContextSize is the context window in tokens every prompt must fit
	// with its reply; 0 asks the backend (llm.ContextSizer), and none
	// known means no limit (nothing is compacted).
	ContextSize int
	CompactAt   float64 // share of the window a prompt may fill before older steps are compacted (0: 0.8)
	KeepSteps   int     // steps kept whole by a compaction (0: 3)
}

// Replanner makes a new plan from the transcript so far.
type Replanner interface {
	Plan(ctx context.Context, query string, transcript []planner.TranscriptEntry, old *planner.Plan) (*planner.Plan, llm.Usage, error)
}

// Executor runs plans. Zero-value fields get safe defaults in Run. An
// Executor is configuration only: Run never changes it, and any number of
// runs may use one at the same time, each with its own state (the Backend
// must then serve concurrent calls, and the Gate and Events be safe for
// concurrent use).
type Executor struct {
	Options
	Registry *exec.Registry
	Env      *exec.Env
	Backend  llm.Backend // llm.None{} when no model
	Planner  Replanner   // nil: no replanning
	Gate     exec.Gate   // nil: exec.AllowAll
	// Events receives every event of every run, each with its run id: the
	// JSONL trace, the progress line, a dry-run listing (nil: none).
	Events Sink
	// Redact hides secrets in everything that leaves the executor: the
	// prompts sent to the model and the planner, trace events and the
	// Result. Data passed between a plan's own steps ($jq arguments,
	// --stop-when, fill) stays raw. nil: Env.Redactor's. Cuts of outputs
	// use Env.Redactor to keep secrets whole.
	Redact    func(string) string
	Sampling  llm.Sampling
	MaxTokens int
	Log       *slog.Logger
	// SpentUsage is what the run already spent before Run (the planning
	// call); it counts toward the result's usage and the token budget.
	SpentUsage llm.Usage
	// Conversation is the earlier turns of a conversation (tact chat),
	// oldest first: the run shows them to the model between the system
	// prompt and its query, folding the oldest into a summary when they
	// would crowd the window, and reports the entries it used in
	// Result.Conversation (see conversation.go).
	Conversation []ConversationEntry
}

// defaultCannotPrefixes detect a model saying it cannot do the task (the
// system prompt asks it to start such answers with "I cannot"); they match
// whole words only, so "I cannotice" is no failure.
var defaultCannotPrefixes = []string{"i cannot", "i can't", "i can’t", "i can not", "i am unable", "i'm unable", "i’m unable", "unable to complete"}

// stepRecord is one executed tool run in the jq-visible run state. It holds
// raw values: a plan copying a file must copy the real content.
type stepRecord struct {
	Step     int             `json:"step"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Output   string          `json:"output"`
	Error    *string         `json:"error"`
	ExitCode int             `json:"exit_code"`
}

type run struct {
	e     *Executor // the run's own copy, defaults applied
	id    string
	ctx   context.Context
	query string
	plan  *planner.Plan
	res   *Result
	st    *State
	start time.Time

	allowed map[string]bool
	// hist is the model's view of the run: the pinned prefix, then each
	// turn's messages; compaction replaces older turns with a summary.
	hist         []histMsg
	turn         int   // the main loop's pass; tags messages and trace steps
	traceTurn    []int // turn of each res.Trace.Steps entry
	summarizedTo int   // last iteration a compaction summary covers
	win          window
	// lastPromptTokens is the counted prompt of the latest action call,
	// recorded on the step it chose.
	lastPromptTokens int
	records          []stepRecord
	convFold         *conversationFold // the earlier turns folded when the run started
	transcript       []planner.TranscriptEntry
	stopQuery        bool   // --stop-when is set and compiled
	forceModel       bool   // the plan cannot decide the next action
	askReason        string // told to the model with the next request
	replanDue        bool
	replanWhy        string // trigger of the scheduled replan: divergence or requested
	// divergenceSpent is set once a divergence scheduled its replan; only a
	// planned step that succeeds re-arms it, so a model that keeps diverging
	// does not make a replan per step.
	divergenceSpent bool
	lastOK          string // canonical key of the last successful call
	lastOKStep      int
	lastKey         string
	sameInRow       int
	readsInRow      int
	fatal           error // set when the run must end (reason in res)
}

// Run executes plan (nil in free mode) for query. It never returns an error:
// every outcome, including backend failures, is a termination reason.
func (e *Executor) Run(ctx context.Context, query string, plan *planner.Plan) *Result {
	return e.RunWithID(ctx, NewRunID(), query, plan)
}

// RunWithID is Run with the caller's run id: it tags every event and the
// result, so the events of runs sharing one sink stay separable.
func (e *Executor) RunWithID(ctx context.Context, id, query string, plan *planner.Plan) *Result {
	r := e.newRun(ctx, query, plan)
	r.id, r.res.RunID = id, id
	r.main()
	r.res.ExecutionTimeMS = time.Since(r.start).Milliseconds()
	r.res.Iterations = r.st.Attempts
	r.syncPending()
	if r.res.Trace.Steps == nil {
		r.res.Trace.Steps = []StepTrace{}
	}
	r.emit(EventTermination, map[string]any{
		"reason": r.res.TerminationReason, "success": r.res.Success, "final_answer": r.res.FinalAnswer,
		"message": r.res.Message, "exit_code": r.res.ExitCode(), "state": r.res.State,
		"token_usage": r.res.TokenUsage, "execution_time_ms": r.res.ExecutionTimeMS,
	})
	return r.res
}

// newRun sets a run up: defaults, allowed tools, budget, the pinned
// prefix of the conversation and the context window.
func (e *Executor) newRun(ctx context.Context, query string, plan *planner.Plan) *run {
	cfg := *e // defaults go into the run's copy: e stays as the caller made it
	r := &run{e: &cfg, ctx: ctx, query: query, plan: plan, res: &Result{TokenUsage: e.SpentUsage}, start: time.Now()}
	r.st = &r.res.State
	r.defaults()
	e = r.e
	if e.NoPlan {
		r.plan = nil
	}
	r.setAllowed()
	if r.plan != nil {
		r.st.MaxSteps = len(r.plan.Steps) + e.RetryBuffer
		r.st.PendingPlanStep = 1
	} else {
		r.st.MaxSteps = e.MaxIterations
	}
	r.addHist(llm.RoleSystem, r.systemPrompt(), histPinned)
	r.addHist(llm.RoleUser, prompt.Render("task", prompt.Task{Query: r.query, Outline: r.outline()}), histPinned)
	r.initWindow()
	if len(e.Conversation) > 0 {
		r.addConversation()
	}
	return r
}

// addConversation puts the earlier turns between the system prompt and the
// task, pinned: they may take half of what the window leaves the run (the
// oldest are folded when they would take more), the other half is the
// run's own steps.
func (r *run) addConversation() {
	room := 0
	if r.win.size > 0 {
		room = max(r.win.historyRoom()/2, 1)
	}
	conv, fold := fitConversation(r.e.Conversation, room, r.win.count)
	r.convFold = fold
	r.res.Conversation = conv
	sys, task := r.hist[0], r.hist[1]
	r.hist = append(r.hist[:0:0], sys)
	for _, m := range conversationMessages(conv) {
		r.hist = append(r.hist, histMsg{Message: m, kind: histPinned})
	}
	r.hist = append(r.hist, task)
	r.initWindow()
}

func (r *run) defaults() {
	e := r.e
	if e.Backend == nil {
		e.Backend = llm.None{}
	}
	if e.Gate == nil {
		e.Gate = exec.AllowAll{}
	}
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	if e.Redact == nil {
		if e.Env != nil && e.Env.Redactor != nil {
			e.Redact = e.Env.Redactor.Redact
		} else {
			e.Redact = func(s string) string { return s }
		}
	}
	if e.MaxIterations <= 0 {
		e.MaxIterations = 10
	}
	if e.StallThreshold <= 0 {
		e.StallThreshold = 3
	}
	if e.MaxObservationTokens <= 0 {
		e.MaxObservationTokens = 2000
	}
	if e.MaxReplans <= 0 {
		e.MaxReplans = 3
	}
	if e.ReplanThreshold <= 0 {
		e.ReplanThreshold = 2
	}
	if e.RetryBuffer < 0 {
		e.RetryBuffer = 0
	}
	if e.ReadOnlyNudgeAfter <= 0 {
		e.ReadOnlyNudgeAfter = 5
	}
	if e.CompactAt <= 0 || e.CompactAt > 1 {
		e.CompactAt = DefaultCompactAt
	}
	if e.KeepSteps <= 0 {
		e.KeepSteps = DefaultKeepSteps
	}
}

func (r *run) progress(format string, a ...any) {
	if r.e.Events != nil {
		r.e.Events.Handle(Event{RunID: r.id, Type: EventProgress, Time: time.Now(), Fields: map[string]any{"line": fmt.Sprintf(format, a...)}})
	}
}

func (r *run) main() {
	e := r.e
	if e.StopWhen != "" {
		if err := CompileJQ(e.StopWhen); err != nil {
			r.end(ReasonError, "", fmt.Sprintf("--stop-when: %v", err))
			return
		}
		r.stopQuery = true
	}
	r.emit(EventExecuteStart, map[string]any{"query": r.query, "no_plan": e.NoPlan, "allowed_tools": r.allowedList(), "dry_run": e.DryRun, "context": r.contextInfo()})
	if f := r.convFold; f != nil {
		r.emit(EventCompaction, map[string]any{"scope": "conversation", "tokens_before": f.before, "tokens_after": f.after,
			"entries_compacted": f.folded, "first_turn": f.first, "last_turn": f.last, "method": "extractive",
			"context_size": r.win.size, "token_usage": llm.Usage{}})
		r.progress("compacted earlier turns %d-%d (%d -> %d tokens)", f.first, f.last, f.before, f.after)
	}
	if r.plan != nil {
		r.emitPlan(EventPlan, map[string]any{"token_usage": e.SpentUsage})
	} else {
		r.forceModel = true
		r.askReason = "Choose the first action."
	}

	for r.res.TerminationReason == "" {
		r.turn++
		if r.checkContext() {
			return
		}
		if e.TokenBudget > 0 && r.res.TokenUsage.Total() >= e.TokenBudget {
			r.fallback(ReasonTokenBudget, fmt.Sprintf("token budget of %d reached", e.TokenBudget))
			return
		}
		if r.st.Attempts >= r.st.MaxSteps {
			r.fallback(ReasonMaxIterations, fmt.Sprintf("step budget of %d attempts used up without a final answer", r.st.MaxSteps))
			return
		}
		if r.plan != nil && e.Planner != nil && (r.replanDue || r.st.ConsecutiveFailures >= e.ReplanThreshold) && r.st.Replans < e.MaxReplans {
			r.replan()
			continue
		}
		r.iteration()
	}
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
	r.res.TerminationReason = reason
	r.res.Success = reason == ReasonSuccess
	var coder ExitCoder
	if reason == ReasonCancelled && errors.As(context.Cause(r.ctx), &coder) {
		r.res.cancelExitCode = coder.ExitCode()
	}
	r.res.FinalAnswer = r.e.Redact(answer)
	r.res.Message = r.e.Redact(msg)
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

func (r *run) setAllowed() {
	r.allowed = map[string]bool{exec.FinalAnswer: true}
	names := r.e.AllowTools
	if len(names) == 0 {
		if r.plan != nil {
			names = r.plan.Tools()
		} else {
			names = r.e.Registry.Names()
		}
	}
	for _, n := range names {
		if _, ok := r.e.Registry.Get(n); ok {
			r.allowed[n] = true
		}
	}
}

func (r *run) allowedList() []string {
	var out []string
	for _, n := range r.e.Registry.Names() {
		if r.allowed[n] {
			out = append(out, n)
		}
	}
	return out
}

func (r *run) allowedTools() []exec.Tool {
	var out []exec.Tool
	for _, n := range r.allowedList() {
		t, _ := r.e.Registry.Get(n)
		out = append(out, t)
	}
	return out
}

func (r *run) outline() []string {
	if r.plan == nil {
		return nil
	}
	return r.plan.Outline()
}

// SystemMessage is the system message a run without a plan starts with
// (instructions and the allowed tools, the same for every query), so a
// backend may ready it ahead of the calls (llm.Warmer). A run with a plan
// allows the plan's tools and differs.
func (e *Executor) SystemMessage() llm.Message {
	r := &run{e: e}
	r.setAllowed()
	return llm.Message{Role: llm.RoleSystem, Content: r.systemPrompt()}
}

func (r *run) systemPrompt() string {
	tp := r.e.ThoughtPrompt
	if tp == "" {
		tp = prompt.DefaultThoughtPrompt
	}
	return prompt.Render("system", prompt.System{
		Tools: planner.PromptTools(r.allowedTools()), ThoughtPrompt: tp,
		RequireThought: r.e.RequireThought, MinThought: r.e.MinThoughtLength,
		AllowReplan: r.plan != nil && r.e.Planner != nil,
	})
}

func (r *run) thoughtOptions() schema.ThoughtOptions {
	return schema.ThoughtOptions{Required: r.e.RequireThought, MinLength: r.e.MinThoughtLength}
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
				r.end(ReasonFailure, r.summary(), fmt.Sprintf("step %d (%s) failed and no model is configured to recover", last.Step, last.Tool))
			case p != nil:
				why := r.st.PlanSkipReason
				if n := len(r.res.Trace.Steps); n > 0 && r.res.Trace.Steps[n-1].SkipReason != "" {
					// Say why it could not run (a $jq error, a denial), not only the class.
					why += ": " + firstLine(r.res.Trace.Steps[n-1].Observation)
				}
				r.end(ReasonFailure, r.summary(), fmt.Sprintf("plan step %d (%s) cannot run (%s) and no model is configured", r.st.PlanIndex+1, p.Tool, why))
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
	if p != nil && act.Tool != p.Tool && act.Tool != exec.FinalAnswer {
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

// planAction turns a plan row into an action: $jq args are computed, ""
// args are filled with one model call.
func (r *run) planAction(p *planner.Step) (Action, llm.Usage, string, error) {
	var usage llm.Usage
	args := map[string]json.RawMessage{}
	var missing []string
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
			args[k] = v
		}
	}
	tool, _ := r.e.Registry.Get(p.Tool)
	if len(missing) > 0 {
		filled, u, err := r.fill(p, tool, args, missing)
		usage = u
		if err != nil {
			return Action{}, usage, SkipInvalidAction, err
		}
		args = filled
	}
	raw := argsJSON(args)
	v, err := schema.Compile(tool.Schema())
	if err == nil {
		_, err = v.ValidateJSON(raw)
	}
	if err != nil {
		return Action{}, usage, SkipInvalidAction, fmt.Errorf("arguments for %s: %v", p.Tool, err)
	}
	return Action{Thought: p.Thought, Tool: p.Tool, Args: raw}, usage, "", nil
}

func (r *run) fill(p *planner.Step, tool exec.Tool, known map[string]json.RawMessage, missing []string) (map[string]json.RawMessage, llm.Usage, error) {
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

type invalidAction struct {
	text   string
	reason string
}

func (e *invalidAction) Error() string { return "invalid action: " + e.reason }

// askModel asks for the next action; the request and the reply are appended
// to the conversation so the next call shares this prefix.
func (r *run) askModel() (Action, llm.Usage, error) {
	e := r.e
	next := prompt.Next{Reason: r.askReason, Remaining: r.st.MaxSteps - r.st.Attempts, Nudge: r.readsInRow >= e.ReadOnlyNudgeAfter}
	if next.Reason == "" {
		next.Reason = "Choose the next action."
	}
	if p := r.pending(); p != nil {
		next.PendingStep = r.st.PlanIndex + 1
		next.PendingTool = p.Tool
		next.PendingArgs = string(argsJSON(p.Args))
		if r.st.PlanSkipReason != "" {
			next.PendingWhy = "skipped: " + r.st.PlanSkipReason
		}
	}
	r.addMsg(llm.RoleUser, prompt.Render("next", next))
	sch := schema.Action(planner.SchemaTools(r.allowedTools()), r.thoughtOptions(), r.plan != nil && e.Planner != nil)
	req, err := r.prepare(llm.KindAction)
	if err != nil {
		return Action{}, llm.Usage{}, err
	}
	if r.overBudget() {
		// A compaction's summary call spent the rest of the budget.
		return Action{}, llm.Usage{}, errBudget
	}
	r.lastPromptTokens = req.tokens
	r.progress("step %d: thinking", r.st.Attempts+1)
	resp, err := r.send(req, sch)
	r.addUsage(resp.Usage)
	if err != nil {
		return Action{}, resp.Usage, err
	}
	r.addMsg(llm.RoleAssistant, resp.Text)
	r.askReason = ""
	act, err := ParseAction([]byte(resp.Text), sch, r.thoughtOptions())
	if err != nil {
		return Action{}, resp.Usage, &invalidAction{text: resp.Text, reason: err.Error()}
	}
	return act, resp.Usage, nil
}

// ParseAction parses a model's action reply: one JSON object valid against
// the action schema sch, with a substantive thought when thoughts are required.
func ParseAction(text []byte, sch json.RawMessage, thought schema.ThoughtOptions) (Action, error) {
	v, err := schema.Compile(sch)
	if err != nil {
		return Action{}, err
	}
	if _, err := v.ValidateJSON(text); err != nil {
		return Action{}, err
	}
	var act Action
	if err := json.Unmarshal(text, &act); err != nil {
		return Action{}, err
	}
	if thought.Required {
		if why := degenerateThought(act.Thought, act.Tool, thought.MinLength); why != "" {
			return Action{}, errors.New(why)
		}
	}
	return act, nil
}

func (r *run) invalid(inv *invalidAction, usage llm.Usage) {
	r.st.Attempts++
	r.st.RetryCount++
	st := StepTrace{Observation: "invalid action: " + inv.reason, Error: inv.reason, ExitCode: ExitCodeNotRun, Source: "model", TokenUsage: usage, SkipReason: SkipInvalidAction}
	st.Action = ToolCall{Args: json.RawMessage(`{}`)}
	if p := r.pending(); p != nil {
		r.st.PlanSkipReason = SkipInvalidAction
		st.PlanStep = r.st.PlanIndex + 1
	}
	r.record(st)
	r.emit(EventInvalidAction, map[string]any{"reply": inv.text, "error": inv.reason})
	r.addMsg(llm.RoleUser, "Your reply was not a valid action: "+inv.reason)
	r.noteRepeat("invalid:" + inv.text)
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

func (r *run) syncPending() {
	if r.pending() != nil {
		r.st.PendingPlanStep = r.st.PlanIndex + 1
	} else {
		r.st.PendingPlanStep = 0
	}
}

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

	if act.Tool != exec.FinalAnswer && key == r.lastOK {
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

	if act.Tool == exec.FinalAnswer {
		var fa struct {
			Answer string `json:"answer"`
		}
		_ = json.Unmarshal(act.Args, &fa)
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: fa.Answer, Source: source, PlanStep: planStep, TokenUsage: usage})
		r.st.Step++
		if matchesPlan {
			r.st.PlanIndex++
		}
		if phrase := r.failurePhrase(fa.Answer); phrase != "" {
			r.end(ReasonFailure, fa.Answer, fmt.Sprintf("failure detected in the final answer (%q)", phrase))
			return
		}
		r.end(ReasonSuccess, fa.Answer, "")
		return
	}

	// The action as it starts, before any approval: a terminal shows it
	// above the approval prompt and the tool's output.
	r.emit(EventAction, map[string]any{"iteration": len(r.res.Trace.Steps) + 1, "tool": act.Tool, "args": act.Args, "source": source, "thought": act.Thought})
	// Approval: write/exec tools go through the gate.
	decision := ""
	var result exec.Result
	if tool.Class() != exec.ClassRead {
		v := e.Gate.Check(r.ctx, e.Env, []exec.Call{{Tool: tool, Args: act.Args}})[0]
		decision = v.Decision
		switch {
		case e.DryRun:
			why := v.Reason
			if why == "" {
				why = "decision: " + v.Decision
			}
			result = exec.Result{Output: fmt.Sprintf("[%s] %s", act.Tool, why)}
			decision = "dry_run:" + v.Decision
		case !v.Allowed:
			reason := v.Reason
			if !strings.HasPrefix(reason, "denied by") {
				reason = "denied by policy: " + reason
			}
			result = exec.Result{Err: errors.New(reason), ExitCode: 0}
			r.emit(EventDenied, map[string]any{"tool": act.Tool, "args": act.Args, "decision": v.Decision, "reason": v.Reason})
		}
	}
	if result.Output == "" && result.Err == nil {
		r.progress("step %d: %s", r.st.Step+1, act.Tool)
		result = tool.Run(r.ctx, e.Env, act.Args)
	}
	if r.ctx.Err() != nil {
		// A tool interrupted by cancellation is not a tool failure.
		r.record(StepTrace{Thought: act.Thought, Action: act.call(), Observation: "interrupted", Error: r.ctx.Err().Error(), ExitCode: result.ExitCode, Source: source, PlanStep: planStep, Decision: decision, TokenUsage: usage})
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
	st := StepTrace{Thought: act.Thought, Action: act.call(), Observation: obsText, Error: errText, ExitCode: result.ExitCode, Source: source, PlanStep: planStep, Decision: decision, TokenUsage: usage}
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
		if tool.Class() == exec.ClassRead {
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

// complete sends a request to the model. Its messages are redacted
// already (the prompt is an exit): the conversation's when they were added
// (addHist), a call's own by prepare. Redaction is per message and
// deterministic, so the append-only layout and the KV prefix reuse built on
// it are kept.
func (r *run) complete(req llm.Request) (llm.Response, error) {
	return r.e.Backend.Complete(r.ctx, req)
}

// emit writes a trace event with its fields redacted (the trace is an exit,
// whatever redaction the TraceWriter itself applies).
func (r *run) emit(event string, fields map[string]any) {
	if r.e.Events == nil {
		return
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		b, err := marshalNoEscape(v)
		if err != nil {
			out[k] = v
			continue
		}
		out[k] = json.RawMessage(r.redactJSON(b))
	}
	r.e.Events.Handle(Event{RunID: r.id, Type: event, Time: time.Now(), Fields: out})
}

// redactJSON redacts the strings of a JSON value, keeping it valid JSON.
func (r *run) redactJSON(raw json.RawMessage) json.RawMessage {
	return exec.RedactJSONWith(raw, r.e.Redact)
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
		b, _ := marshalNoEscape(act)
		r.addMsg(llm.RoleAssistant, string(b))
	}
	r.addMsg(llm.RoleUser, prompt.Render("observation", obs))
}

func (r *run) checkPhrasesAndStop(rec stepRecord, obs string) bool {
	for _, ph := range r.e.SuccessPhrases {
		if containsPhrase(obs, ph) {
			r.end(ReasonSuccess, obs, fmt.Sprintf("success phrase %q observed", ph))
			return true
		}
	}
	for _, ph := range r.e.FailurePhrases {
		if containsPhrase(obs, ph) {
			r.end(ReasonFailure, obs, fmt.Sprintf("failure phrase %q observed", ph))
			return true
		}
	}
	if r.stopQuery {
		if match, err := r.stopWhen(rec); err != nil {
			r.e.Log.Warn("--stop-when failed", "err", err)
		} else if match {
			r.end(ReasonCustom, rec.Output, "--stop-when matched step "+fmt.Sprint(rec.Step))
			return true
		}
	}
	return false
}

func (r *run) failurePhrase(answer string) string {
	for _, ph := range r.e.FailurePhrases {
		if containsPhrase(answer, ph) {
			return ph
		}
	}
	lower := strings.ToLower(strings.TrimSpace(answer))
	for _, ph := range defaultCannotPrefixes {
		if strings.HasPrefix(lower, ph) && wordEdge(lower, len(ph), ph) {
			return ph
		}
	}
	return ""
}

// containsPhrase reports whether text contains phrase, ignoring case, as
// whole words: where the phrase begins or ends with a letter or digit, the
// text must not continue it ("error" is not found in "errorless", nor
// "cannot" in "cannotice").
func containsPhrase(text, phrase string) bool {
	if phrase == "" {
		return false
	}
	lt, lp := strings.ToLower(text), strings.ToLower(phrase)
	for from := 0; from <= len(lt)-len(lp); {
		i := strings.Index(lt[from:], lp)
		if i < 0 {
			return false
		}
		i += from
		if wordStart(lt, i, lp) && wordEdge(lt, i+len(lp), lp) {
			return true
		}
		_, size := utf8.DecodeRuneInString(lt[i:])
		from = i + size
	}
	return false
}

// wordStart: the phrase at text[i:] does not continue a word before it.
func wordStart(text string, i int, phrase string) bool {
	first, _ := utf8.DecodeRuneInString(phrase)
	if !isWordRune(first) || i == 0 {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(text[:i])
	return !isWordRune(prev)
}

// wordEdge: the phrase ending at text[:end] is not continued by a word.
func wordEdge(text string, end int, phrase string) bool {
	last, _ := utf8.DecodeLastRuneInString(phrase)
	if !isWordRune(last) || end >= len(text) {
		return true
	}
	next, _ := utf8.DecodeRuneInString(text[end:])
	return !isWordRune(next)
}

func isWordRune(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) }

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
	r.st.MaxSteps = r.st.Attempts + len(np.Steps) + e.RetryBuffer
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

// fallback ends the run with an answer synthesized from what was observed:
// one model call, or without a model a plain summary of the steps.
func (r *run) fallback(reason Reason, msg string) {
	answer := ""
	if _, none := r.e.Backend.(llm.None); !none && r.ctx.Err() == nil && reason != ReasonTokenBudget {
		req, err := r.prepare(llm.KindFallback, llm.Message{Role: llm.RoleUser, Content: prompt.Render("fallback", prompt.Fallback{Query: r.query, Reason: "Stopping: " + msg + "."})})
		var resp llm.Response
		if err == nil {
			resp, err = r.send(req, schema.Fallback)
			r.addUsage(resp.Usage)
		}
		if err == nil {
			var fa struct {
				Answer string `json:"answer"`
			}
			if json.Unmarshal([]byte(resp.Text), &fa) == nil && strings.TrimSpace(fa.Answer) != "" {
				answer = fa.Answer
			}
		} else {
			r.e.Log.Warn("fallback answer failed; using a plain summary", "err", err)
		}
	}
	if answer == "" {
		answer = r.summary()
	}
	r.emit(EventFallback, map[string]any{"reason": reason, "message": msg, "answer": answer})
	r.end(reason, answer, msg)
}

// summary is the model-free fallback answer.
func (r *run) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "No final answer for %q. ", r.query)
	if len(r.records) == 0 {
		if n := len(r.res.Trace.Steps); n > 0 && r.res.Trace.Steps[n-1].Observation == "interrupted" {
			fmt.Fprintf(&b, "No tool run finished: %s was interrupted.", r.res.Trace.Steps[n-1].Action.Tool)
			return b.String()
		}
		b.WriteString("No tool ran.")
		return b.String()
	}
	fmt.Fprintf(&b, "Steps run:\n")
	for _, rec := range r.records {
		status := "ok"
		if rec.Error != nil {
			status = "failed: " + text.Clip(firstLine(*rec.Error), 300)
		}
		// Arguments cut as the run display cuts them: a denied 1 MB
		// write_file is a line here, not a megabyte on stdout.
		fmt.Fprintf(&b, "%d. %s %s: %s\n", rec.Step, rec.Tool, text.ClipArgs(rec.Args, 60), status)
	}
	last := r.records[len(r.records)-1]
	if out := strings.TrimSpace(last.Output); out != "" {
		fmt.Fprintf(&b, "Last output:\n%s", r.truncate(out))
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstLine(s string) string { return text.FirstLine(s) }

// truncate cuts text to about MaxObservationTokens tokens (4 bytes a token),
// keeping head and tail and saying how much was cut.
func (r *run) truncate(s string) string {
	limit := r.e.MaxObservationTokens * 4
	if len(s) <= limit {
		return s
	}
	// The cuts keep runes and secrets whole: a secret split here would
	// leave parts that redaction no longer recognises.
	var red *exec.Redactor
	if r.e.Env != nil {
		red = r.e.Env.Redactor
	}
	head := red.CutBefore(s, limit*3/4)
	ts := red.CutAfter(s, len(s)-(limit-limit*3/4))
	cut := ts - head
	return fmt.Sprintf("%s\n[... %d bytes (~%d tokens) cut ...]\n%s", s[:head], cut, (cut+3)/4, s[ts:])
}

func (r *run) jqState() map[string]any {
	return map[string]any{"query": r.query, "steps": r.records}
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

// stopWhen evaluates --stop-when over a finished step (run state in
// $state), with the same bounds as $jq arguments: true unless the first
// result is false or null (none: false).
func (r *run) stopWhen(rec any) (bool, error) {
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	state, err := json.Marshal(r.jqState())
	if err != nil {
		return false, err
	}
	out, err := jqx.Eval(r.ctx, jqx.Request{Expr: r.e.StopWhen, Vars: []string{"$state"},
		VarValues: []json.RawMessage{state}, Input: recJSON, MaxResults: 1})
	if err != nil || len(out.Results) == 0 {
		return false, err
	}
	v := string(out.Results[0])
	return v != "null" && v != "false", nil
}

// CompileJQ checks that an expression over the run state ($state is bound
// too) compiles, within jqx's bounds.
func CompileJQ(expr string) error {
	return jqx.Check(expr, "$state")
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
	if out, err := marshalNoEscape(v); err == nil {
		return out
	}
	return b
}

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) { return text.JSON(v) }

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

// degenerateThought returns why a thought is not substantive, or "".
func degenerateThought(thought, tool string, minLen int) string {
	t := strings.TrimSpace(thought)
	if t == "" {
		return "thought is required"
	}
	// Length as the schema (and so the grammar) counts it: untrimmed.
	if len([]rune(thought)) < minLen {
		return fmt.Sprintf("thought is shorter than %d characters", minLen)
	}
	norm := strings.Trim(strings.ToLower(strings.Join(strings.Fields(t), " ")), ".!:;, ")
	switch norm {
	case "i will use the tool", "use the tool", "i will use a tool", "i need to use a tool", "thinking",
		"thought", "next step", "the next step", "continue", "let me think", "ok", "okay", "done", "n/a", "none",
		"i will call the tool", "calling the tool", "action":
		return fmt.Sprintf("degenerate thought %q", t)
	}
	if norm == strings.ToLower(tool) || norm == "use "+strings.ToLower(tool) || norm == "i will use "+strings.ToLower(tool) {
		return fmt.Sprintf("degenerate thought %q", t)
	}
	if f := strings.Fields(norm); len(f) > 2 {
		same := true
		for _, w := range f[1:] {
			if w != f[0] {
				same = false
				break
			}
		}
		if same {
			return fmt.Sprintf("degenerate thought %q", t)
		}
	}
	return ""
}
