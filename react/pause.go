package react

// Runs that pause for an answer (docs/history.md#runs-that-wait-for-you):
// an ask_user call, or an approval nobody could give (--on-approval
// pause), ends the run with ReasonNeedsInput after a checkpoint that holds
// the call waiting (Checkpoint.Pending). ResumeAnswer goes on from there:
// the answer is that call's observation, and no finished tool run is
// repeated.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// Question kinds.
const (
	KindQuestion = "question" // ask_user
	KindApproval = "approval" // a write/exec call waiting for approval
)

// DecisionAnswered is the decision of an ask_user step a person answered.
const DecisionAnswered = "answered"

// Question is what a paused run waits for; every text redacted.
type Question struct {
	Kind     string          `json:"kind"`
	Question string          `json:"question"`
	Options  []string        `json:"options,omitempty"`
	Schema   json.RawMessage `json:"schema,omitempty"`
	// Call is the tool call an approval is about.
	Call *ToolCall `json:"call,omitempty"`
	// SecretArgs: the call's arguments held a secret, which tact never
	// writes down, so the call kept in the checkpoint is redacted and
	// cannot run from it: an approval can only be denied (tact answer
	// refuses --approve and --always; docs/history.md).
	SecretArgs bool `json:"secret_args,omitempty"`
}

// Pending is the call a paused run waits on, kept in its checkpoint.
type Pending struct {
	Action   Action    `json:"action"`
	Source   string    `json:"source"`
	Usage    llm.Usage `json:"token_usage"`
	Question Question  `json:"question"`
}

// Answer is what ResumeAnswer makes the pending call's outcome.
type Answer struct {
	// Text is an ask_user call's observation (checked already).
	Text string
	// Approve runs the pending write/exec call; Always also adds the
	// narrowed allow rule (through an AlwaysGate). Neither: Deny.
	Approve, Always bool
	// Deny is the denial an approval gets as its observation.
	Deny string
}

// AlwaysGate is a Gate that can approve a call "always", adding the allow
// rule its terminal prompt would (policy's gate).
type AlwaysGate interface {
	ApproveAlways(env *tools.Env, c tools.Call) tools.Verdict
}

// Asker asks a person a question inline (a terminal); nil in Options: no
// one can be asked now, so ask_user pauses the run.
type Asker func(ctx context.Context, question string, options []string) (string, error)

// ask answers an ask_user call s: bad arguments or schema are its failed
// result; a person at a terminal answers it inline; else the run pauses
// (false: the walk ends here).
func (r *run) ask(s *step) bool {
	q, err := tools.ParseQuestion(s.act.Args)
	if err == nil && len(q.Schema) > 0 {
		_, err = schema.CompileAnswer(q.Schema)
		if err != nil {
			err = fmt.Errorf("ask_user: the answer schema: %v", err)
		}
	}
	if err != nil {
		s.hold(tools.Result{Err: err})
		return true
	}
	if r.e.Asker != nil {
		ans, err := r.e.Asker(r.ctx, r.e.Redact(q.Question), q.Options)
		if err == nil && len(q.Schema) > 0 {
			_, err = schema.CheckAnswer(q.Schema, []byte(ans))
		}
		if err != nil {
			s.hold(tools.Result{Err: fmt.Errorf("ask_user: no answer: %v", err)})
			return true
		}
		s.decision = DecisionAnswered
		s.hold(tools.Result{Output: ans})
		return true
	}
	r.pause(s, Question{Kind: KindQuestion, Question: q.Question, Options: q.Options, Schema: q.Schema})
	return false
}

// pause ends the run waiting for q about s: the checkpoint holds s as
// the pending call, redacted.
func (r *run) pause(s *step, q Question) {
	q.Question = r.e.Redact(q.Question)
	for i, o := range q.Options {
		q.Options[i] = r.e.Redact(o)
	}
	if len(q.Schema) > 0 {
		q.Schema = r.redactJSON(q.Schema)
	}
	act := Action{Thought: r.e.Redact(s.act.Thought), Tool: s.act.Tool, Args: r.redactJSON(s.act.Args)}
	if q.Kind == KindApproval {
		c := act.call()
		q.Call = &c
		if !bytes.Equal(act.Args, s.act.Args) {
			q.SecretArgs = true
			q.Question += " (Its arguments hold a secret, which tact does not store, so it cannot run from this pause: deny it, or add an allow rule for it and run again.)"
		}
	}
	if r.e.OnCheckpoint != nil {
		r.syncPending()
		cp := r.checkpoint()
		cp.Pending = &Pending{Action: act, Source: s.source, Usage: s.usage, Question: q}
		r.checkpointed = len(r.res.Trace.Steps)
		r.e.OnCheckpoint(r.id, cp)
	}
	r.res.Question = &q
	r.end(ReasonNeedsInput, "", fmt.Sprintf("waiting for an answer: tact answer %s", r.id))
}

// ResumeAnswer goes on with a paused run from its checkpoint cp (which
// holds the pending call) under the run id id: ans is the pending call's
// outcome, then the loop continues as Resume's does.
func (e *Executor) ResumeAnswer(ctx context.Context, id string, cp *Checkpoint, ans Answer) (*Result, error) {
	if cp.Pending == nil {
		return nil, fmt.Errorf("%w: it waits for no answer", ErrCheckpoint)
	}
	r := e.newRun(ctx, id, cp.Query, nil, false)
	if err := r.restore(cp, BudgetKept); err != nil {
		return nil, err
	}
	if _, ok := r.e.Registry.Get(cp.Pending.Action.Tool); !ok {
		return nil, fmt.Errorf("%w: its pending tool %s is not offered", ErrCheckpoint, cp.Pending.Action.Tool)
	}
	r.checkpointed = len(r.res.Trace.Steps)
	r.resumed = true
	r.answer = &answered{p: cp.Pending, a: ans}
	r.main()
	return r.finish(), nil
}

// answered is a pending call and its answer, applied as the resumed
// run's loop starts.
type answered struct {
	p *Pending
	a Answer
}

// applyAnswer finishes the pending call's walk through perform's stages
// with the answer as its outcome.
func (r *run) applyAnswer() {
	p, a := r.answer.p, r.answer.a
	r.answer = nil
	tool, _ := r.e.Registry.Get(p.Action.Tool)
	s := &step{act: p.Action, source: p.Source, usage: p.Usage, pending: r.pending(), tool: tool}
	s.matchesPlan = s.pending != nil && s.act.Tool == s.pending.Tool
	if s.matchesPlan {
		s.planStep = r.st.PlanIndex + 1
	}
	s.key = s.act.Tool + " " + canonical(s.act.Args)
	r.emit(EventAction, map[string]any{"iteration": len(r.res.Trace.Steps) + 1, "tool": s.act.Tool, "args": s.act.Args, "source": s.source, "thought": s.act.Thought, "answered": true})
	switch {
	case p.Question.Kind == KindQuestion:
		s.decision = DecisionAnswered
		s.hold(tools.Result{Output: a.Text})
	case a.Approve:
		s.decision = "approved"
		if a.Always {
			s.decision = "approved_always"
			if g, ok := r.e.Gate.(AlwaysGate); ok {
				v := g.ApproveAlways(r.e.Env, tools.Call{Tool: tool, Args: s.act.Args})
				s.decision = v.Decision
				if !v.Allowed {
					s.hold(tools.Result{Err: errors.New(v.Reason)})
				}
			}
		}
	default:
		s.decision = "rejected"
		why := a.Deny
		if why == "" {
			why = "denied by user: tact answer --deny"
		}
		s.hold(tools.Result{Err: errors.New(why)})
	}
	if !r.execute(s) {
		return
	}
	r.observe(s)
	r.account(s)
}
