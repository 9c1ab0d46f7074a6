package planner

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/itchyny/gojq"

	"github.com/tactcli/tact/tools"
)

// argValue is what a bound argument yields when its step runs: a literal
// is itself, a $jq expression is evaluated over a run state whose only
// step output is "OTHER STEP'S OUTPUT" (what an injected $jq would hand
// out); ok is false for a directive a value must never become ("" to fill,
// {"$param": ...}).
func argValue(t testing.TB, raw json.RawMessage) (v json.RawMessage, ok bool) {
	t.Helper()
	kind, expr := ClassifyArg(raw)
	switch kind {
	case ArgLiteral:
		return raw, true
	case ArgJQ:
		// In process (gojq, as the jq child runs it): fuzzing spawns no
		// child per evaluation.
		q, err := gojq.Parse(expr)
		if err != nil {
			t.Fatalf("bound $jq %q: %v", expr, err)
		}
		code, err := gojq.Compile(q, gojq.WithVariables([]string{"$state"}))
		if err != nil {
			t.Fatalf("bound $jq %q: %v", expr, err)
		}
		state := map[string]any{"steps": []any{map[string]any{"output": "OTHER STEP'S OUTPUT"}}}
		v, ok := code.Run(state, state).Next()
		if !ok {
			t.Fatalf("bound $jq %q: no value", expr)
		}
		if err, isErr := v.(error); isErr {
			t.Fatalf("bound $jq %q: %v", expr, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return out, true
	}
	return nil, false
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// A bound value is data (issue 36 item 3): shaped {"$jq": ...} it is not
// evaluated over the run, {"$param": ...} not looked up, "" not "fill
// from context"; from a JSON value (batch, /v1/runs) or a --param string
// coerced where the argument wants an object.
func TestBindParamsValuesAreData(t *testing.T) {
	reg := tools.NewRegistry(tools.FinalAnswerTool{}, tools.WriteFile{})
	answerObj := `{"type":"plan","query":"q","params":{"v":{}}}` + "\n" + `{"tool":"final_answer","args":{"answer":{"$param":"v"}}}`
	write := `{"type":"plan","query":"q","params":{"v":{}}}` + "\n" + `{"tool":"write_file","args":{"path":"x","content":{"$param":"v"}}}`
	for _, c := range []struct {
		plan, value, want string
		objReg            bool
	}{
		{answerObj, `{"$jq":".steps[0].output"}`, `{"$jq":".steps[0].output"}`, true},
		{answerObj, `"{\"$jq\":\".steps[0].output\"}"`, `{"$jq":".steps[0].output"}`, true}, // --param, coerced
		{answerObj, `{"$param":"v"}`, `{"$param":"v"}`, true},
		{answerObj, `{"$jq":"input"}`, `{"$jq":"input"}`, true},
		{write, `""`, `""`, false},
		{write, `"$params.v"`, `"$params.v"`, false},
		{write, `"{{v}}"`, `"{{v}}"`, false},
	} {
		r := reg
		if c.objReg {
			r = anyAnswerRegistry(t)
		}
		p, err := Parse(strings.NewReader(c.plan), "p.jsonl", r)
		if err != nil {
			t.Fatal(err)
		}
		if err := BindParams(p, map[string]json.RawMessage{"v": json.RawMessage(c.value)}, r); err != nil {
			t.Fatalf("%s: %v", c.value, err)
		}
		for _, raw := range p.Steps[0].Args {
			if _, isParam := ClassifyArg(raw); isParam == "v" {
				t.Fatalf("%s: still a parameter: %s", c.value, raw)
			}
		}
		arg := p.Steps[0].Args["answer"]
		if arg == nil {
			arg = p.Steps[0].Args["content"]
		}
		got, ok := argValue(t, arg)
		if !ok || !sameJSON(got, json.RawMessage(c.want)) {
			t.Errorf("value %s bound as %s yields %s (ok %v), want %s", c.value, arg, got, ok, c.want)
		}
	}
}

// anyAnswerRegistry has final_answer taking any JSON object, as under
// --schema '{"type":"object"}'.
func anyAnswerRegistry(t testing.TB) *tools.Registry {
	return tools.NewRegistry(objectAnswer{})
}

type objectAnswer struct{ tools.FinalAnswerTool }

func (objectAnswer) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"answer":{"type":"object"}},"required":["answer"]}`)
}
