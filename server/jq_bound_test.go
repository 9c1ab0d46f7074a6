package server

import (
	"strings"
	"testing"
)

// Regression: a /v1/runs plan whose $jq argument nested 500,000 "[" fit the
// default 1 MiB body and killed tact serve with "fatal error: stack
// overflow"; a jq tool filter of 200,000 parentheses grew it by 590 MB. The
// plan is now a 400 naming the limit, the tool call a failed step, and the
// server goes on answering.
func TestRunsJQFilterBounds(t *testing.T) {
	e := newEnv(t, Config{}, nil, "", nil)
	for _, tc := range []struct{ name, expr, want string }{
		{"500k open brackets", strings.Repeat("[", 500_000), `plan:1: argument "answer": invalid $jq expression: filter is 500000 bytes, over the 32768-byte limit`},
		{"500k nested brackets", strings.Repeat("[", 250_000) + strings.Repeat("]", 250_000), `plan:1: argument "answer": invalid $jq expression: filter is 500000 bytes, over the 32768-byte limit`},
		{"200k parentheses", strings.Repeat("(", 200_000) + "." + strings.Repeat(")", 200_000), `plan:1: argument "answer": invalid $jq expression: filter is 400001 bytes, over the 32768-byte limit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := toJSON(t, map[string]any{"tool": "final_answer", "args": map[string]any{"answer": map[string]string{"$jq": tc.expr}}})
			r := e.post("/v1/runs", toJSON(t, map[string]any{"plan": plan}))
			var eb errorBody
			r.json(t, &eb)
			if r.code != 400 || eb.Error != tc.want {
				t.Fatalf("%d %.300s", r.code, r.body)
			}
		})
	}

	filter := strings.Repeat("(", 200_000) + "." + strings.Repeat(")", 200_000)
	plan := toJSON(t, map[string]any{"tool": "jq", "args": map[string]any{"filter": filter, "input": "null"}}) + "\n" + finalPlan
	r := e.post("/v1/runs", toJSON(t, map[string]any{"plan": plan}))
	var res struct {
		Trace struct {
			Steps []struct {
				Error string `json:"error"`
			} `json:"steps"`
		} `json:"trace"`
	}
	r.json(t, &res)
	want := `jq: bad filter "` + filter[:60] + `"... (400001 bytes): filter is 400001 bytes, over the 32768-byte limit`
	if r.code != 200 || len(res.Trace.Steps) == 0 || res.Trace.Steps[0].Error != want {
		t.Fatalf("%d %+v", r.code, res)
	}

	if r := e.do("GET", "/healthz", ""); r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
}
