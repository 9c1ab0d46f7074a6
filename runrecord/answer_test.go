package runrecord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/schema"
)

func TestMakeAnswer(t *testing.T) {
	port := json.RawMessage(`{"type":"object","properties":{"port":{"type":"integer"}},"required":["port"]}`)
	str := json.RawMessage(`{"type":"string","minLength":3}`)
	q := func(opts ...string) react.Question {
		return react.Question{Kind: react.KindQuestion, Question: "q?", Options: opts}
	}
	appr := react.Question{Kind: react.KindApproval, Question: "run?"}
	secretAppr := react.Question{Kind: react.KindApproval, Question: "run?", SecretArgs: true}
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
		// --value cannot slip past the options: it is one of them, as a
		// JSON string.
		{"value an option", q("a", "b"), AnswerInput{Value: json.RawMessage(`"B"`)}, react.Answer{Text: "b"}, false},
		{"value not an option", q("a", "b"), AnswerInput{Value: json.RawMessage(`"zzz"`)}, react.Answer{}, true},
		{"value not a string", q("a", "b"), AnswerInput{Value: json.RawMessage(`{"a":1}`)}, react.Answer{}, true},
		{"option and schema", react.Question{Kind: react.KindQuestion, Options: []string{"ab", "abcd"}, Schema: str}, AnswerInput{Value: json.RawMessage(`"abcd"`)}, react.Answer{Text: `"abcd"`}, false},
		{"text at the bound", q(), AnswerInput{Text: strings.Repeat("a", MaxAnswer), HasText: true}, react.Answer{Text: strings.Repeat("a", MaxAnswer)}, false},
		{"text too big", q(), AnswerInput{Text: strings.Repeat("a", MaxAnswer+1), HasText: true}, react.Answer{}, true},
		{"value too big", react.Question{Kind: react.KindQuestion, Schema: str}, AnswerInput{Value: json.RawMessage(`"` + strings.Repeat("a", MaxAnswer) + `"`)}, react.Answer{}, true},
		{"approve", appr, AnswerInput{Approve: true}, react.Answer{Approve: true}, false},
		{"always", appr, AnswerInput{Always: true}, react.Answer{Approve: true, Always: true}, false},
		{"deny", appr, AnswerInput{Deny: true}, react.Answer{Deny: "denied by user: tact answer --deny"}, false},
		{"text to an approval", appr, AnswerInput{Text: "yes", HasText: true}, react.Answer{}, true},
		// A call whose arguments held a secret is kept redacted: it can
		// only be denied, never run with the redaction mark.
		{"approve secret args", secretAppr, AnswerInput{Approve: true}, react.Answer{}, true},
		{"always secret args", secretAppr, AnswerInput{Always: true}, react.Answer{}, true},
		{"deny secret args", secretAppr, AnswerInput{Deny: true}, react.Answer{Deny: "denied by user: tact answer --deny"}, false},
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
		if len(q.Schema) == 0 {
			return // no schema: any answer stands
		}
		if _, err := schema.CheckAnswer(q.Schema, []byte(a.Text)); err != nil {
			t.Fatalf("answer %q accepted but does not validate: %v", a.Text, err)
		}
	})
}

// Paused: a run that ended needs_input waits, and so does one killed
// after its pause (never ended, the pending call in its checkpoint); one
// a run went on with, or one that ended another way, does not.
func TestPaused(t *testing.T) {
	ctx := context.Background()
	cp := react.Checkpoint{Pending: &react.Pending{Question: react.Question{Kind: react.KindQuestion, Question: "q?"}}}
	path := record(t, func(st *history.Store, red *redact.Redactor) {
		paused := NewWriter(st, red, history.Run{ID: "paused"})
		paused.Begin("q", nil)
		paused.Checkpoint(cp)
		paused.End("q", &react.Result{TerminationReason: react.ReasonNeedsInput}, Termination{})
		killed := NewWriter(st, red, history.Run{ID: "killed"})
		killed.Begin("q", nil)
		killed.Checkpoint(cp)
		answered := NewWriter(st, red, history.Run{ID: "answered"})
		answered.Begin("q", nil)
		answered.Checkpoint(cp)
		answered.End("q", &react.Result{TerminationReason: react.ReasonNeedsInput}, Termination{})
		NewWriter(st, red, history.Run{ID: "answer", ResumedFrom: "answered"}).End("q", &react.Result{TerminationReason: react.ReasonSuccess}, Termination{})
		NewWriter(st, red, history.Run{ID: "done"}).End("q", &react.Result{TerminationReason: react.ReasonSuccess}, Termination{})
		NewWriter(st, red, history.Run{ID: "running"}).Begin("q", nil)
	})
	// A run whose end is not recorded and that holds no waiting call is
	// not said to have ended: it may be running in another process.
	msgs := map[string]string{"running": "its end is not recorded: it is still running", "done": "(it ended: success)"}
	for id, waits := range map[string]bool{"paused": true, "killed": true, "answered": false, "done": false, "running": false} {
		book, rec, err := OpenRun(ctx, path, id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := book.Resumption(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		_, perr := PendingOf(id, r.Checkpoint)
		err = book.Paused(ctx, rec, perr == nil)
		if (err == nil) != waits {
			t.Errorf("%s: Paused says %v, want waiting %v", id, err, waits)
		}
		if m := msgs[id]; m != "" && (err == nil || !strings.Contains(err.Error(), m)) {
			t.Errorf("%s: Paused says %v, want %q in it", id, err, m)
		}
		book.Close()
	}
}

// An error line names at most maxListed options: a question may have
// thousands.
func TestMakeAnswerManyOptions(t *testing.T) {
	opts := make([]string, 5000)
	for i := range opts {
		opts[i] = fmt.Sprintf("option-%d", i)
	}
	_, err := MakeAnswer(react.Question{Kind: react.KindQuestion, Question: "q?", Options: opts}, AnswerInput{Text: "nope", HasText: true})
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if len(msg) > 600 || !strings.Contains(msg, "option-19, and 4980 more") || strings.Contains(msg, "option-20,") {
		t.Fatalf("error line not bounded: %d bytes: %.200s", len(msg), msg)
	}
	if _, err := MakeAnswer(react.Question{Kind: react.KindQuestion, Question: "q?", Options: opts}, AnswerInput{Text: "option-4999", HasText: true}); err != nil {
		t.Fatal(err)
	}
}

// answer_with is a command a shell runs as it is: an approval's offers
// --approve, the others in a comment (a "|" between them would pipe,
// approving the call).
func TestPauseAnswerWith(t *testing.T) {
	q := func(q react.Question) *react.Result { return &react.Result{RunID: "0123abcd", Question: &q} }
	cases := []struct {
		res  *react.Result
		want string
	}{
		{q(react.Question{Kind: react.KindQuestion, Question: "q?"}), "tact answer 0123abcd TEXT"},
		{q(react.Question{Kind: react.KindQuestion, Question: "q?", Schema: json.RawMessage(`{"type":"string"}`)}), "tact answer 0123abcd --value JSON"},
		{q(react.Question{Kind: react.KindApproval, Question: "run?"}), "tact answer 0123abcd --approve"},
		{q(react.Question{Kind: react.KindApproval, Question: "run?", SecretArgs: true}), "tact answer 0123abcd --deny"},
	}
	for _, c := range cases {
		got := Pause(c.res).Answer
		cmd, _, _ := strings.Cut(got, "#")
		if strings.Join(strings.Fields(cmd), " ") != c.want || strings.ContainsAny(cmd, "|;&<>()$`") {
			t.Errorf("answer_with %q: want the command %q", got, c.want)
		}
	}
}
