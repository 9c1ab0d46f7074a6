package planner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/tools"
)

func str(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

func TestBindParams(t *testing.T) {
	reg := tools.DefaultRegistry()
	header := `{"type":"plan","query":"q","params":{"path":{"description":"file to read"},"n":{"default":5}}}` + "\n"
	tests := []struct {
		name  string
		plan  string
		given map[string]json.RawMessage
		want  map[string]string // step index:arg -> bound value; "err" -> error prefix
	}{
		{"given value", header + `{"tool":"read_file","args":{"path":{"$param":"path"}}}`,
			map[string]json.RawMessage{"path": str("a.txt")}, map[string]string{"0:path": `"a.txt"`}},
		{"string to integer where the schema wants one", header + `{"tool":"read_file","args":{"path":{"$param":"path"},"limit":{"$param":"n"}}}`,
			map[string]json.RawMessage{"path": str("a"), "n": str("3")}, map[string]string{"0:limit": `3`}},
		{"default", header + `{"tool":"read_file","args":{"path":{"$param":"path"},"limit":{"$param":"n"}}}`,
			map[string]json.RawMessage{"path": str("a")}, map[string]string{"0:limit": `5`}},
		{"string that stays a string", header + `{"tool":"read_file","args":{"path":{"$param":"path"}}}`,
			map[string]json.RawMessage{"path": str("42")}, map[string]string{"0:path": `"42"`}},
		{"missing", header + "\n" + `{"tool":"read_file","args":{"path":{"$param":"path"}}}`,
			nil, map[string]string{"err": `plan.jsonl:3: argument "path": parameter "path" has no value and no default`}},
		{"unknown given", header + `{"tool":"read_file","args":{"path":{"$param":"path"}}}`,
			map[string]json.RawMessage{"path": str("a"), "pth": str("b")}, map[string]string{"err": `plan.jsonl:1: unknown parameter "pth" (the plan's parameters: n, path)`}},
		{"unknown without header", `{"tool":"list_files","args":{}}` + "\n" + `{"tool":"read_file","args":{"path":{"$param":"path"}}}`,
			map[string]json.RawMessage{"file": str("b")}, map[string]string{"err": `plan.jsonl:1: unknown parameter "file" (the plan's parameters: path)`}},
		{"undeclared use", header + `{"tool":"read_file","args":{"path":{"$param":"file"}}}`,
			nil, map[string]string{"err": `plan.jsonl:2: argument "path": parameter "file" is not declared`}},
		{"value failing the schema", header + `{"tool":"read_file","args":{"path":{"$param":"path"},"limit":{"$param":"n"}}}`,
			map[string]json.RawMessage{"path": str("a"), "n": str("many")}, map[string]string{"err": `plan.jsonl:2: parameter "n" (argument "limit" of read_file): at /limit`}},
		{"no header, no use, nothing given", `{"tool":"list_files","args":{}}`, nil, map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.plan), "plan.jsonl", reg)
			if err != nil {
				t.Fatal(err)
			}
			err = BindParams(p, tc.given, reg)
			if want, ok := tc.want["err"]; ok {
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("got %v\nwant prefix %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range tc.want {
				var i int
				var arg string
				parts := strings.SplitN(key, ":", 2)
				i = int(parts[0][0] - '0')
				arg = parts[1]
				if got := string(p.Steps[i].Args[arg]); got != want {
					t.Errorf("%s = %s, want %s", key, got, want)
				}
			}
		})
	}
}

func TestBindParamsInJQ(t *testing.T) {
	reg := tools.DefaultRegistry()
	in := `{"tool":"final_answer","args":{"answer":{"$jq":"\"hello \" + $params.who + \" (\" + ($state.steps | length | tostring) + \")\""}}}`
	p, err := Parse(strings.NewReader(in), "p", reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := BindParams(p, map[string]json.RawMessage{"who": str("world")}, reg); err != nil {
		t.Fatal(err)
	}
	kind, expr := ClassifyArg(p.Steps[0].Args["answer"])
	if kind != ArgJQ {
		t.Fatalf("bound argument is %s, not a $jq expression", p.Steps[0].Args["answer"])
	}
	// The bound expression needs only $state, as the executor gives it.
	state := json.RawMessage(`{"steps":[]}`)
	out, err := jqx.Eval(context.Background(), jqx.Request{Expr: expr, Vars: []string{"$state"}, VarValues: []json.RawMessage{state}, Input: state, MaxResults: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Results[0]); got != `"hello world (0)"` {
		t.Fatalf("got %s", got)
	}
	// A $params name with no value is missing, as for {"$param": ...}.
	p, _ = Parse(strings.NewReader(in), "p", reg)
	if err := BindParams(p, nil, reg); err == nil || !strings.HasPrefix(err.Error(), `p:1: argument "answer": parameter "who" has no value`) {
		t.Fatalf("got %v", err)
	}
}

func TestParamNamesChecked(t *testing.T) {
	reg := tools.DefaultRegistry()
	for _, in := range []string{
		`{"tool":"read_file","args":{"path":{"$param":"a-b"}}}`,
		`{"type":"plan","query":"q","params":{"1x":{}}}` + "\n" + `{"tool":"list_files","args":{}}`,
	} {
		if _, err := Parse(strings.NewReader(in), "p", reg); err == nil || !strings.Contains(err.Error(), "invalid parameter name") {
			t.Errorf("%s: got %v", in, err)
		}
	}
}

// FuzzBindParams: whatever the plan and the values, binding returns a
// value or an error, never panics, and a bound plan's rows parse again.
func FuzzBindParams(f *testing.F) {
	f.Add(`{"type":"plan","query":"q","params":{"p":{"default":"x"}}}`+"\n"+`{"tool":"read_file","args":{"path":{"$param":"p"}}}`, "p", `"a.txt"`)
	f.Add(`{"tool":"final_answer","args":{"answer":{"$jq":"$params.x"}}}`, "x", `{"a":1}`)
	f.Add(`{"tool":"read_file","args":{"path":"a","limit":{"$param":"n"}}}`, "n", `"7"`)
	reg := tools.DefaultRegistry()
	f.Fuzz(func(t *testing.T, plan, name, value string) {
		p, err := Parse(strings.NewReader(plan), "p", reg)
		if err != nil || !json.Valid([]byte(value)) {
			return
		}
		if err := BindParams(p, map[string]json.RawMessage{name: json.RawMessage(value)}, reg); err != nil {
			return
		}
		var buf strings.Builder
		if err := p.WriteJSONL(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(strings.NewReader(buf.String()), "p", reg); err != nil {
			t.Fatalf("bound plan does not parse again: %v\n%s", err, buf.String())
		}
	})
}

func TestTemplatize(t *testing.T) {
	reg := tools.DefaultRegistry()
	p := &Plan{Header: &Header{Type: "plan", Query: "q"}, Steps: []Step{
		{Tool: "read_file", Args: map[string]json.RawMessage{"path": str("{{path}}")}},
		{Tool: "search_files", Args: map[string]json.RawMessage{"pattern": str("ERROR {{ word }}"), "path": str("{{other}}")}},
		{Tool: "final_answer", Args: map[string]json.RawMessage{"answer": str("")}},
	}}
	if err := templatize(p, []string{"path", "word"}, reg); err != nil {
		t.Fatal(err)
	}
	if got := string(p.Steps[0].Args["path"]); got != `{"$param":"path"}` {
		t.Errorf("whole placeholder: %s", got)
	}
	if got := string(p.Steps[1].Args["path"]); got != `"{{other}}"` {
		t.Errorf("an undeclared name stays: %s", got)
	}
	if _, ok := p.Header.Params["path"]; !ok || len(p.Header.Params) != 2 {
		t.Errorf("header params: %v", p.Header.Params)
	}
	// The plan as tact plan writes it reads back, and binds.
	var buf strings.Builder
	if err := p.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := Parse(strings.NewReader(buf.String()), "t.jsonl", reg)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if err := BindParams(q, map[string]json.RawMessage{"path": str("a.txt"), "word": str("disk")}, reg); err != nil {
		t.Fatal(err)
	}
	_, expr := ClassifyArg(q.Steps[1].Args["pattern"])
	state := json.RawMessage(`{"steps":[]}`)
	out, err := jqx.Eval(context.Background(), jqx.Request{Expr: expr, Vars: []string{"$state"}, VarValues: []json.RawMessage{state}, Input: state, MaxResults: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Results[0]); got != `"ERROR disk"` {
		t.Errorf("placeholder inside text: %s", got)
	}
	q, _ = Parse(strings.NewReader(buf.String()), "t.jsonl", reg)
	if err := BindParams(q, map[string]json.RawMessage{"path": str("a.txt")}, reg); err == nil || !strings.Contains(err.Error(), `parameter "word" has no value`) {
		t.Errorf("missing word: %v", err)
	}
}
