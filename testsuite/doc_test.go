package testsuite

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

const docPath = "../docs/testing.md"

// caseFormatDoc is docs/testing.md's "The case format" section.
func caseFormatDoc(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "\n## The case format\n")
	if i < 0 {
		t.Fatalf("%s has no section \"## The case format\"", docPath)
	}
	doc = doc[i+1:]
	if j := strings.Index(doc[3:], "\n## "); j >= 0 {
		doc = doc[:j+4]
	}
	return doc
}

// TestDocNamesEveryField: every key of a case, its flags, assertions and
// file checks, and of the --json report, is documented.
func TestDocNamesEveryField(t *testing.T) {
	doc := caseFormatDoc(t)
	for _, v := range []any{caseLine{}, Flags{}, Assertion{}, FileCheck{}, jsonReport{}, jsonTotals{}, jsonCase{}, jsonTrial{}, Usage{}, Failure{}} {
		for _, name := range fieldNames(reflect.TypeOf(v)) {
			if !strings.Contains(doc, "`"+name+"`") && !strings.Contains(doc, `"`+name+`"`) {
				t.Errorf("docs/testing.md's case format does not name %T's field %s", v, name)
			}
		}
	}
}

// TestDocExampleLoads: the section's example case is a case Load takes.
func TestDocExampleLoads(t *testing.T) {
	doc := caseFormatDoc(t)
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("no json example in the case format section")
	}
	var line bytes.Buffer
	if err := json.Compact(&line, []byte(m[1])); err != nil {
		t.Fatalf("the example is not JSON: %v", err)
	}
	dir := t.TempDir()
	for _, p := range []string{"fixtures/disk-full/logs/app.log", "cassettes/disk-full.jsonl"} {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, p, "x\n")
	}
	write(t, filepath.Join(dir, "cases.jsonl"), line.String()+"\n")
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Cases[0]; c.Err != nil || len(c.Asserts) != 4 || len(c.Files) != 2 {
		t.Fatalf("the example: %v (%d assertions, %d file checks)", c.Err, len(c.Asserts), len(c.Files))
	}
}

// TestDocErrorExamples: the error lines the section shows are the ones
// Load gives.
func TestDocErrorExamples(t *testing.T) {
	doc := caseFormatDoc(t)
	dir := suiteDir(t,
		"# the doc's lines start at 2",
		`{"name":"disk-full","query":"q"}`,
		`{"name":"a","query":"q","assert":[{"jq":"true"},{"jq":". | | ."}]}`,
		`{"name":"b","query":"q","flags":{"no_plna":true}}`,
		`{"name":"c","query":"q","fixture":"fixtures/gone"}`,
		`{"name":"disk-full","query":"q"}`,
		`{"name":"d","query":"q","answer_schema":"schemas/usage.json"}`,
		`{"name":"e","query":"q","fixture":"fixtures/ok","files":[{"path":"logs/app.log","unchanged":true}]}`,
	)
	write(t, filepath.Join(dir, "schemas/usage.json"), `{"type":"nosuchtype"}`)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Cases[1:] {
		if c.Err == nil {
			t.Fatalf("%s: no error", c.Where())
		}
		line := strings.Replace(c.Err.Error(), dir, "suite", -1)
		if i := strings.Index(line, "(known: "); i >= 0 {
			line = line[:i+len("(known: allow_tools, no_plan, ")] + "...)"
		}
		if i := strings.Index(line, "at /type: "); i >= 0 {
			line = line[:i+len("at /type: ")] + "..."
		}
		if !strings.Contains(doc, line+"\n") {
			t.Errorf("docs/testing.md does not show the error %q", line)
		}
	}
}
