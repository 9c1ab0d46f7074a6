package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// AskUser is the name of the tool that asks the user a question.
const AskUser = "ask_user"

// AskUserTool is ask_user: the model asks the user a question only they
// can answer; the answer is the call's observation. The executor answers
// it (a terminal asks inline; without one the run pauses, exit 12); run
// directly, as a plain tool, nobody can be asked.
type AskUserTool struct{}

var askUserSchema = schemaObject(map[string]any{
	"question": map[string]any{"type": "string", "minLength": 1, "description": "The question, complete and on its own: the user sees only this."},
	"options":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}, "description": "Answers to choose from, when the answer is one of a few."},
	"schema":   map[string]any{"type": "object", "description": "A JSON Schema the answer must validate against, when it is data."},
}, "question")

func (AskUserTool) Name() string { return AskUser }
func (AskUserTool) Description() string {
	return "Ask the user a question that only they can answer (which of two configs is live, what a name should be). Use it only when the task cannot go on without the answer; the answer is the observation."
}
func (AskUserTool) Class() Class            { return ClassRead }
func (AskUserTool) Schema() json.RawMessage { return askUserSchema }
func (AskUserTool) Declare() Decl           { return Decl{} }

// ErrNobodyToAsk is ask_user's error where no person can be asked.
var ErrNobodyToAsk = errors.New("ask_user: nobody can be asked in this run")

func (t AskUserTool) Run(_ context.Context, _ *Env, raw json.RawMessage) Result {
	if _, err := ParseQuestion(raw); err != nil {
		return toolFail(err)
	}
	return toolFail(ErrNobodyToAsk)
}

// Question is an ask_user call's arguments.
type Question struct {
	Question string          `json:"question"`
	Options  []string        `json:"options,omitempty"`
	Schema   json.RawMessage `json:"schema,omitempty"`
}

// ParseQuestion reads ask_user's arguments strictly: one object, the
// three names only, a non-empty question, options strings, schema an
// object.
func ParseQuestion(raw json.RawMessage) (Question, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Question{}, fmt.Errorf("%s: arguments must be a JSON object", AskUser)
	}
	var q Question
	for k, v := range m {
		if string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		var err error
		switch k {
		case "question":
			err = json.Unmarshal(v, &q.Question)
		case "options":
			err = json.Unmarshal(v, &q.Options)
			for _, o := range q.Options {
				if strings.TrimSpace(o) == "" {
					err = errors.New("an empty option")
				}
			}
		case "schema":
			if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' {
				err = errors.New("want a JSON Schema object")
			}
			q.Schema = v
		default:
			return Question{}, fmt.Errorf("%s: unknown argument %q (accepted: question, options, schema)", AskUser, k)
		}
		if err != nil {
			return Question{}, fmt.Errorf("%s: argument %q: %v", AskUser, k, err)
		}
	}
	if strings.TrimSpace(q.Question) == "" {
		return Question{}, fmt.Errorf("%s: missing required argument \"question\"", AskUser)
	}
	return q, nil
}

// DecisionNeedsInput is a Gate's decision for a call nobody could approve
// now when the run is to pause for it (--on-approval pause); Reason is the
// question.
const DecisionNeedsInput = "needs_input"
