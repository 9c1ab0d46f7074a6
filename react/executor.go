package react

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// Options are the PRD's tunables (see config.Settings for defaults).
type Options struct {
	NoPlan               bool     // free ReAct: every action from the model
	MaxIterations        int      // budget in free mode (0: 10); in a planned run, when > 0, the most its budget may be
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
	// AnswerSchema, when set, is a JSON Schema the final answer must
	// validate against (--schema): the answer is then a JSON value
	// (Result.Answer), and a run that cannot give one that validates
	// ends with ReasonInvalidAnswer. Compiled by schema.CompileAnswer.
	AnswerSchema json.RawMessage
	// ProjectInstructions end the system prompt (the workspace's AGENTS.md
	// files, internal/instructions): in the pinned prefix, so the prompt
	// cache and KV reuse keep working, its key covering them.
	ProjectInstructions string
	// Files are the user's context files (tact run -f), shown in the task
	// message after the query, each cut to its share of the window.
	Files []ContextFile
	// Asker asks ask_user's questions inline (a terminal); nil: the run
	// pauses for them (ReasonNeedsInput).
	Asker Asker
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
	Registry *tools.Registry
	Env      *tools.Env
	Backend  llm.Backend // llm.None{} when no model
	Planner  Replanner   // nil: no replanning
	Gate     tools.Gate  // nil: tools.AllowAll
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
	// OnCheckpoint, when set, receives the run's state after every step,
	// at the top of the loop, before the next action is chosen: the run
	// history keeps the latest, so that a run cut by a crash, a signal,
	// its timeout or a budget can go on (Resume). It runs on the run's
	// goroutine; the next action waits for it, so a tool run that
	// finished is stored before another starts.
	OnCheckpoint func(runID string, cp Checkpoint)
	// Hooks runs the user's hook programs (docs/hooks.md): PreToolUse
	// before approval, PostToolUse after a tool ran, Stop before a final
	// answer is accepted, RunStart once as the run starts. nil: none.
	Hooks Hooks
}

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
	fatal           error             // set when the run must end (reason in res)
	answerV         *schema.Validator // the answer schema's (nil: none)
	// checkpointed is how many trace steps the last checkpoint held.
	checkpointed int
	// cpRecords are the records redacted for checkpoints so far (records
	// only grow: each is redacted once, not at every step).
	cpRecords []CheckpointRecord
	resumed   bool      // the run goes on from a checkpoint (Resume)
	answer    *answered // the pending call's answer (ResumeAnswer)
	// stopSentBack counts final answers a Stop hook sent back; stopReason
	// is the last one's reason, for the budget's message.
	stopSentBack int
	stopReason   string
}

// Run executes plan (nil in free mode) for query. It never returns an error:
// every outcome, including backend failures, is a termination reason.
func (e *Executor) Run(ctx context.Context, query string, plan *planner.Plan) *Result {
	return e.RunWithID(ctx, NewRunID(), query, plan)
}

// RunWithID is Run with the caller's run id: it tags every event and the
// result, so the events of runs sharing one sink stay separable.
func (e *Executor) RunWithID(ctx context.Context, id, query string, plan *planner.Plan) *Result {
	r := e.newRun(ctx, id, query, plan, true)
	r.main()
	return r.finish()
}

// Resume goes on with a run from its checkpoint cp under the run id id (a
// new one: the resumed run is a record of its own): the model's view, the
// plan as revised, the counters and the tool runs so far are cp's, and
// the loop continues where cp was taken, repeating no tool run that
// finished. budget says whether the step budget is cp's or a fresh one.
// The result holds cp's steps followed by the new ones; its token usage
// and time are the resumed run's own. An error means cp cannot be resumed
// (ErrCheckpoint); the run then never started.
func (e *Executor) Resume(ctx context.Context, id string, cp *Checkpoint, budget Budget) (*Result, error) {
	r := e.newRun(ctx, id, cp.Query, nil, false)
	if err := r.restore(cp, budget); err != nil {
		return nil, err
	}
	r.checkpointed = len(r.res.Trace.Steps)
	r.resumed = true
	r.main()
	return r.finish(), nil
}

// finish ends a run: its totals and the termination event.
func (r *run) finish() *Result {
	r.res.ExecutionTimeMS = time.Since(r.start).Milliseconds()
	r.res.Iterations = r.st.Attempts
	r.syncPending()
	if r.res.Trace.Steps == nil {
		r.res.Trace.Steps = []StepTrace{}
	}
	fields := map[string]any{
		"reason": r.res.TerminationReason, "success": r.res.Success, "final_answer": r.res.FinalAnswer,
		"message": r.res.Message, "exit_code": r.res.ExitCode(), "state": r.res.State,
		"token_usage": r.res.TokenUsage, "execution_time_ms": r.res.ExecutionTimeMS,
	}
	if r.res.Question != nil {
		fields["question"] = r.res.Question // a paused run's (redacted): its span says what it waits for
	}
	r.emit(EventTermination, fields)
	return r.res
}

// newRun sets a run up: defaults, allowed tools, budget, the pinned
// prefix of the conversation and the context window. A fresh run (not a
// resumed one, whose checkpoint holds its task) calls the RunStart hooks.
func (e *Executor) newRun(ctx context.Context, id, query string, plan *planner.Plan, fresh bool) *run {
	cfg := *e // defaults go into the run's copy: e stays as the caller made it
	// The run id reaches whatever the gate hands the user's programs.
	ctx = tools.WithRunID(ctx, id)
	// The total starts from the planning call's usage, a total's fields
	// only (Add: no one call's time to first token).
	r := &run{e: &cfg, id: id, ctx: ctx, query: query, plan: plan, res: &Result{RunID: id, TokenUsage: llm.Usage{}.Add(e.SpentUsage)}, start: time.Now()}
	r.st = &r.res.State
	r.defaults()
	answerErr := r.setAnswerSchema()
	e = r.e
	if e.NoPlan {
		r.plan = nil
	}
	r.setAllowed()
	if r.plan != nil {
		r.st.MaxSteps = r.planBudget(0, len(r.plan.Steps)+e.RetryBuffer)
		r.st.PendingPlanStep = 1
	} else {
		r.st.MaxSteps = e.freeBudget()
	}
	hookContext := ""
	if fresh && answerErr == nil {
		hookContext = r.runStartContext()
	}
	r.addHist(llm.RoleSystem, r.systemPrompt(), histPinned)
	r.addHist(llm.RoleUser, prompt.Render("task", prompt.Task{Query: r.query, Outline: r.outline(), HookContext: hookContext}), histPinned)
	r.initWindow()
	if len(e.Files) > 0 {
		// Their share of the window is known once the rest is counted.
		files := r.taskFiles()
		r.hist = r.hist[:1]
		r.addHist(llm.RoleUser, prompt.Render("task", prompt.Task{Query: r.query, Outline: r.outline(), Files: files, HookContext: hookContext}), histPinned)
		r.initWindow()
	}
	if len(e.Conversation) > 0 {
		r.addConversation()
	}
	if answerErr != nil {
		r.end(ReasonError, "", answerErr.Error())
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
		e.Gate = tools.AllowAll{}
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

func (r *run) setAllowed() {
	r.allowed = map[string]bool{tools.FinalAnswer: true}
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

func (r *run) allowedTools() []tools.Tool {
	var out []tools.Tool
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
	cfg := *e
	r := &run{e: &cfg}
	_ = r.setAnswerSchema() // the run's prompt names the answer schema too
	r.setAllowed()
	return llm.Message{Role: llm.RoleSystem, Content: r.systemPrompt()}
}

func (r *run) systemPrompt() string {
	tp := r.e.ThoughtPrompt
	if tp == "" {
		tp = prompt.DefaultThoughtPrompt
	}
	return prompt.Render("system", prompt.System{
		Tools: tools.PromptTools(r.allowedTools()), ThoughtPrompt: tp,
		RequireThought: r.e.RequireThought, MinThought: r.e.MinThoughtLength,
		AllowReplan:         r.plan != nil && r.e.Planner != nil,
		ProjectInstructions: r.e.ProjectInstructions,
	})
}

func (r *run) thoughtOptions() schema.ThoughtOptions {
	return schema.ThoughtOptions{Required: r.e.RequireThought, MinLength: r.e.MinThoughtLength}
}

// defaultFreeBudget is the free mode's step budget when MaxIterations is 0.
const defaultFreeBudget = 10

// freeBudget is the step budget of a run without a plan.
func (e *Options) freeBudget() int {
	if e.MaxIterations > 0 {
		return e.MaxIterations
	}
	return defaultFreeBudget
}

// planBudget is a planned run's step budget after spent attempts when its
// plan allows want more: want, but in all at most MaxIterations when that
// is set (--max-iterations bounds a planned run too).
func (r *run) planBudget(spent, want int) int {
	if m := r.e.MaxIterations; m > 0 && spent+want > m {
		return max(m, spent)
	}
	return spent + want
}
