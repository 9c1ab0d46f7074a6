package testsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// suiteDir makes a suite directory with a fixture, schemas, a plan and a
// policy for the cases to name, and writes cases (one a line) to
// cases.jsonl.
func suiteDir(t *testing.T, cases ...string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"fixtures/ok/a.txt":      "alpha\n",
		"fixtures/ok/sub/b.txt":  "beta\n",
		"schemas/count.json":     `{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`,
		"schemas/bad.json":       `{"type":"nosuchtype"}`,
		"schemas/notjson.json":   `{"type":`,
		"plans/p.jsonl":          `{"thought":"x","tool":"final_answer","args":{"answer":"done"}}`,
		"policy.json":            `{"rules":[]}`,
		"fixtures/notadir":       "",
		"cassettes/ok.jsonl":     "",
		"fixtures/ok/sub/c.json": "{}",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(strings.Join(cases, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadGoodCase(t *testing.T) {
	dir := suiteDir(t,
		"# a comment, then a blank line",
		"",
		`{"name":"full","description":"every field","query":"how many?","fixture":"fixtures/ok","cassette":"cassettes/ok.jsonl",`+
			`"flags":{"allow_tools":["read_file","list_dir"],"no_plan":true,"no_ask":true,"max_iterations":4,"timeout":"30s",`+
			`"schema":"schemas/count.json","policy":"policy.json","stop_when":"$state.step > 3","seed":7,"temperature":0,"env":["A=b"]},`+
			`"assert":[{"jq":".termination_reason == \"success\"","name":"ends well"},{"jq":"[.trace.steps[].action.tool] | index(\"read_file\") != null"}],`+
			`"answer_schema":{"type":"object"},`+
			`"files":[{"path":"a.txt","unchanged":true},{"path":"out.txt","exists":true},{"path":"sub/b.txt","contains":"be"},{"path":"gone","absent":true}]}`,
		`{"name":"planned","plan":"plans/p.jsonl","params":{"n":3,"s":"x"},"skip":"flaky model"}`,
	)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 2 {
		t.Fatalf("got %d cases, want 2", len(s.Cases))
	}
	c := s.Cases[0]
	if c.Err != nil {
		t.Fatal(c.Err)
	}
	if c.Line != 3 || c.File != filepath.Join(dir, "cases.jsonl") {
		t.Errorf("place %s, want line 3 of cases.jsonl", c.Where())
	}
	if c.Fixture != filepath.Join(dir, "fixtures/ok") || c.Cassette != filepath.Join(dir, "cassettes/ok.jsonl") {
		t.Errorf("paths not resolved: %q %q", c.Fixture, c.Cassette)
	}
	if c.Flags.Policy != filepath.Join(dir, "policy.json") || string(c.Flags.Schema) != `{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}` {
		t.Errorf("flags not resolved: %q %s", c.Flags.Policy, c.Flags.Schema)
	}
	if *c.Flags.MaxIterations != 4 || c.Flags.Timeout.D().Seconds() != 30 || *c.Flags.Seed != 7 || !c.Flags.NoPlan {
		t.Errorf("flags: %+v", c.Flags)
	}
	if len(c.Asserts) != 2 || c.Asserts[0].Label() != "ends well" || !strings.HasPrefix(c.Asserts[1].Label(), "jq [.trace") {
		t.Errorf("asserts: %+v", c.Asserts)
	}
	if string(c.AnswerSchema) != `{"type":"object"}` || len(c.Files) != 4 {
		t.Errorf("answer schema %s, files %d", c.AnswerSchema, len(c.Files))
	}
	p := s.Cases[1]
	if p.Err != nil || p.Plan != filepath.Join(dir, "plans/p.jsonl") || string(p.Params["n"]) != "3" || p.Skip != "flaky model" {
		t.Errorf("planned case: %+v", p)
	}
}

// TestLoadBadCases: every bad case gives one line naming FILE:LINE and the
// field path, and the case after it still loads.
func TestLoadBadCases(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"not JSON", `{"name":"x",`, `not JSON: unexpected end of JSON input`},
		{"trailing data", `{"name":"x","query":"q"} {}`, `not JSON: invalid character '{' after top-level value`},
		{"not an object", `["x"]`, `want an object, got array`},
		{"unknown field", `{"name":"x","query":"q","qurey":"q"}`, `qurey: unknown field (known: name, description,`},
		{"unknown flag", `{"name":"x","query":"q","flags":{"no_plna":true}}`, `flags.no_plna: unknown field`},
		{"unknown assert field", `{"name":"x","query":"q","assert":[{"jq":"true"},{"jq":"true","expect":1}]}`, `assert[1].expect: unknown field (known: jq, name)`},
		{"duplicate key", `{"name":"x","query":"q","query":"r"}`, `query: given twice`},
		{"wrong type", `{"name":"x","query":"q","assert":[{"jq":"true"},{"jq":3}]}`, `assert[1].jq: want a string, got number`},
		{"null string", `{"name":"x","query":null}`, `query: want a string, got null`},
		{"flag type", `{"name":"x","query":"q","flags":{"max_iterations":"3"}}`, `flags.max_iterations: want a number, got string`},
		{"fraction", `{"name":"x","query":"q","flags":{"max_iterations":1.5}}`, `flags.max_iterations: want a whole number in range, got "number 1.5"`},
		{"negative", `{"name":"x","query":"q","flags":{"token_budget":-1}}`, `flags.token_budget: -1 is negative`},
		{"bad duration", `{"name":"x","query":"q","flags":{"timeout":"5"}}`, `flags.timeout: "5" is not a duration`},
		{"duration number", `{"name":"x","query":"q","flags":{"timeout":5}}`, `flags.timeout: want a duration string such as "90s", got number`},
		{"seed range", `{"name":"x","query":"q","flags":{"seed":4294967296}}`, `flags.seed: 4294967296: want 0 to 4294967295`},
		{"sandbox", `{"name":"x","query":"q","flags":{"sandbox":"none"}}`, `flags.sandbox: "none": want workspace-write, read-only or off`},
		{"env", `{"name":"x","query":"q","flags":{"env":["NOEQUALS"]}}`, `flags.env[0]: "NOEQUALS": want KEY=VALUE`},
		{"allow_tools", `{"name":"x","query":"q","flags":{"allow_tools":["a,b"]}}`, `flags.allow_tools[0]: "a,b" is no tool name`},
		{"stop_when", `{"name":"x","query":"q","flags":{"stop_when":".a ||| b"}}`, `flags.stop_when: does not compile:`},
		{"missing policy", `{"name":"x","query":"q","flags":{"policy":"nope.json"}}`, `flags.policy: nope.json: no such file or directory`},
		{"flag schema", `{"name":"x","query":"q","flags":{"schema":"schemas/bad.json"}}`, `flags.schema: schemas/bad.json: not a valid JSON Schema`},
		{"no name", `{"query":"q"}`, `name: missing`},
		{"bad name", `{"name":"Has Space","query":"q"}`, `name: "Has Space": want 1 to 100 of a-z, 0-9`},
		{"no query", `{"name":"x"}`, `query: missing`},
		{"params without plan", `{"name":"x","query":"q","params":{"a":1}}`, `params: given without a plan`},
		{"missing plan", `{"name":"x","plan":"plans/none.jsonl"}`, `plan: plans/none.jsonl: no such file or directory`},
		{"missing fixture", `{"name":"x","query":"q","fixture":"fixtures/none"}`, `fixture: fixtures/none: no such file or directory`},
		{"fixture not a dir", `{"name":"x","query":"q","fixture":"fixtures/notadir"}`, `fixture: fixtures/notadir: not a directory`},
		{"jq does not compile", `{"name":"x","query":"q","assert":[{"jq":"true"},{"jq":".reason =="}]}`, `assert[1].jq: does not compile: unexpected EOF`},
		{"jq unknown function", `{"name":"x","query":"q","assert":[{"jq":"nosuch(1)"}]}`, `assert[0].jq: does not compile: function not defined: nosuch/1`},
		{"jq empty", `{"name":"x","query":"q","assert":[{"jq":" "}]}`, `assert[0].jq: missing`},
		{"answer schema missing", `{"name":"x","query":"q","answer_schema":"schemas/none.json"}`, `answer_schema: schemas/none.json: no such file or directory`},
		{"answer schema not JSON", `{"name":"x","query":"q","answer_schema":"schemas/notjson.json"}`, `answer_schema: schemas/notjson.json: not JSON`},
		{"answer schema invalid", `{"name":"x","query":"q","answer_schema":{"type":3}}`, `answer_schema: not a valid JSON Schema: at /type:`},
		{"answer schema array", `{"name":"x","query":"q","answer_schema":[1]}`, `answer_schema: a schema is a JSON object`},
		{"file escapes", `{"name":"x","query":"q","files":[{"path":"../etc/passwd","exists":true}]}`, `files[0].path: "../etc/passwd": want a relative path inside the workspace`},
		{"file absolute", `{"name":"x","query":"q","files":[{"path":"/etc/passwd","exists":true}]}`, `files[0].path: "/etc/passwd": want a relative path`},
		{"file no kind", `{"name":"x","query":"q","files":[{"path":"a"}]}`, `files[0]: give one of exists, absent, contains or unchanged`},
		{"file two kinds", `{"name":"x","query":"q","files":[{"path":"a","exists":true,"absent":true}]}`, `files[0]: give only one of`},
		{"file no path", `{"name":"x","query":"q","files":[{"exists":true}]}`, `files[0].path: missing`},
		{"file nul", `{"name":"x","query":"q","files":[{"path":"a\u0000b","exists":true}]}`, `files[0].path: "a\x00b": holds a NUL byte`},
		{"file dot", `{"name":"x","query":"q","files":[{"path":"./","absent":true}]}`, `files[0].path: "./": want a relative path inside the workspace`},
		{"file long", `{"name":"x","query":"q","files":[{"path":"` + strings.Repeat("a", 5000) + `","exists":true}]}`, `files[0].path: 5000 bytes: want at most 4096`},
		{"unchanged without fixture", `{"name":"x","query":"q","files":[{"path":"a.txt","unchanged":true}]}`, `files[0].unchanged: the case has no fixture`},
		{"unchanged not in fixture", `{"name":"x","query":"q","fixture":"fixtures/ok","files":[{"path":"new.txt","unchanged":true}]}`, `files[0].unchanged: new.txt is no regular file in the fixture`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := suiteDir(t, tc.line, `{"name":"after","query":"q"}`)
			s, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Cases) != 2 {
				t.Fatalf("got %d cases, want 2", len(s.Cases))
			}
			bad, good := s.Cases[0], s.Cases[1]
			if good.Err != nil {
				t.Errorf("the good case after it: %v", good.Err)
			}
			if bad.Err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			msg := bad.Err.Error()
			prefix := filepath.Join(dir, "cases.jsonl") + ":1: "
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q\nwant %q%s...", msg, prefix, tc.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is more than one line: %q", msg)
			}
			if bad.Name == "" {
				t.Error("a broken case has no name for the report")
			}
		})
	}
}

func TestLoadDuplicateNames(t *testing.T) {
	dir := suiteDir(t, `{"name":"a","query":"q"}`, `{"name":"b","query":"q"}`, `{"name":"a","query":"r"}`)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Cases[0].Err != nil || s.Cases[1].Err != nil {
		t.Errorf("the first two: %v, %v", s.Cases[0].Err, s.Cases[1].Err)
	}
	want := `cases.jsonl:3: name: "a" is also the name of the case at ` + filepath.Join(dir, "cases.jsonl") + ":1"
	if err := s.Cases[2].Err; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("duplicate: %v, want ...%s", err, want)
	}
}

func TestLoadSuiteErrors(t *testing.T) {
	empty := t.TempDir()
	comments := suiteDir(t, "# only a comment")
	noCases := t.TempDir()
	if err := os.WriteFile(filepath.Join(noCases, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(empty, "none"), "no such file or directory"},
		{empty, "no case file (*.jsonl) in the directory"},
		{noCases, "no case file"},
		{comments, "no cases"},
	} {
		_, err := Load(tc.path)
		if err == nil || !strings.HasPrefix(err.Error(), "suite "+tc.path+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestLoadOneFile: a suite may be one case file (a byte order mark and CRLF
// line ends are fine); its paths resolve against its directory, and several
// case files in a directory load in name order.
func TestLoadOneFile(t *testing.T) {
	dir := suiteDir(t, `{"name":"a","query":"q","fixture":"fixtures/ok"}`)
	if err := os.WriteFile(filepath.Join(dir, "0-first.jsonl"), []byte(`{"name":"z","query":"q"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "cases.jsonl"), "\ufeff"+`{"name":"a","query":"q","fixture":"fixtures/ok"}`+"\r\n")
	s, err := Load(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 1 || s.Cases[0].Err != nil || s.Cases[0].Fixture != filepath.Join(dir, "fixtures/ok") {
		t.Fatalf("one file: %+v", s.Cases)
	}
	s, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 2 || s.Cases[0].Name != "z" || s.Cases[1].Name != "a" {
		t.Errorf("directory order: %s, %s", s.Cases[0].Name, s.Cases[1].Name)
	}
}

// TestMarshalledCaseLoads: a case written with encoding/json from this
// package's types (as tact test record writes one) reads back the same,
// with only the fields given.
func TestMarshalledCaseLoads(t *testing.T) {
	n, secret := 3, "x"
	line, err := json.Marshal(map[string]any{
		"name":   "rec",
		"query":  "q",
		"flags":  Flags{AllowTools: []string{"read_file"}, NoPlan: true, MaxIterations: &n, Timeout: Duration(90 * time.Second)},
		"assert": []Assertion{{JQ: ".success"}, {JQ: ".iterations < 5", Name: "quick"}},
		"files":  []FileCheck{{Path: "a", Absent: true}, {Path: "b", Contains: &secret}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(line), `"name":""`) || strings.Contains(string(line), "no_ask") {
		t.Errorf("unset fields written: %s", line)
	}
	s, err := Load(suiteDir(t, string(line)))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	if c.Err != nil {
		t.Fatalf("%v\n%s", c.Err, line)
	}
	if *c.Flags.MaxIterations != 3 || c.Flags.Timeout.D() != 90*time.Second || c.Asserts[1].Name != "quick" || *c.Files[1].Contains != "x" {
		t.Errorf("read back %+v", c)
	}
}
