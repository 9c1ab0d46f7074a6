package runrecord

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/schema"
)

func TestMakeAnswer(t *testing.T) {
	port := json.RawMessage(`{"type":"object","properties":{"port":{"type":"integer"}},"required":["port"]}`)
	str := json.RawMessage(`{"type":"string","minLength":3}`)
	q := func(opts ...string) react.Question {
		return react.Question{Kind: react.KindQuestion, Question: "q?", Options: opts}
	}
	appr := react.Question{Kind: react.KindApproval, Question: "run?"}
	cases := []struct {
		name string
		q    react.Question
		in   AnswerInput
		want react.Answer
		bad  bool
	}{
		{"text", q(), AnswerInput{Text: "blue", HasText: true}, react.Answer{Text: "blue"}, false},
		{"option any case", q("the red one", "the blue one"), AnswerInput{Text: "The Blue One", HasText: true}, react.Answer{Text: "the blue one"}, false},
		{"not an option", q("a", "b"), AnswerInput{Text: "c", HasText: true}, react.Answer{}, true},
		{"empty", q(), AnswerInput{Text: "  ", HasText: true}, react.Answer{}, true},
		{"none given", q(), AnswerInput{}, react.Answer{}, true},
		{"two given", q(), AnswerInput{Text: "x", HasText: true, Approve: true}, react.Answer{}, true},
		{"approve a question", q(), AnswerInput{Approve: true}, react.Answer{}, true},
		{"value validates", react.Question{Kind: react.KindQuestion, Schema: port}, AnswerInput{Value: json.RawMessage(`{ "port": 8080 }`)}, react.Answer{Text: `{"port":8080}`}, false},
		{"value does not", react.Question{Kind: react.KindQuestion, Schema: port}, AnswerInput{Value: json.RawMessage(`{"port":"x"}`)}, react.Answer{}, true},
		{"bad JSON value", react.Question{Kind: react.KindQuestion, Schema: port}, AnswerInput{Value: json.RawMessage(`{`)}, react.Answer{}, true},
		{"text as a string", react.Question{Kind: react.KindQuestion, Schema: str}, AnswerInput{Text: "blue", HasText: true}, react.Answer{Text: `"blue"`}, false},
		{"text too short", react.Question{Kind: react.KindQuestion, Schema: str}, AnswerInput{Text: "ab", HasText: true}, react.Answer{}, true},
		{"approve", appr, AnswerInput{Approve: true}, react.Answer{Approve: true}, false},
		{"always", appr, AnswerInput{Always: true}, react.Answer{Approve: true, Always: true}, false},
		{"deny", appr, AnswerInput{Deny: true}, react.Answer{Deny: "denied by user: tact answer --deny"}, false},
		{"text to an approval", appr, AnswerInput{Text: "yes", HasText: true}, react.Answer{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MakeAnswer(c.q, c.in)
			if c.bad {
				if err == nil || !errors.As(err, new(*InputError)) {
					t.Fatalf("want an InputError, got %v (%+v)", err, got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// FuzzMakeAnswer: any answer against any schema is an answer that
// validates, or an InputError; never a panic, never a value that does not
// validate.
func FuzzMakeAnswer(f *testing.F) {
	f.Add(`{"type":"integer"}`, "12", true)
	f.Add(`{"type":"string","enum":["a","b"]}`, "a", false)
	f.Add(`{"type":"object","properties":{"x":{"type":"array"}}}`, `{"x":[1]}`, true)
	f.Add(`{"$ref":"#/$defs/x","$defs":{"x":{"type":"null"}}}`, "null", true)
	f.Add(`not a schema`, "x", false)
	f.Fuzz(func(t *testing.T, sch, answer string, asValue bool) {
		q := react.Question{Kind: react.KindQuestion, Question: "q", Schema: json.RawMessage(sch)}
		in := AnswerInput{Text: answer, HasText: true}
		if asValue {
			in = AnswerInput{Value: json.RawMessage(answer)}
		}
		a, err := MakeAnswer(q, in)
		if err != nil {
			if !errors.As(err, new(*InputError)) {
				t.Fatalf("not an InputError: %v", err)
			}
			return
		}
		if _, err := schema.CheckAnswer(q.Schema, []byte(a.Text)); err != nil {
			t.Fatalf("answer %q accepted but does not validate: %v", a.Text, err)
		}
	})
}
