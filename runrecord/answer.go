package runrecord

// Paused runs (reason needs_input) and their answers: what tact answer
// checks, what it makes of the answer, and the object a pause prints.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/schema"
)

// AnswerInput is tact answer's answer as given: free text, a JSON value
// (--value), or an approval's --approve, --always or --deny.
type AnswerInput struct {
	Text                  string
	Value                 json.RawMessage
	HasText               bool
	Approve, Always, Deny bool
}

// Paused checks that rec waits for an answer nobody gave yet. pending
// says its checkpoint holds a waiting call: a run killed after it paused,
// before its end was recorded (interrupted), waits all the same.
func (b *Book) Paused(ctx context.Context, rec history.Record, pending bool) error {
	cut := rec.Reason == history.ReasonInterrupted && pending
	if rec.Reason != string(react.ReasonNeedsInput) && !cut {
		if !rec.Ended || rec.Reason == "" {
			// The history cannot tell a live run from a killed one.
			return inputErrorf("run %s is not waiting for an answer (its end is not recorded: it is still running, or was cut before it paused); tact log --reason needs_input lists what waits", rec.ID)
		}
		return inputErrorf("run %s is not waiting for an answer (it ended: %s); tact log --reason needs_input lists what waits", rec.ID, rec.Reason)
	}
	by, err := b.st.ResumedBy(ctx, rec.ID)
	if err != nil {
		return inputErrorf("run history: %v", err)
	}
	if by != "" {
		return inputErrorf("run %s was answered already: run %s goes on with it (tact log show %s)", rec.ID, by, by)
	}
	return nil
}

// ClaimAnswer takes rec's answer lock (history.Store.ClaimAnswer): a run
// another tact answer (or request) is answering now is refused with one
// line. Check Paused after taking it.
func (b *Book) ClaimAnswer(rec history.Record) (release func(), err error) {
	release, err = b.st.ClaimAnswer(rec.ID)
	if errors.Is(err, history.ErrClaimed) {
		return nil, inputErrorf("run %s is being answered now by another tact answer or request; tact log --reason needs_input lists what still waits", rec.ID)
	}
	if err != nil {
		return nil, inputError(err)
	}
	return release, nil
}

// PendingOf reads the call a paused run's checkpoint waits on.
func PendingOf(runID string, checkpoint []byte) (*react.Pending, error) {
	var cp struct {
		Pending *react.Pending `json:"pending"`
	}
	if len(checkpoint) == 0 || json.Unmarshal(checkpoint, &cp) != nil || cp.Pending == nil {
		return nil, inputErrorf("run %s: its checkpoint holds no question", runID)
	}
	return cp.Pending, nil
}

// MaxAnswer bounds an answer's size in bytes: a person's answer, which a
// client of tact serve or tact mcp serve could otherwise make as large as
// its request.
const MaxAnswer = 64 << 10

// MakeAnswer checks in against the question q and makes it the pending
// call's outcome: a question takes text or a value (validated against its
// schema; one of its options when it has them), an approval takes
// --approve, --always or --deny. A bad answer is an InputError.
func MakeAnswer(q react.Question, in AnswerInput) (react.Answer, error) {
	flags := 0
	for _, f := range []bool{in.HasText, in.Value != nil, in.Approve, in.Always, in.Deny} {
		if f {
			flags++
		}
	}
	if flags != 1 {
		return react.Answer{}, inputErrorf("give one answer: TEXT, --value JSON, --approve, --always or --deny")
	}
	if q.Kind == react.KindApproval {
		if q.SecretArgs && (in.Approve || in.Always) {
			return react.Answer{}, inputErrorf("the waiting call's arguments held a secret, which tact does not store, so it cannot run from the pause: answer --deny, or add an allow rule for the call (docs/safety.md) and run the query again")
		}
		switch {
		case in.Approve:
			return react.Answer{Approve: true}, nil
		case in.Always:
			return react.Answer{Approve: true, Always: true}, nil
		case in.Deny:
			return react.Answer{Deny: "denied by user: tact answer --deny"}, nil
		}
		return react.Answer{}, inputErrorf("this run waits for an approval: answer --approve, --always or --deny")
	}
	if in.Approve || in.Always || in.Deny {
		return react.Answer{}, inputErrorf("this run waits for an answer to a question, not an approval: give TEXT or --value JSON")
	}
	text := in.Text
	if in.Value != nil {
		if !json.Valid(in.Value) {
			return react.Answer{}, inputErrorf("--value: not valid JSON")
		}
		text = string(in.Value)
	}
	if strings.TrimSpace(text) == "" {
		return react.Answer{}, inputErrorf("the answer is empty")
	}
	if len(text) > MaxAnswer {
		return react.Answer{}, inputErrorf("the answer is %d bytes: at most %d (it is the model's next observation and kept in the run history)", len(text), MaxAnswer)
	}
	isValue := in.Value != nil
	if len(q.Options) > 0 {
		// An option is the answer, given as TEXT or as --value's JSON
		// string: a value cannot slip past the options.
		pick := text
		if isValue && json.Unmarshal(in.Value, &pick) != nil {
			return react.Answer{}, inputErrorf("--value: this question takes one of its options, as a JSON string: %s", optionList(q.Options))
		}
		found := false
		for _, o := range q.Options {
			if strings.EqualFold(strings.TrimSpace(pick), o) {
				text, found, isValue = o, true, false
				break
			}
		}
		if !found {
			return react.Answer{}, inputErrorf("the answer must be one of: %s", optionList(q.Options))
		}
	}
	if len(q.Schema) > 0 {
		value := []byte(text)
		if !isValue && !json.Valid(value) {
			// Free text stands for a JSON string.
			value, _ = json.Marshal(text)
		}
		checked, err := schema.CheckAnswer(q.Schema, value)
		if err != nil {
			return react.Answer{}, inputErrorf("the answer does not validate against the question's schema: %v", err)
		}
		text = string(checked)
	}
	return react.Answer{Text: text}, nil
}

// maxListed bounds the options an error line names: a question may have
// thousands, and the line is to be read.
const maxListed = 20

// optionList is options for one line: the first maxListed, then how many
// more (tact log show RUN has them all).
func optionList(options []string) string {
	if len(options) <= maxListed {
		return strings.Join(options, ", ")
	}
	return fmt.Sprintf("%s, and %d more (tact log show RUN lists them)", strings.Join(options[:maxListed], ", "), len(options)-maxListed)
}

// PauseDoc is the one JSON object a paused run prints on stdout: what it
// waits for and the command that answers it.
type PauseDoc struct {
	RunID    string          `json:"run_id"`
	Status   string          `json:"status"`
	Kind     string          `json:"kind"`
	Question string          `json:"question"`
	Options  []string        `json:"options,omitempty"`
	Schema   json.RawMessage `json:"schema,omitempty"`
	Call     *react.ToolCall `json:"call,omitempty"`
	Answer   string          `json:"answer_with"`
}

// Pause is res's PauseDoc (res ended with needs_input); its texts are
// redacted already (react.Question).
func Pause(res *react.Result) PauseDoc {
	q := react.Question{}
	if res.Question != nil {
		q = *res.Question
	}
	d := PauseDoc{RunID: res.RunID, Status: string(react.ReasonNeedsInput), Kind: q.Kind, Question: q.Question, Options: q.Options, Schema: q.Schema, Call: q.Call}
	switch {
	case q.Kind == react.KindApproval && q.SecretArgs:
		d.Answer = fmt.Sprintf("tact answer %s --deny", res.RunID)
	case q.Kind == react.KindApproval:
		// A command a shell runs as it is: "--approve|--always|--deny"
		// pasted would pipe, approving the call.
		d.Answer = fmt.Sprintf("tact answer %s --approve  # or --always, --deny", res.RunID)
	case len(q.Schema) > 0:
		d.Answer = fmt.Sprintf("tact answer %s --value JSON", res.RunID)
	default:
		d.Answer = fmt.Sprintf("tact answer %s TEXT", res.RunID)
	}
	return d
}
