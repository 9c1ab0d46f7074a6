// Package react is tact's plan-driven ReAct executor: it runs plan steps
// whose arguments are fixed without a model, asks the model for an action
// only when the plan cannot decide, and tracks skips, budget, replans,
// duplicates and stalls.
package react

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
)

// Reason is why a run ended. Each has a stable exit code (docs/cli.md).
type Reason string

const (
	ReasonSuccess       Reason = "success"
	ReasonError         Reason = "error"
	ReasonFailure       Reason = "failure"
	ReasonMaxIterations Reason = "max_iterations"
	ReasonStalled       Reason = "stalled"
	ReasonTokenBudget   Reason = "token_budget"
	ReasonTimeout       Reason = "timeout"
	ReasonCustom        Reason = "custom"
	ReasonCancelled     Reason = "cancelled"
	// ReasonInvalidAnswer: under a --schema, the final answer (a planned
	// one, its fill, or the fallback at a budget's end) does not validate.
	ReasonInvalidAnswer Reason = "invalid_answer"
	// ReasonNeedsInput: the run paused for a person's answer (an ask_user
	// question, or an approval nobody could give); tact answer goes on.
	ReasonNeedsInput Reason = "needs_input"
)

// Reasons lists every termination reason (tact log --reason accepts them).
var Reasons = []Reason{ReasonSuccess, ReasonFailure, ReasonMaxIterations, ReasonStalled, ReasonTokenBudget,
	ReasonTimeout, ReasonCustom, ReasonCancelled, ReasonError, ReasonInvalidAnswer, ReasonNeedsInput}

// ExitCode is the process exit code for r.
func (r Reason) ExitCode() int {
	switch r {
	case ReasonSuccess:
		return 0
	case ReasonFailure:
		return 3
	case ReasonMaxIterations:
		return 4
	case ReasonStalled:
		return 5
	case ReasonTokenBudget:
		return 6
	case ReasonTimeout:
		return 7
	case ReasonCustom:
		return 8
	case ReasonInvalidAnswer:
		return 11
	case ReasonNeedsInput:
		return 12
	case ReasonCancelled:
		return 130
	default:
		return 1
	}
}

// Skip reasons recorded when a planned step cannot run.
const (
	SkipToolNotPermitted = "tool_not_permitted"
	SkipInvalidAction    = "invalid_action"
	SkipDuplicateAction  = "duplicate_action"
	SkipPlanToolMismatch = "plan_tool_mismatch"
	SkipReplanRequested  = "replan_requested"
)

// ExitCodeNotRun is a trace step's exit_code when its action never ran
// (skipped, invalid, duplicate, stalled, a replan): no process status is
// negative, so scripts can tell it from any command's exit status, and it is
// non-zero, so `.exit_code != 0` sees every step that did not succeed.
const ExitCodeNotRun = -1

// Action is a tool call: from a plan row or from the model.
type Action struct {
	Thought string          `json:"thought,omitempty"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
}

// ToolCall is the action part of a trace step.
type ToolCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// StepTrace is one attempt in the result's trace.
type StepTrace struct {
	Iteration   int       `json:"iteration"`
	Thought     string    `json:"thought"`
	Action      ToolCall  `json:"action"`
	Observation string    `json:"observation"`
	Error       string    `json:"error,omitempty"`
	ExitCode    int       `json:"exit_code"`
	SkipReason  string    `json:"skip_reason,omitempty"`
	Source      string    `json:"source"` // "plan" or "model"
	PlanStep    int       `json:"plan_step,omitempty"`
	Decision    string    `json:"decision,omitempty"`
	Timestamp   time.Time `json:"timestamp"`
	TokenUsage  llm.Usage `json:"token_usage"`
	// ContextTokens is the size of the prompt that chose a model step,
	// counted before the call (the window's fill, cached part included).
	ContextTokens int `json:"context_tokens,omitempty"`
	// Hooks are the hook programs that ran for this step (PreToolUse,
	// PostToolUse, Stop), in order.
	Hooks []hooks.Run `json:"hooks,omitempty"`
}

// State is the executor's bookkeeping, exposed for scripts and tests.
type State struct {
	MaxSteps            int    `json:"max_steps"`
	Attempts            int    `json:"attempts"`
	RetryCount          int    `json:"retry_count"`
	Step                int    `json:"step"`
	PlanIndex           int    `json:"plan_index"`
	PendingPlanStep     int    `json:"pending_plan_step,omitempty"` // 1-based; 0 when the plan is used up
	PlanSkipReason      string `json:"plan_skip_reason,omitempty"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	Replans             int    `json:"replans"`
	Compactions         int    `json:"compactions"` // times older steps were summarized to fit the context window
}

// Result of a run.
type Result struct {
	RunID   string `json:"run_id,omitempty"`
	Success bool   `json:"success"`
	// FinalAnswer is the answer as stdout prints it; under a --schema the
	// answer's JSON value, compact on one line (Answer holds it as JSON).
	FinalAnswer       string    `json:"final_answer"`
	TerminationReason Reason    `json:"termination_reason"`
	Message           string    `json:"message,omitempty"`
	Iterations        int       `json:"iterations"`
	TokenUsage        llm.Usage `json:"token_usage"`
	ExecutionTimeMS   int64     `json:"execution_time_ms"`
	State             State     `json:"state"`
	Trace             struct {
		Steps []StepTrace `json:"steps"`
	} `json:"trace"`

	// Answer is the final answer as a JSON value when the run had an
	// answer schema (Options.AnswerSchema): --json writes it, not a
	// string, as final_answer. nil without a schema.
	Answer json.RawMessage `json:"-"`
	// AnswerError is why the answer did not validate against the answer
	// schema (reason invalid_answer).
	AnswerError string `json:"answer_error,omitempty"`
	// Question is what a paused run (needs_input) waits for.
	Question *Question `json:"question,omitempty"`
	// Hooks are the RunStart hook programs that ran; each step lists its own.
	Hooks []hooks.Run `json:"hooks,omitempty"`

	// Conversation is the earlier turns the run was given, as it used
	// them (the oldest perhaps folded into a summary): the next turn of the
	// conversation starts from these, so its prompt prefix is the same.
	Conversation []ConversationEntry `json:"-"`

	// cancelExitCode is the exit code a cancellation's cause asked for
	// (143 for SIGTERM); 0 means the reason's own.
	cancelExitCode int
}

// ExitCoder is implemented by a context's cancellation cause that knows the
// process exit code it stands for, such as a signal (130, 143).
type ExitCoder interface{ ExitCode() int }

// ExitCode of the run.
func (r *Result) ExitCode() int {
	if r.TerminationReason == ReasonCancelled && r.cancelExitCode != 0 {
		return r.cancelExitCode
	}
	return r.TerminationReason.ExitCode()
}

// MarshalJSON writes the result; under an answer schema final_answer is
// the answer's JSON value. Without one the output is the plain struct's.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	if r.Answer == nil {
		return text.JSON(plain(r))
	}
	// The answer's value goes where the string would: final_answer keeps
	// its place after success, the fields before it being an id and a bool.
	r.FinalAnswer = ""
	b, err := text.JSON(plain(r))
	if err != nil {
		return nil, err
	}
	field := []byte(`,"final_answer":""`)
	i := bytes.Index(b, field)
	if i < 0 {
		return nil, fmt.Errorf("result: no final_answer field")
	}
	var answer bytes.Buffer
	if err := json.Compact(&answer, r.Answer); err != nil {
		return nil, fmt.Errorf("result: final answer: %w", err)
	}
	out := make([]byte, 0, len(b)+answer.Len())
	out = append(append(out, b[:i+len(field)-2]...), answer.Bytes()...)
	return append(out, b[i+len(field):]...), nil
}

// UnmarshalJSON reads what MarshalJSON writes (a recorded result): a
// final_answer that is not a string is an answer under a schema.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var aux struct {
		*plain
		FinalAnswer json.RawMessage `json:"final_answer"`
	}
	aux.plain = (*plain)(r)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.FinalAnswer, r.Answer = "", nil
	raw := bytes.TrimSpace(aux.FinalAnswer)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		return json.Unmarshal(raw, &r.FinalAnswer)
	default:
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return err
		}
		r.Answer = json.RawMessage(c.Bytes())
		r.FinalAnswer = c.String()
	}
	return nil
}
