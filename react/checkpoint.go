package react

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
)

// CheckpointVersion is the layout of Checkpoint; a resume refuses another.
const CheckpointVersion = 1

// Checkpoint is a run's state between two iterations of its loop: all a
// later process needs to go on from there (Executor.Resume) without
// repeating a tool run that finished. Every text in it is redacted, as the
// model saw it; a resumed run's $jq arguments therefore see earlier
// outputs as stored, secrets hidden.
type Checkpoint struct {
	Version    int               `json:"version"`
	Query      string            `json:"query"`
	Plan       []json.RawMessage `json:"plan,omitempty"` // rows as Plan.WriteJSONL writes them
	PlanSource string            `json:"plan_source,omitempty"`
	State      State             `json:"state"`
	Usage      llm.Usage         `json:"token_usage"`
	ElapsedMS  int64             `json:"elapsed_ms"` // of the run (segment) that took it

	Hist         []CheckpointMessage         `json:"history"`
	Turn         int                         `json:"turn"`
	TraceTurn    []int                       `json:"trace_turn"`
	SummarizedTo int                         `json:"summarized_to"`
	Records      []CheckpointRecord          `json:"records"`
	Transcript   []planner.TranscriptEntry   `json:"transcript,omitempty"`
	Steps        []StepTrace                 `json:"steps"`
	Conversation []CheckpointConversationRow `json:"conversation,omitempty"`

	ForceModel      bool   `json:"force_model,omitempty"`
	AskReason       string `json:"ask_reason,omitempty"`
	ReplanDue       bool   `json:"replan_due,omitempty"`
	ReplanWhy       string `json:"replan_why,omitempty"`
	DivergenceSpent bool   `json:"divergence_spent,omitempty"`
	LastOK          string `json:"last_ok,omitempty"`
	LastOKStep      int    `json:"last_ok_step,omitempty"`
	LastKey         string `json:"last_key,omitempty"`
	SameInRow       int    `json:"same_in_row,omitempty"`
	ReadsInRow      int    `json:"reads_in_row,omitempty"`

	// Pending is the call a paused run (ReasonNeedsInput) waits on.
	Pending *Pending `json:"pending,omitempty"`
}

// CheckpointMessage is one message of the model's view.
type CheckpointMessage struct {
	Role    llm.Role `json:"role"`
	Content string   `json:"content"`
	Turn    int      `json:"turn"`
	Kind    int      `json:"kind"`
}

// CheckpointRecord is one tool run of the $jq-visible state.
type CheckpointRecord = stepRecord

// CheckpointConversationRow is one earlier turn the run was given.
type CheckpointConversationRow struct {
	First   int      `json:"first"`
	Last    int      `json:"last"`
	Summary bool     `json:"summary,omitempty"`
	Text    string   `json:"text"`
	Brief   []string `json:"brief,omitempty"`
}

// checkpoint takes the run's state; every text redacted.
func (r *run) checkpoint() Checkpoint {
	cp := Checkpoint{
		Version: CheckpointVersion, Query: r.e.Redact(r.query), State: *r.st, Usage: r.res.TokenUsage,
		ElapsedMS: time.Since(r.start).Milliseconds(),
		Turn:      r.turn, TraceTurn: append([]int(nil), r.traceTurn...), SummarizedTo: r.summarizedTo,
		Steps:      append([]StepTrace(nil), r.res.Trace.Steps...),
		ForceModel: r.forceModel, AskReason: r.e.Redact(r.askReason), ReplanDue: r.replanDue, ReplanWhy: r.replanWhy,
		DivergenceSpent: r.divergenceSpent, LastOK: r.e.Redact(r.lastOK), LastOKStep: r.lastOKStep,
		LastKey: r.e.Redact(r.lastKey), SameInRow: r.sameInRow, ReadsInRow: r.readsInRow,
		Transcript: append([]planner.TranscriptEntry(nil), r.transcript...),
	}
	if r.plan != nil {
		cp.Plan, cp.PlanSource = r.plan.Rows(), r.plan.Source
		for i, row := range cp.Plan {
			cp.Plan[i] = r.redactJSON(row)
		}
	}
	for _, m := range r.hist {
		cp.Hist = append(cp.Hist, CheckpointMessage{Role: m.Role, Content: m.Content, Turn: m.turn, Kind: int(m.kind)})
	}
	for _, rec := range r.records[min(len(r.cpRecords), len(r.records)):] {
		rec.Args = r.redactJSON(rec.Args)
		rec.Output = r.e.Redact(rec.Output)
		if rec.Error != nil {
			e := r.e.Redact(*rec.Error)
			rec.Error = &e
		}
		r.cpRecords = append(r.cpRecords, rec)
	}
	cp.Records = slices.Clip(r.cpRecords)
	for _, c := range r.res.Conversation {
		cp.Conversation = append(cp.Conversation, CheckpointConversationRow{First: c.First, Last: c.Last, Summary: c.Summary, Text: c.Text, Brief: c.brief})
	}
	return cp
}

// ErrCheckpoint is wrapped by every error about a checkpoint that cannot
// be resumed.
var ErrCheckpoint = errors.New("checkpoint cannot be resumed")

// restore puts cp's state into a run newRun made for the same query and
// plan: the model's view, the plan as revised, the counters and the
// records, so the loop goes on where cp was taken.
func (r *run) restore(cp *Checkpoint, fresh Budget) error {
	if cp.Version != CheckpointVersion {
		return fmt.Errorf("%w: layout %d, this tact reads %d", ErrCheckpoint, cp.Version, CheckpointVersion)
	}
	if len(cp.Hist) == 0 {
		return fmt.Errorf("%w: it holds no conversation", ErrCheckpoint)
	}
	if len(cp.Plan) > 0 {
		var buf bytes.Buffer
		for _, row := range cp.Plan {
			buf.Write(row)
			buf.WriteByte('\n')
		}
		p, err := planner.Parse(&buf, cp.PlanSource, r.e.Registry)
		if err != nil {
			return fmt.Errorf("%w: its plan: %v", ErrCheckpoint, err)
		}
		r.plan = p
		r.setAllowed()
	}
	r.e.NoPlan = r.plan == nil
	if err := cp.check(r.plan); err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	r.hist = r.hist[:0]
	for _, m := range cp.Hist {
		r.hist = append(r.hist, histMsg{Message: llm.Message{Role: m.Role, Content: m.Content}, turn: m.Turn, kind: histKind(m.Kind)})
	}
	r.initWindow()
	*r.st = cp.State
	r.turn, r.traceTurn, r.summarizedTo = cp.Turn, cp.TraceTurn, cp.SummarizedTo
	r.records, r.transcript = cp.Records, cp.Transcript
	r.cpRecords = slices.Clone(cp.Records) // stored redacted already
	r.res.Trace.Steps = cp.Steps
	r.res.Conversation = nil
	for _, c := range cp.Conversation {
		r.res.Conversation = append(r.res.Conversation, ConversationEntry{First: c.First, Last: c.Last, Summary: c.Summary, Text: c.Text, brief: c.Brief})
	}
	r.forceModel, r.askReason, r.replanDue, r.replanWhy = cp.ForceModel, cp.AskReason, cp.ReplanDue, cp.ReplanWhy
	r.divergenceSpent, r.lastOK, r.lastOKStep = cp.DivergenceSpent, cp.LastOK, cp.LastOKStep
	r.lastKey, r.sameInRow, r.readsInRow = cp.LastKey, cp.SameInRow, cp.ReadsInRow
	if fresh == BudgetFresh {
		// The earlier run ended at its budget: the resumed one gets the
		// same budget again from here.
		if r.plan != nil {
			want := len(r.plan.Steps) - r.st.PlanIndex + r.e.RetryBuffer
			if m := r.e.MaxIterations; m > 0 {
				want = min(want, m) // --max-iterations bounds the new budget too
			}
			r.st.MaxSteps = r.st.Attempts + want
		} else {
			r.st.MaxSteps = r.st.Attempts + r.e.freeBudget()
		}
	}
	return nil
}

// Budget says what a resumed run's step budget is.
type Budget int

const (
	// BudgetKept goes on with the checkpoint's budget (the run was cut by
	// a signal, a crash or its timeout).
	BudgetKept Budget = iota
	// BudgetFresh gives the resumed run a new budget from its checkpoint
	// (the run ended at its step or token budget).
	BudgetFresh
)

// check refuses a checkpoint whose parts do not fit together (a damaged or
// hand-edited record): the loop indexes by them.
func (cp *Checkpoint) check(plan *planner.Plan) error {
	st := cp.State
	planSteps := 0
	if plan != nil {
		planSteps = len(plan.Steps)
	}
	switch {
	case len(cp.TraceTurn) != len(cp.Steps):
		return fmt.Errorf("%d steps but %d step turns", len(cp.Steps), len(cp.TraceTurn))
	case st.PlanIndex < 0 || st.PlanIndex > planSteps:
		return fmt.Errorf("plan index %d of a %d-step plan", st.PlanIndex, planSteps)
	case st.Attempts < 0 || st.MaxSteps < 0 || st.Step < 0 || st.RetryCount < 0 || st.Replans < 0 ||
		st.ConsecutiveFailures < 0 || st.Compactions < 0 || cp.Turn < 0 || cp.SummarizedTo < 0:
		return errors.New("a negative counter")
	}
	for _, m := range cp.Hist {
		if m.Kind < int(histPinned) || m.Kind > int(histPlan) {
			return fmt.Errorf("a message of unknown kind %d", m.Kind)
		}
	}
	return nil
}
