package planner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kballard/go-shellquote"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzBindHostileValues binds hostile values (issue 36 items 3 and 4): whatever
// the JSON value, a {"$param": ...} argument yields exactly it (never a
// $jq evaluated over the run, a parameter looked up or a fill), and a
// string in a planned command line is exactly one word, at the top level
// and inside a planned sh -c script (the script's own expansion, with no
// variables or commands, gives the value back as one field and runs
// nothing).
func FuzzBindHostileValues(f *testing.F) {
	for _, v := range hostile {
		b, _ := json.Marshal(v)
		f.Add(b)
	}
	for _, s := range []string{`{"$jq":".steps[0].output"}`, `{"$param":"v"}`, `""`, `"$params.v"`, `{"$jq":"input"}`, `[{"$jq":"."}]`, `12345678901234567890`, `null`, `{"a":{"$jq":"."}}`} {
		f.Add([]byte(s))
	}
	reg := anyAnswerRegistry(f)
	tmpl := `{"type":"plan","query":"q","params":{"v":{}}}` + "\n" + `{"tool":"final_answer","args":{"answer":{"$param":"v"}}}`
	f.Fuzz(func(t *testing.T, value []byte) {
		if !json.Valid(value) || len(value) > 4096 {
			return
		}
		var obj map[string]any
		if json.Unmarshal(value, &obj) == nil && obj != nil {
			p, err := Parse(strings.NewReader(tmpl), "p.jsonl", reg)
			if err != nil {
				t.Fatal(err)
			}
			if err := BindParams(p, map[string]json.RawMessage{"v": value}, reg); err != nil {
				return // a value the schema refuses: never bound
			}
			got, ok := argValue(t, p.Steps[0].Args["answer"])
			if !ok || !sameJSON(got, value) {
				t.Fatalf("value %s bound as %s yields %s", value, p.Steps[0].Args["answer"], got)
			}
		}
		var s string
		if json.Unmarshal(value, &s) != nil || strings.ContainsRune(s, 0) {
			return
		}
		cmd, err := commandFor(t, `wc -c {{file}}`, s)
		if err != nil {
			t.Fatal(err)
		}
		if argv, err := shellquote.Split(cmd); err != nil || len(argv) != 3 || argv[2] != s {
			t.Fatalf("value %q: command %q splits into %q (%v)", s, cmd, argv, err)
		}
		for _, tc := range []struct{ tmpl, want string }{
			{`sh -c 'printf %s {{file}}'`, s},
			{`sh -c "printf %s \"<{{file}}>\""`, "<" + s + ">"},
			{`sh -c "sh -c 'printf %s {{file}}'"`, s},
		} {
			cmd, err = commandFor(t, tc.tmpl, s)
			if err != nil {
				t.Fatal(err)
			}
			argv, err := shellquote.Split(cmd)
			if err != nil || len(argv) != 3 {
				t.Fatalf("%s with %q: %q splits into %q (%v)", tc.tmpl, s, cmd, argv, err)
			}
			script := argv[2]
			if strings.HasPrefix(tc.tmpl, `sh -c "sh -c`) {
				inner := scriptFields(t, script)
				if len(inner) != 3 {
					t.Fatalf("%s with %q: outer script %q gives %q", tc.tmpl, s, script, inner)
				}
				script = inner[2]
			}
			fields := scriptFields(t, script)
			if len(fields) != 3 || fields[2] != tc.want {
				t.Fatalf("%s with %q: script %q gives %q", tc.tmpl, s, script, fields)
			}
		}
	})
}

// scriptFields are the fields of a one-command POSIX script, expanded with
// no variables and no command substitution (one would be an error).
func scriptFields(t *testing.T, script string) []string {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), "")
	if err != nil {
		t.Fatalf("script %q does not parse: %v", script, err)
	}
	if len(f.Stmts) != 1 {
		t.Fatalf("script %q has %d commands", script, len(f.Stmts))
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(f.Stmts[0].Redirs) > 0 {
		t.Fatalf("script %q is not one simple command", script)
	}
	fields, err := expand.Fields(&expand.Config{}, call.Args...)
	if err != nil {
		t.Fatalf("script %q: %v", script, err)
	}
	return fields
}
