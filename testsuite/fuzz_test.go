package testsuite

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseCases: any case file gives one case a case line, never a panic;
// a broken case has a name and a one-line error naming FILE:LINE, and a
// good one a valid name and a query or plan.
func FuzzParseCases(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","query":"q"}`,
		"# comment\n\n{\"name\":\"a\",\"query\":\"q\",\"assert\":[{\"jq\":\".success\"}]}\n",
		`{"name":"a","query":"q","flags":{"no_plan":true,"max_iterations":3,"timeout":"1s","allow_tools":["read_file"]}}`,
		`{"name":"a","query":"q","files":[{"path":"x","exists":true},{"path":"y","contains":"z"}]}`,
		`{"name":"a","query":"q","answer_schema":{"type":"object"}}`,
		`{"name":"a","query":"q","params":{"x":1}}`,
		`{"name":"a","query":"q","query":"r"}`,
		`{"name":"a","query":"q","assert":[{"jq":".a |"}]}`,
		`{"name":"a","query":"q","flags":{"timeout":"-1s","seed":-1}}`,
		`{"name":"a","query":"q","files":[{"path":"../x","exists":true}]}`,
		`{"name":"a","query":"q","flags":{"max_iterations":1e400}}`,
		"{\"name\":\"a\xff\",\"query\":\"q\"}",
		`[1,2]`,
		`{"name":`,
		`{"name":"a","query":"q"} trailing`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	file := filepath.Join(dir, "cases.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		cases := ParseCases(file, data)
		for _, c := range cases {
			if c.Name == "" {
				t.Fatalf("a case without a name: %+v", c)
			}
			if c.Line < 1 || c.File != file {
				t.Fatalf("case %q at %s", c.Name, c.Where())
			}
			if c.Err != nil {
				msg := c.Err.Error()
				if !strings.HasPrefix(msg, c.Where()+": ") || strings.Contains(msg, "\n") {
					t.Fatalf("error %q: want one line starting %s", msg, c.Where())
				}
				continue
			}
			if !validName.MatchString(c.Name) || (c.Query == "" && c.Plan == "") {
				t.Fatalf("accepted a case with name %q, query %q, plan %q", c.Name, c.Query, c.Plan)
			}
		}
	})
}
