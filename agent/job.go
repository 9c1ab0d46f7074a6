package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/grammar"
	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/internal/instructions"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runrecord"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// Job is one query (and, for a saved plan, its plan) to run on a Runtime.
type Job struct {
	ID    string // run id in events and the result ("": a fresh one)
	Query string
	// PlanName and PlanData are a saved plan's JSONL (tact exec); errors
	// name PlanName:LINE.
	PlanName string
	PlanData []byte
	// Params are the values of the saved plan's parameters (JSON values;
	// see planner.BindParams), bound before any step runs.
	Params map[string]json.RawMessage
	// ParamNames makes the plan of Runtime.Plan a template with these
	// parameters (tact plan --param-name; see planner.Planner.Params).
	ParamNames []string
	// Files are the user's context files (tact run -f), shown to the
	// executor in the task message and named by run_start and a plan's
	// header.
	Files []react.ContextFile
	// Events receives this job's events besides the Runtime's sinks.
	Events react.Sink
	// Settings, when set, replace the runtime's for this job's executor,
	// planner tools and --timeout (a server's per-request options); what
	// Open set up (backend, workspace, policy, redactor) stays the
	// runtime's.
	Settings *config.Settings
	// Conversation, when set, makes the job the next turn of a
	// conversation (tact chat): the planner and the executor see the
	// earlier turns, the executor may use every tool (or --allow-tools) so
	// that its system prompt, and with it the KV cache of the earlier
	// turns, stays the same from turn to turn, and the finished run is
	// recorded as the next turn. Run only.
	Conversation *Conversation
	// ParentID names the run this one follows up (tact run --continue) in
	// the run history; a conversation's turns name the turn before.
	ParentID string
	// Resume, when set, goes on with an earlier run instead of starting
	// one (tact run --resume). Run only.
	Resume *Resume
	// Gate, when set, approves the job's write and exec actions instead of
	// the runtime's gate (tact mcp serve: the calling session's, made with
	// Runtime.NewGate, so its questions go to that client and wait on no
	// other session's).
	Gate tools.Gate
	// Pause makes ask_user pause the run (needs_input) even where the
	// runtime could ask a person inline: the caller answers the pause
	// (tact mcp serve on protocol 2026-07-28). Pair it with a gate from
	// Runtime.NewPausingGate for approvals.
	Pause bool
	// Workspace, when set, is the directory this job's tools work in
	// instead of the runtime's (tact test run: a fresh copy of a case's
	// fixture for every trial); its project instructions are read from
	// there.
	Workspace string
}

// Resume is an earlier run to go on with (see Job.Resume).
type Resume struct {
	From string // the earlier run's id, recorded as resumed_from
	// Checkpoint is the earlier run's latest (react.Checkpoint, JSON); the
	// run goes on from there. Empty: no step finished, so the run starts
	// again with the job's query and plan.
	Checkpoint []byte
	Budget     react.Budget
	// Answer, when set, is the answer a paused run (needs_input) waits
	// for: the checkpoint's pending call gets it (tact answer).
	Answer *react.Answer
	// Release, when set, drops the paused run's answer lock (AnswerJob):
	// Run calls it once the run's record is committed; safe twice.
	Release func()
}

// Plan makes a plan for job.Query and returns it with the planning call's
// usage. The events are run_start, planning, plan and termination.
func (rt *Runtime) Plan(ctx context.Context, job Job) (plan *planner.Plan, usage llm.Usage, err error) {
	l := rt.newLife(job)
	l.ctx = ctx
	defer func() { l.finish(err, usage) }()
	l.start(job.Query)
	if l.s.NoPlan {
		return nil, usage, badInputf("tact plan: --no-plan makes no sense here")
	}
	if rt.noModel != nil {
		return nil, usage, rt.needModel("planning", ", --script, or run a saved plan with `tact exec`")
	}
	for _, n := range job.ParamNames {
		if !planner.ValidParamName(n) {
			return nil, usage, badInputf("--param-name %q: want letters, digits and _, not starting with a digit", n)
		}
	}
	l.paramNames = job.ParamNames
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	plan, usage, err = rt.makePlan(ctx, l, job.Query)
	if err != nil {
		if ctx.Err() != nil {
			return nil, usage, contextError(ctx)
		}
		return nil, usage, err
	}
	unused := map[string]bool{}
	for _, n := range job.ParamNames {
		unused[n] = true
	}
	for _, r := range plan.ParamRefs() {
		delete(unused, r.Name)
	}
	for _, n := range job.ParamNames {
		if unused[n] {
			slog.Warn("the plan does not use a parameter it declares: the planner wrote no {{"+n+"}}", "param", n)
		}
	}
	l.recordFiles(plan)
	l.emit(react.EventPlan, map[string]any{"plan": plan.Rows(), "source": plan.Source, "token_usage": usage})
	return plan, usage, nil
}

// Run runs job: its saved plan, or a plan made for the query (unless
// --no-plan), with the ReAct executor. Every outcome of the run itself is
// a termination reason in the Result; the error is set only when the run
// could not start (bad input, no model, a window too small, a planning
// failure) and is typed (KindOf).
func (rt *Runtime) Run(ctx context.Context, job Job) (res *react.Result, err error) {
	if job.Resume != nil && job.Resume.Release != nil {
		// Runs after the record's end below: the next answer's check
		// finds this run once the lock is free (and on every early return).
		defer rt.releaseAnswer(job.Resume.Release)
	}
	if job.ID != "" {
		// A front end passes a client's id on; one that did not check it
		// still never hands a NUL or a path to a hook.
		if err := react.CheckRunID(job.ID); err != nil {
			return nil, badInputf("run id: %v", err)
		}
	}
	if job.Resume != nil && job.Resume.Answer != nil && rt.hist == nil {
		return nil, errNoHistoryAnswer
	}
	l := rt.newLife(job)
	l.ctx = ctx
	if job.Workspace != "" {
		if err := l.useWorkspace(job.Workspace); err != nil {
			l.start(job.Query)
			l.finish(err, llm.Usage{})
			return nil, err
		}
	}
	l.rec = rt.newRecord(l, job)
	l.sink = react.Sinks{l.sink, l.rec}
	var planUsage llm.Usage
	query := job.Query // the saved plan's when the job has none
	defer func() {
		if err != nil {
			l.finish(err, planUsage)
		}
		l.rec.End(query, res, TerminationOf(err))
	}()
	if l.answer, err = answerSchema(l.s); err != nil {
		l.start(query)
		return nil, badInput(err)
	}
	if job.Resume != nil && len(job.Resume.Checkpoint) > 0 {
		var cp react.Checkpoint
		if err := json.Unmarshal(job.Resume.Checkpoint, &cp); err != nil {
			l.start(job.Query)
			return nil, badInputf("run %s: its checkpoint does not read: %v", job.Resume.From, err)
		}
		l.start(cp.Query)
		return rt.resume(ctx, l, job, &cp)
	}
	plan, query, err := rt.savedPlan(l, job)
	if err != nil {
		return nil, err
	}
	l.start(query)
	ctx = l.callInfo(ctx, query)
	if err := rt.modelFor(l, plan); err != nil {
		return nil, err
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	if plan == nil && !l.s.NoPlan {
		if plan, planUsage, err = rt.planFor(ctx, l, query); err != nil {
			return nil, err
		}
	}
	ex := rt.executor(l, plan, planUsage)
	if err := ex.CheckContext(query, plan); err != nil {
		return nil, rt.contextTooSmall(err)
	}
	var rows []json.RawMessage
	if plan != nil {
		rows = plan.Rows()
	}
	l.rec.Begin(query, rows)
	res = ex.RunWithID(ctx, l.id, query, plan)
	if job.Conversation != nil {
		job.Conversation.record(l.turn, l.convID, query, res, rt.Redactor.Redact)
	}
	return res, nil
}

// savedPlan parses and binds job's saved plan (tact exec; nil without
// one) and returns it with the run's query: the job's, else the plan's.
// Its errors are bad input, reported after run_start.
func (rt *Runtime) savedPlan(l *life, job Job) (*planner.Plan, string, error) {
	query := job.Query
	if job.PlanData == nil {
		return nil, query, nil
	}
	reg := rt.Registry
	if l.answer != nil {
		reg = react.AnswerRegistry(reg, l.answer)
	}
	plan, err := planner.Parse(bytes.NewReader(job.PlanData), job.PlanName, reg)
	if err == nil {
		err = planner.BindParams(plan, job.Params, reg)
	}
	if err == nil {
		err = needFiles(plan, job.PlanName, len(job.Files))
	}
	if err != nil {
		l.start(query)
		return nil, query, badInput(err)
	}
	if query == "" {
		query = plan.Query()
	}
	if query == "" {
		query = "Carry out the plan."
	}
	return plan, query, nil
}

// modelFor refuses a job that needs a model when the runtime has none:
// free ReAct, planning, or a saved plan with steps only a model can fill.
func (rt *Runtime) modelFor(l *life, plan *planner.Plan) error {
	switch {
	case rt.noModel == nil:
		return nil
	case l.s.NoPlan:
		return rt.needModel("--no-plan", " or --script; every action comes from the model")
	case plan == nil:
		return rt.needModel("planning", ", --script, or run a saved plan with `tact exec`")
	}
	return rt.fillNeedsModel(plan)
}

// planFor asks the planner for the job's plan. A reply that is no valid
// plan is recorded and the run goes on as free ReAct (nil plan), as it
// does when ctx ended: the executor then reports the timeout or the
// cancellation like any other end.
func (rt *Runtime) planFor(ctx context.Context, l *life, query string) (*planner.Plan, llm.Usage, error) {
	p, usage, err := rt.makePlan(ctx, l, query)
	switch {
	case err == nil:
		l.recordFiles(p)
		return p, usage, nil
	case ctx.Err() != nil:
		return nil, usage, nil
	case isInvalidPlan(err):
		slog.Warn("the planner's reply was not a valid plan; continuing without a plan", "err", err)
		var inv *planner.InvalidReplyError
		errors.As(err, &inv)
		l.emit(react.EventPlanInvalid, map[string]any{"error": inv.Error()})
		return nil, usage, nil
	}
	return nil, usage, err
}

// resume goes on with the run job.Resume names from its checkpoint cp
// (read, and the run started, by Run).
func (rt *Runtime) resume(ctx context.Context, l *life, job Job, cp *react.Checkpoint) (*react.Result, error) {
	ctx = l.callInfo(ctx, cp.Query)
	if rt.noModel != nil && (len(cp.Plan) == 0 || cp.State.PendingPlanStep == 0) {
		return nil, rt.needModel("resuming run "+job.Resume.From, "; its next action comes from the model")
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	ex := rt.executor(l, nil, llm.Usage{})
	l.rec.Begin(cp.Query, cp.Plan)
	var res *react.Result
	var err error
	if a := job.Resume.Answer; a != nil {
		res, err = ex.ResumeAnswer(ctx, l.id, cp, *a)
	} else {
		res, err = ex.Resume(ctx, l.id, cp, job.Resume.Budget)
	}
	if err != nil {
		return nil, badInputf("run %s: %v", job.Resume.From, err)
	}
	return res, nil
}

// releaseAnswer commits the run history (bounded) and drops an answer's
// lock.
func (rt *Runtime) releaseAnswer(release func()) {
	if rt.hist != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = rt.hist.Flush(ctx) // a store error is the store's one warning
		cancel()
	}
	release()
}

// executor is a run's executor over the runtime's shared parts.
func (rt *Runtime) executor(l *life, plan *planner.Plan, spent llm.Usage) *react.Executor {
	s := l.s
	ex := &react.Executor{
		Options: react.Options{
			NoPlan: s.NoPlan || plan == nil, MaxIterations: s.MaxIterations, RetryBuffer: s.RetryBuffer,
			ReplanThreshold: s.ReplanThreshold, AllowTools: s.AllowTools, ThoughtPrompt: s.ThoughtPrompt,
			RequireThought: s.RequireThought, MinThoughtLength: s.MinThoughtLength,
			SuccessPhrases: s.SuccessPhrases, FailurePhrases: s.FailurePhrases, StallThreshold: s.StallThreshold,
			MaxObservationTokens: s.MaxObservationTokens, TokenBudget: s.TokenBudget, StopWhen: s.StopWhen,
			DryRun: s.DryRun, ContextSize: s.CtxSize, CompactAt: float64(s.CompactAt), KeepSteps: s.KeepSteps,
			AnswerSchema: l.answer, ProjectInstructions: l.instructions.Text, Files: l.files,
		},
		Registry: rt.Registry, Env: l.env, Backend: rt.Backend, Gate: l.gate(), Events: l.sink, Redact: rt.Redactor.Redact,
		Sampling: Sampling(s), MaxTokens: s.MaxTokens, Log: slog.Default(), SpentUsage: spent,
		Conversation: l.earlier,
	}
	if l.convID != "" && len(s.AllowTools) == 0 {
		ex.AllowTools = rt.Registry.Names()
	}
	if rt.noModel == nil {
		ex.Planner = l.planner()
	}
	if !l.pause {
		ex.Asker = rt.asker
	}
	if l.rec == nil {
		// No history, no checkpoint to pause at: nobody could answer.
		if ex.Asker == nil {
			ex.Asker = noHistoryAsker
		}
		if ex.Gate != nil {
			ex.Gate = noPauseGate{ex.Gate}
		}
	}
	if l.rec != nil {
		ex.OnCheckpoint = func(_ string, cp react.Checkpoint) { l.rec.Checkpoint(cp) }
	}
	if !rt.hooks.Empty() {
		// Per job: a job's own settings say whether it is a dry run.
		ex.Hooks = hooks.NewRunner(rt.hooks, hooks.Options{Redactor: rt.Redactor, DryRun: s.DryRun, Log: slog.Default()})
	}
	return ex
}

func (rt *Runtime) makePlan(ctx context.Context, l *life, query string) (*planner.Plan, llm.Usage, error) {
	pl := l.planner()
	l.emit(react.EventPlanning, map[string]any{"query": query, "tools": pl.Tools})
	p, usage, err := pl.Plan(ctx, query, nil, nil)
	if err != nil {
		var small *llm.ContextTooSmallError
		if errors.As(err, &small) {
			return nil, usage, rt.contextTooSmall(err)
		}
		if errors.Is(err, llm.ErrContextFull) && ctx.Err() == nil {
			// A server refused the planning prompt as too long: as a window
			// too small for it here, there is nothing to compact.
			return nil, usage, &Error{Kind: ErrContextTooSmall, Err: fmt.Errorf("planning: %w (the window cannot hold the planning prompt: raise the server's context, or lower --max-tokens)", err)}
		}
		if ctx.Err() == nil {
			err = fmt.Errorf("planning: %w", err)
		}
	}
	return p, usage, err
}

func (l *life) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.s.Timeout > 0 {
		return context.WithTimeout(ctx, l.s.Timeout)
	}
	return ctx, func() {}
}

// planner is the runtime's planner, with the job's sampling, reply size
// and --allow-tools when the job has its own settings.
func (l *life) planner() *planner.Planner {
	if l.s == l.rt.S && len(l.earlier) == 0 && len(l.paramNames) == 0 && len(l.files) == 0 && l.env == l.rt.Env {
		return l.rt.planner
	}
	p := *l.rt.planner
	p.Params = l.paramNames
	p.Sampling, p.MaxTokens, p.MinReplyTokens = Sampling(l.s), planMaxTokens(l.s), l.s.MaxTokens
	if len(l.s.AllowTools) > 0 {
		p.Tools = l.s.AllowTools
	}
	p.Conversation = entryTexts(l.earlier)
	p.ProjectInstructions = l.instructions.Text
	p.Files = l.fileNames
	return &p
}

// needModel is the error of a job that needs a model when none is
// configured, saying how to get one.
func (rt *Runtime) needModel(what, alternative string) error {
	msg := what + " needs a model: " + NoModelHint() + "; or give --model PATH (or TACT_MODEL)" + alternative
	if rt.noModel.Why != "" && rt.noModel.Why != recoverHint {
		msg += "; " + rt.noModel.Why
	}
	return &Error{Kind: ErrNeedsModel, Err: errors.New(msg)}
}

// fillNeedsModel refuses a saved plan with "" arguments when there is no
// model to fill them, naming the plan line.
func (rt *Runtime) fillNeedsModel(plan *planner.Plan) error {
	for _, st := range plan.Steps {
		for k, v := range st.Args {
			if kind, _ := planner.ClassifyArg(v); kind == planner.ArgFill {
				msg := fmt.Sprintf("%s:%d: argument %q is \"\" (fill from context), which needs a model: %s; or give --model PATH or --script, or fix the value", plan.Source, st.Line, k, NoModelHint())
				if rt.noModel.Why != "" && rt.noModel.Why != recoverHint {
					msg += "; " + rt.noModel.Why
				}
				return &Error{Kind: ErrNeedsModel, Err: errors.New(msg)}
			}
		}
	}
	return nil
}

// contextTooSmall names the tokens needed and the setting to raise.
func (rt *Runtime) contextTooSmall(err error) error {
	var small *llm.ContextTooSmallError
	if !errors.As(err, &small) {
		return err
	}
	setting := "--ctx-size"
	if name := rt.opts.SettingName("CtxSize"); strings.Contains(name, "=") {
		setting = config.Var("CtxSize") + " (--ctx-size)" // the value came from the variable
	}
	return &Error{Kind: ErrContextTooSmall, Err: fmt.Errorf("%v; raise %s to at least %d (or lower --max-tokens)", small, setting, small.Need())}
}

func isInvalidPlan(err error) bool {
	var inv *planner.InvalidReplyError
	return errors.As(err, &inv)
}

// life makes every job's events start with run_start and end with one
// termination event, whatever way the job ends: the executor writes its
// own; for plans and for errors before the executor ran, finish writes it.
type life struct {
	rt      *Runtime
	s       *config.Settings // the job's settings
	id      string
	sink    react.Sink
	started bool
	// A conversation's turn: its id, the turn's number and the earlier
	// turns (convID "": not in a conversation).
	convID  string
	turn    int
	earlier []react.ConversationEntry
	files   []react.ContextFile // the job's -f inputs
	// Worked out once from the settings, for run_start, the planner and
	// the executor alike.
	fileNames    []string
	instructions instructions.Instructions
	rec          *runrecord.Writer // the job's record in the run history (nil: none)
	// paramNames makes the job's plan a template (Job.ParamNames).
	paramNames []string
	answer     json.RawMessage // the job's --schema (nil: none)
	jobGate    tools.Gate      // Job.Gate (nil: the runtime's)
	pause      bool            // Job.Pause
	env        *tools.Env      // the workspace: the runtime's, or Job.Workspace's
	// ctx is the caller's, on every event the job emits itself: the
	// telemetry sink continues the caller's trace from it.
	ctx context.Context
	// resumedFrom is the run a resumed or answered job goes on with.
	resumedFrom string
}

// gate is the job's gate: Job.Gate, else the runtime's.
func (l *life) gate() tools.Gate {
	if l.jobGate != nil {
		return l.jobGate
	}
	return l.rt.gate
}

func (rt *Runtime) newLife(job Job) *life {
	id := job.ID
	if id == "" {
		id = react.NewRunID()
	}
	s := rt.S
	if job.Settings != nil {
		s = job.Settings
	}
	l := &life{rt: rt, s: s, id: id, env: rt.Env, sink: react.Sinks{rt.events, job.Events}, files: job.Files, jobGate: job.Gate, pause: job.Pause,
		fileNames: fileNames(job.Files), instructions: rt.projectInstructions(s)}
	if job.Conversation != nil {
		l.turn, l.convID, l.earlier = job.Conversation.next()
	}
	if job.Resume != nil {
		l.resumedFrom = job.Resume.From
	}
	return l
}

func (l *life) emit(event string, fields map[string]any) {
	l.sink.Handle(react.Event{RunID: l.id, Type: event, Time: time.Now(), Fields: fields, Ctx: l.ctx})
}

func (l *life) start(query string) {
	if l.started {
		return
	}
	l.started = true
	fields := map[string]any{"sandbox": l.env.SandboxInfo(), "mode": l.rt.opts.Mode, "backend": l.rt.Info["backend"]}
	if len(l.answer) > 0 {
		// What tact's grammar leaves to the validator (dry run, -v).
		if g, err := grammar.FromSchema(l.answer); err == nil && len(g.Widened) > 0 {
			fields["answer_schema_widened"] = g.Widened
			slog.Debug("answer schema: the grammar widens what the validator then checks", "run", l.id, "keywords", g.Widened)
		}
	}
	if l.convID != "" {
		fields["conversation"], fields["turn"] = l.convID, l.turn
	}
	if l.resumedFrom != "" {
		fields["resumed_from"] = l.resumedFrom // its span names the run it goes on with
	}
	if len(l.instructions.Files) > 0 {
		fields["project_instructions"] = l.instructions.Files
	}
	fields["query"] = l.rt.Redactor.Redact(query)
	if len(l.fileNames) > 0 {
		names := make([]string, len(l.fileNames))
		for i, n := range l.fileNames {
			names[i] = l.rt.Redactor.Redact(n)
		}
		fields["files"] = names
	}
	l.emit(react.EventRunStart, fields)
}

// finish writes the termination event of a job the executor did not end.
func (l *life) finish(err error, usage llm.Usage) {
	l.start("")
	t := TerminationOf(err)
	t.Message = l.rt.Redactor.Redact(t.Message)
	l.emit(react.EventTermination, t.Event(usage))
}

// recordFiles names the job's context files in the header of the plan made
// for it, so that tact exec of the saved plan says what it needs.
func (l *life) recordFiles(plan *planner.Plan) {
	if plan != nil && plan.Header != nil && len(l.files) > 0 {
		plan.Header.Files = l.fileNames
	}
}

// needFiles refuses a saved plan made with context files (its header's
// files) run with fewer -f inputs: its steps were planned with them.
func needFiles(plan *planner.Plan, name string, given int) error {
	h := plan.Header
	if h == nil || len(h.Files) <= given {
		return nil
	}
	return fmt.Errorf("%s:%d: the plan was made with %d context file(s) (%s): give them with -f, in that order",
		name, h.Line, len(h.Files), strings.Join(h.Files, ", "))
}

// useWorkspace makes dir the job's workspace (Job.Workspace): the
// runtime's environment but for the directory, and dir's project
// instructions.
func (l *life) useWorkspace(dir string) error {
	env, err := tools.NewEnv(dir)
	if err != nil {
		return badInputf("workspace: %v", err)
	}
	own := *l.rt.Env
	own.Workspace = env.Workspace
	l.env = &own
	if l.s.ProjectInstructions {
		in, err := instructions.Read(own.Workspace)
		if err != nil {
			slog.Warn("running without the project instructions", "err", err)
			in = instructions.Instructions{}
		}
		l.instructions = in
	}
	return nil
}

// callInfo is ctx telling the backend the run's query and recording each
// reply as a model_reply event (redacted, with its prompt's digest), from
// which tact test record makes a cassette.
func (l *life) callInfo(ctx context.Context, query string) context.Context {
	q := l.rt.Redactor.Redact(query)
	return llm.WithCallInfo(ctx, &llm.CallInfo{Query: q, OnReply: func(req llm.Request, resp llm.Response) {
		l.emit(react.EventModelReply, map[string]any{"kind": req.Kind, "prompt_digest": llm.PromptDigest(req.Messages, q),
			"reply": l.rt.Redactor.Redact(strings.ToValidUTF8(resp.Text, "\uFFFD")), "token_usage": resp.Usage})
	}})
}

// Sampling maps the validated settings to the backend's sampling: for the
// backend a zero field means "its default", so the CLI's 0 ("off") for
// --top-k and --min-p becomes the backend's negative "off".
func Sampling(s *config.Settings) llm.Sampling {
	sm := llm.Sampling{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, MinP: s.MinP, Seed: s.Seed}
	if sm.TopK == 0 {
		sm.TopK = -1
	}
	if sm.MinP == 0 {
		sm.MinP = -1
	}
	return sm
}

// MaxPlanSteps bounds plans in the planner's schema (and so its grammar): a
// small local model is better at short plans, and replans can extend them.
const MaxPlanSteps = 12

// planMaxTokens gives the planner room for several steps.
func planMaxTokens(s *config.Settings) int {
	if s.MaxTokens <= 0 {
		return 0
	}
	return s.MaxTokens * 4
}

// answerSchema is the --schema setting's JSON Schema, compacted (nil:
// none); an error names the setting and, for a schema that breaks the
// meta-schema, the keyword's path.
func answerSchema(s *config.Settings) (json.RawMessage, error) {
	if strings.TrimSpace(s.Schema) == "" {
		return nil, nil
	}
	raw, err := schema.ReadAnswer(s.Schema)
	if err != nil {
		return nil, fmt.Errorf("--schema: %v", err)
	}
	return raw, nil
}

// projectInstructions are the instructions a job with settings s gets.
func (rt *Runtime) projectInstructions(s *config.Settings) instructions.Instructions {
	if !s.ProjectInstructions {
		return instructions.Instructions{}
	}
	return rt.instructions
}

// fileNames are the names of the user's context files (-f), in order.
func fileNames(files []react.ContextFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}
