package server

import (
	"strings"
	"testing"
)

// /v1/runs takes a plan's parameter values in "params", as tact exec takes
// --param; a missing or unknown parameter is a 400 naming plan:LINE.
func TestRunsParams(t *testing.T) {
	e := newEnv(t, Config{}, nil, "", nil)
	plan := `{"type":"plan","query":"greet","params":{"who":{"default":"world"},"n":{}}}` + "\n" +
		`{"tool":"final_answer","args":{"answer":{"$jq":"\"hello \" + $params.who + \" x\" + ($params.n | tostring)"}}}`
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"who": "you", "n": 2}, "hello you x2"},
		{map[string]any{"n": "3"}, "hello world x3"},
	} {
		r := e.post("/v1/runs", toJSON(t, map[string]any{"plan": plan, "params": tc.params}))
		var res map[string]any
		r.json(t, &res)
		if r.code != 200 || res["final_answer"] != tc.want {
			t.Errorf("%v: %d %s", tc.params, r.code, r.body)
		}
	}
	for _, tc := range []struct{ body, want string }{
		{toJSON(t, map[string]any{"plan": plan}), `plan:2: argument "answer": parameter "n" has no value and no default`},
		{toJSON(t, map[string]any{"plan": plan, "params": map[string]any{"n": 1, "m": 2}}), `plan:1: unknown parameter "m" (the plan's parameters: n, who)`},
		{toJSON(t, map[string]any{"query": "q", "params": map[string]any{"n": 1}}), "params: given without a plan"},
		{`{"plan": "x", "params": {"a b": 1}}`, "'a b' does not match pattern"},
		{`{"plan": "x", "params": [1]}`, "params"},
	} {
		r := e.post("/v1/runs", tc.body)
		var eb errorBody
		r.json(t, &eb)
		if r.code != 400 || !strings.Contains(eb.Error, tc.want) {
			t.Errorf("%s: %d %s", tc.body, r.code, r.body)
		}
	}
}
