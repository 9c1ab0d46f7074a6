package react

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/schema"
)

const countSchema = `{"type":"object","properties":{"count":{"type":"integer","minimum":0},"files":{"type":"array","items":{"type":"string"}}},"required":["count","files"]}`

func reply(kind llm.Kind, text string) string {
	b, _ := json.Marshal(map[string]any{"kind": kind, "text": text})
	return string(b) + "\n"
}

// Under an answer schema every way a run ends either gives an answer that
// validates (compact JSON in FinalAnswer, the value in Answer) or ends
// with invalid_answer and no answer.
func TestAnswerSchema(t *testing.T) {
	good := `{"count":2,"files":["a","b"]}`
	cases := []struct {
		name, script, plan string
		schema             string // "": countSchema
		noPlan             bool
		maxIter            int
		reason             Reason
		answer             string // compact JSON; "" none
		errHas             string
	}{
		{name: "model answer", noPlan: true,
			script: action(thought, "final_answer", `{"answer":{"count":2, "files":["a","b"]}}`),
			reason: ReasonSuccess, answer: good},
		{name: "model retries after an answer that breaks a keyword", noPlan: true,
			script: action(thought, "final_answer", `{"answer":{"count":-1,"files":[]}}`) + action(thought, "final_answer", `{"answer":`+good+`}`),
			reason: ReasonSuccess, answer: good},
		{name: "jq answer validates",
			plan:   `{"tool":"echo","args":{"msg":"x"}}` + "\n" + `{"tool":"final_answer","args":{"answer":{"$jq":"{count: (.steps|length), files: [.steps[].output]}"}}}`,
			reason: ReasonSuccess, answer: `{"count":1,"files":["echo: x"]}`},
		{name: "jq answer does not validate",
			plan:   `{"tool":"final_answer","args":{"answer":{"$jq":"{count: \"one\"}"}}}`,
			reason: ReasonInvalidAnswer, errHas: "/count"},
		{name: "literal text answer without a model",
			plan:   `{"tool":"final_answer","args":{"answer":"two files"}}`,
			reason: ReasonInvalidAnswer, errHas: "no model"},
		{name: "fill of the final answer",
			plan:   `{"tool":"final_answer","args":{"answer":""}}`,
			script: reply(llm.KindFill, `{"answer":`+good+`}`),
			reason: ReasonSuccess, answer: good},
		{name: "fill that does not validate",
			plan:   `{"tool":"final_answer","args":{"answer":""}}`,
			script: reply(llm.KindFill, `{"answer":{"count":2}}`),
			reason: ReasonInvalidAnswer, errHas: "files"},
		{name: "budget end: the fallback answer validates", noPlan: true, maxIter: 1,
			script: action(thought, "echo", `{"msg":"a"}`) + reply(llm.KindFallback, `{"answer":{"count":0,"files":[]}}`),
			reason: ReasonMaxIterations, answer: `{"count":0,"files":[]}`},
		{name: "budget end: the fallback answer does not validate", noPlan: true, maxIter: 1,
			script: action(thought, "echo", `{"msg":"a"}`) + reply(llm.KindFallback, `{"answer":"some text"}`),
			reason: ReasonInvalidAnswer, errHas: "object"},
		{name: "a string answer saying it cannot is a failure", noPlan: true, schema: `{"type":"string"}`,
			script: action(thought, "final_answer", `{"answer":"I cannot count them"}`),
			reason: ReasonFailure, answer: `"I cannot count them"`},
		{name: "budget end without a model",
			plan:   `{"tool":"echo","args":{"msg":"a"}}`,
			reason: ReasonInvalidAnswer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.script)
			h.ex.AnswerSchema = json.RawMessage(countSchema)
			if c.schema != "" {
				h.ex.AnswerSchema = json.RawMessage(c.schema)
			}
			h.ex.NoPlan = c.noPlan
			if c.maxIter > 0 {
				h.ex.MaxIterations = c.maxIter
			}
			res := h.run(c.plan)
			if res.TerminationReason != c.reason {
				t.Fatalf("reason %s, want %s (%s)", res.TerminationReason, c.reason, res.Message)
			}
			if res.FinalAnswer != c.answer {
				t.Errorf("final answer %q, want %q", res.FinalAnswer, c.answer)
			}
			if c.answer != "" {
				if _, err := schema.MustCompile(h.ex.AnswerSchema).ValidateJSON([]byte(res.FinalAnswer)); err != nil {
					t.Errorf("answer does not validate: %v", err)
				}
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				FinalAnswer json.RawMessage `json:"final_answer"`
				AnswerError string          `json:"answer_error"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			want := c.answer
			if want == "" {
				want = "null"
			}
			if string(doc.FinalAnswer) != want {
				t.Errorf("--json final_answer %s, want %s", doc.FinalAnswer, want)
			}
			if c.reason == ReasonInvalidAnswer {
				if res.ExitCode() != 11 || doc.AnswerError == "" || !strings.Contains(doc.AnswerError, c.errHas) {
					t.Errorf("exit %d, answer_error %q (want one holding %q)", res.ExitCode(), doc.AnswerError, c.errHas)
				}
			}
			// Read back (a recorded result): a value stays JSON; a string
			// answer reads as its text, as any answer without a schema.
			var back Result
			want = res.FinalAnswer
			var str string
			if json.Unmarshal([]byte(want), &str) == nil {
				want = str
			}
			if err := json.Unmarshal(b, &back); err != nil || back.FinalAnswer != want {
				t.Errorf("result read back: %q, %v", back.FinalAnswer, err)
			}
		})
	}
}

// The model's action schema carries the answer schema as final_answer's
// answer, so a grammar built from it shapes the answer.
func TestAnswerSchemaInActionSchema(t *testing.T) {
	h := newHarness(t, action(thought, "final_answer", `{"answer":{"count":0,"files":[]}}`))
	h.ex.AnswerSchema = json.RawMessage(countSchema)
	h.ex.NoPlan = true
	h.run("")
	sch := string(h.rec.reqs[0].Schema)
	if !strings.Contains(sch, `"answer":{"type":"object"`) || !strings.Contains(sch, `"files"`) {
		t.Fatalf("action schema does not carry the answer schema: %s", sch)
	}
}

// Without an answer schema the result's JSON is what it always was.
func TestResultJSONWithoutSchema(t *testing.T) {
	res := Result{FinalAnswer: "a <b> & c", TerminationReason: ReasonSuccess}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	type plain Result
	want, _ := json.Marshal(plain(res))
	if string(b) != string(want) {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}
