package react

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/tactcli/tact/internal/text"

	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// An answer schema (Options.AnswerSchema, tact's --schema) makes the final
// answer a JSON value that validates against it. The run's registry then
// holds answerTool in place of final_answer, so every schema built from
// the tools (the action schema and the llama grammar made from it, the
// fill of a planned final answer, the system prompt's tool list) asks for
// that value; whatever the grammar could not express is checked here.

// answerTool is final_answer with the answer schema as its answer.
type answerTool struct {
	tools.FinalAnswerTool
	answer json.RawMessage // the answer schema
	args   json.RawMessage
}

// CheckLiteral checks a saved plan's literal answer when the plan is
// read with the check the run makes of every answer (schema.CheckAnswer).
func (t answerTool) CheckLiteral(arg string, value json.RawMessage) (bool, error) {
	if arg != "answer" {
		return false, nil
	}
	_, err := schema.CheckAnswer(t.answer, value, arg)
	return true, err
}

func (t answerTool) Schema() json.RawMessage { return t.args }
func (answerTool) Description() string {
	return "Finish the task and give the final answer: a JSON value following the answer schema."
}

// AnswerRegistry is reg with final_answer's answer following the answer
// schema answer: a saved plan parsed with it may give its answer as a
// literal JSON value, checked against the schema with FILE:LINE.
func AnswerRegistry(reg *tools.Registry, answer json.RawMessage) *tools.Registry {
	list := reg.List()
	for i, t := range list {
		if t.Name() == tools.FinalAnswer {
			list[i] = answerTool{answer: answer, args: schema.FinalAnswerArgs(answer)}
		}
	}
	return tools.NewRegistry(list...)
}

// setAnswerSchema compiles the answer schema and gives the run its
// registry; an answer schema that does not compile is an error (callers
// check it before the run: schema.CompileAnswer).
func (r *run) setAnswerSchema() error {
	if len(r.e.AnswerSchema) == 0 {
		return nil
	}
	v, err := schema.Compile(r.e.AnswerSchema)
	if err != nil {
		return fmt.Errorf("answer schema: %w", err)
	}
	r.answerV = v
	if r.e.Registry != nil {
		r.e.Registry = AnswerRegistry(r.e.Registry, r.e.AnswerSchema)
	}
	return nil
}

// answerError is a planned final answer (its $jq value, its fill) that
// does not validate against the answer schema: the run ends with
// ReasonInvalidAnswer.
type answerError struct{ err error }

func (e *answerError) Error() string { return "final answer: " + e.err.Error() }

// checkAnswer validates a final answer's JSON value and returns it compact.
func (r *run) checkAnswer(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("no answer")
	}
	return schema.CheckAnswer(r.e.AnswerSchema, raw)
}

// answerArg is the "answer" argument of a final_answer action.
func answerArg(args json.RawMessage) json.RawMessage {
	var fa struct {
		Answer json.RawMessage `json:"answer"`
	}
	_ = json.Unmarshal(args, &fa)
	return fa.Answer
}

// shapeAnswer turns an answer that ends the run into the answer schema's
// value: the text as JSON (final answers are passed compact), else the
// text as a JSON string (a summary, an observation), whichever validates.
func (r *run) shapeAnswer(answer string) (json.RawMessage, error) {
	if answer == "" {
		return nil, fmt.Errorf("no answer")
	}
	if json.Valid([]byte(answer)) {
		if v, err := r.checkAnswer(json.RawMessage(answer)); err == nil {
			return v, nil
		}
	}
	str, err := text.JSON(answer)
	if err != nil {
		return nil, err
	}
	v, err := r.checkAnswer(str)
	if err != nil {
		if json.Valid([]byte(answer)) {
			_, err = r.checkAnswer(json.RawMessage(answer))
		}
		return nil, err
	}
	return v, nil
}

// redactedAnswer is the valid answer v as it will be printed, redacted;
// an error when redaction changed it and the redacted value no longer
// validates (the error says redaction did it, and holds no secret).
func (r *run) redactedAnswer(v json.RawMessage) (json.RawMessage, error) {
	red := r.redactJSON(v)
	if bytes.Equal(red, v) {
		return v, nil
	}
	c, err := schema.CheckAnswer(r.e.AnswerSchema, red)
	if err != nil {
		return nil, fmt.Errorf("once redacted (a --redact pattern or a secret matched in it): %v", err)
	}
	return c, nil
}

// endInvalidAnswer ends the run because no answer validates.
func (r *run) endInvalidAnswer(why string, err error) {
	r.res.AnswerError = r.e.Redact(err.Error())
	r.end(ReasonInvalidAnswer, "", why+": "+err.Error())
}
