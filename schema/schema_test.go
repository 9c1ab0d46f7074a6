package schema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var tools = []Tool{
	{Name: "final_answer", Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","minLength":1}},"required":["answer"],"additionalProperties":false}`)},
	{Name: "read_file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`)},
}

func TestActionSchema(t *testing.T) {
	v := MustCompile(Action(tools, ThoughtOptions{Required: true, MinLength: 5}, true))
	for _, tc := range []struct {
		in, err string
	}{
		{`{"thought":"read it first","tool":"read_file","args":{"path":"a"}}`, ""},
		{`{"thought":"enough said","tool":"final_answer","args":{"answer":"x"}}`, ""},
		{`{"thought":"the plan fails","tool":"replan","args":{"reason":"x"}}`, ""},
		{`{"thought":"read it first","tool":"write_file","args":{"path":"a"}}`, "/tool"},
		{`{"thought":"short","tool":"read_file","args":{"path":"a","limit":0}}`, "/args/limit"},
		{`{"thought":"tiny","tool":"read_file","args":{"path":"a"}}`, "/thought"},
		{`{"tool":"read_file","args":{"path":"a"}}`, "thought"},
		{`{"thought":"read it first","tool":"read_file","args":{"path":"a"}} {}`, "trailing data"},
		{`not json`, "invalid JSON"},
	} {
		_, err := v.ValidateJSON([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want error containing %q", tc.in, err, tc.err)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("error is not one line: %q", err)
		}
	}
}

func TestPlanSchemaAllowsFillPlaceholders(t *testing.T) {
	v := MustCompile(Plan(tools, ThoughtOptions{}, 3))
	if _, err := v.ValidateJSON([]byte(`{"plan":[{"tool":"read_file","args":{"path":""}},{"tool":"final_answer","args":{"answer":""}}]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ValidateJSON([]byte(`{"plan":[]}`)); err == nil {
		t.Fatal("empty plan accepted")
	}
	if _, err := v.ValidateJSON([]byte(`{"plan":[{"tool":"read_file","args":{"path":"a"}},{"tool":"read_file","args":{"path":"b"}},{"tool":"read_file","args":{"path":"c"}},{"tool":"read_file","args":{"path":"d"}}]}`)); err == nil {
		t.Fatal("plan over maxItems accepted")
	}
}

func TestPartialDropsRequired(t *testing.T) {
	p, err := Partial(tools[1].Schema)
	if err != nil {
		t.Fatal(err)
	}
	v := MustCompile(p)
	if _, err := v.ValidateJSON([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ValidateJSON([]byte(`{"path":1}`)); err == nil {
		t.Fatal("wrong type accepted")
	}
}

func TestActionSchemaPutsThoughtFirst(t *testing.T) {
	s := string(Action(tools, ThoughtOptions{Required: true}, false))
	th, tool, args := strings.Index(s, `"thought"`), strings.Index(s, `"tool"`), strings.Index(s, `"args"`)
	if !(th < tool && tool < args) {
		t.Fatalf("property order thought=%d tool=%d args=%d in %s", th, tool, args, s)
	}
}

func TestOneLineNamesTheIntendedBranch(t *testing.T) {
	v := MustCompile(Action(tools, ThoughtOptions{Required: true, MinLength: 10}, false))
	for _, tc := range []struct{ in, want string }{
		{`{"thought":"short","tool":"final_answer","args":{"answer":"a"}}`, "at /thought: minLength: got 5, want 10"},
		{`{"thought":"long enough thought","tool":"read_file","args":{"path":7}}`, "at /args/path: got number, want string"},
		{`{"thought":"long enough thought","tool":"rm_rf","args":{}}`, `at /tool: "rm_rf" is not one of final_answer, read_file`},
	} {
		_, err := v.ValidateJSON([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

// The compiled-schema cache is bounded: many distinct schemas (MCP tools, a
// long-running server) keep at most cacheSize, and the newest stay cached.
func TestCompileCacheIsBounded(t *testing.T) {
	var last *Validator
	for i := range cacheSize + 50 {
		v, err := Compile(json.RawMessage(fmt.Sprintf(`{"type":"string","maxLength":%d}`, i+1)))
		if err != nil {
			t.Fatal(err)
		}
		last = v
	}
	cacheMu.Lock()
	n, m := cacheLRU.Len(), len(cache)
	cacheMu.Unlock()
	if n != cacheSize || m != cacheSize {
		t.Fatalf("cache holds %d/%d, want %d", n, m, cacheSize)
	}
	again, _ := Compile(json.RawMessage(fmt.Sprintf(`{"type":"string","maxLength":%d}`, cacheSize+50)))
	if again != last {
		t.Fatal("the newest schema was not cached")
	}
}

// A schema from outside (an MCP server, a tact serve client) cannot make
// tact read a file or fetch a URL through "$ref"; references inside the
// schema still work.
func TestCompileRefusesExternalRefs(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + secret, secret, "http://127.0.0.1:1/x.json", "/dev/stdin"} {
		raw := json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`)
		if _, err := Compile(raw); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("$ref %s: %v, want refused", ref, err)
		}
	}
	v, err := Compile(json.RawMessage(`{"$defs":{"s":{"type":"string"}},"type":"object","properties":{"a":{"$ref":"#/$defs/s"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.ValidateJSON([]byte(`{"a":1}`)); err == nil {
		t.Error("the internal $ref was not followed")
	}
}
