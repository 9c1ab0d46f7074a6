package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tactcli/tact/config"
)

// POST /v1/runs with "schema": the answer is the JSON value, or null with
// invalid_answer; a schema that does not compile is a 400 naming where.
func TestRunsSchema(t *testing.T) {
	e := newEnv(t, Config{}, nil, "", func(s *config.Settings) { s.Schema = `{"type":"integer"}` })
	const countSchema = `{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`
	cases := []struct {
		name, plan, schema string
		code               int
		answer, reason     string // answer: final_answer as compact JSON
		errHas             string
	}{
		{name: "answer validates", plan: `{"tool":"final_answer","args":{"answer":{"$jq":"{count: 2}"}}}`, schema: countSchema,
			code: 200, answer: `{"count":2}`, reason: "success"},
		{name: "answer does not validate", plan: `{"tool":"final_answer","args":{"answer":{"$jq":"{count: \"two\"}"}}}`, schema: countSchema,
			code: 200, answer: `null`, reason: "invalid_answer"},
		{name: "no schema: text, whatever the server's environment holds", plan: finalPlan,
			code: 200, answer: `"planned answer"`, reason: "success"},
		{name: "a schema that does not compile", plan: finalPlan, schema: `{"type":"object","properties":{"count":{"type":"integr"}}}`,
			code: 400, errHas: "schema: not a valid JSON Schema: at /properties/count/type"},
		{name: "a schema that is not an object", plan: finalPlan, schema: `"x"`,
			code: 400, errHas: "schema: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"plan": c.plan}
			if c.schema != "" {
				body["schema"] = json.RawMessage(c.schema)
			}
			r := e.post("/v1/runs", toJSON(t, body))
			if r.code != c.code {
				t.Fatalf("%d %s", r.code, r.body)
			}
			if c.code != 200 {
				var eb errorBody
				r.json(t, &eb)
				if !strings.Contains(eb.Error, c.errHas) {
					t.Errorf("error %q, want one holding %q", eb.Error, c.errHas)
				}
				return
			}
			var res struct {
				FinalAnswer json.RawMessage `json:"final_answer"`
				Reason      string          `json:"termination_reason"`
				AnswerError string          `json:"answer_error"`
			}
			r.json(t, &res)
			if res.Reason != c.reason || (c.answer != "" && string(res.FinalAnswer) != c.answer) {
				t.Errorf("%s %s, want %s %s", res.Reason, res.FinalAnswer, c.reason, c.answer)
			}
			if (c.reason == "invalid_answer") != (res.AnswerError != "") {
				t.Errorf("answer_error %q", res.AnswerError)
			}
		})
	}
}

// TestRunsLimits: a schema beyond the step API's limits and a run id that
// is not a plain word are 400s, at once (before any compiling or
// admission); a plain id is the run's.
func TestRunsLimits(t *testing.T) {
	e := newEnv(t, Config{}, nil, "", nil)
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 2500) + `{}` + strings.Repeat(`}}`, 2500)
	for _, c := range []struct {
		name   string
		body   map[string]any
		errHas string
	}{
		{"deep schema", map[string]any{"plan": finalPlan, "schema": json.RawMessage(deep)}, "schema: the schema nests 5001 levels deep, at most 64"},
		{"big schema", map[string]any{"plan": finalPlan, "schema": json.RawMessage(`{"description":"` + strings.Repeat("x", 70000) + `"}`)}, "schema: the schema takes"},
		{"NUL", map[string]any{"plan": finalPlan, "id": "a\x00b"}, "id: "},
		{"slash", map[string]any{"plan": finalPlan, "id": "../../etc"}, "id: "},
		{"dots", map[string]any{"plan": finalPlan, "id": "a..b"}, "id: "},
		{"newline", map[string]any{"plan": finalPlan, "id": "a\nb"}, "id: "},
		{"dash first", map[string]any{"plan": finalPlan, "id": "-rf"}, "id: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.post("/v1/runs", toJSON(t, c.body))
			var eb errorBody
			r.json(t, &eb)
			if r.code != 400 || !strings.Contains(eb.Error, c.errHas) {
				t.Fatalf("%d %q, want 400 holding %q", r.code, eb.Error, c.errHas)
			}
		})
	}
	r := e.post("/v1/runs", toJSON(t, map[string]any{"plan": finalPlan, "id": "nightly-2026.11_28"}))
	var res struct {
		RunID string `json:"run_id"`
	}
	r.json(t, &res)
	if r.code != 200 || res.RunID != "nightly-2026.11_28" {
		t.Fatalf("%d %s", r.code, r.body)
	}
}
