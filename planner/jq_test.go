package planner

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/internal/jqx/jqxtest"
	"github.com/tactcli/tact/tools"
)

// jqRow is a plan row whose answer is {"$jq": expr}.
func jqRow(t testing.TB, expr string) string {
	b, err := json.Marshal(map[string]any{"tool": "final_answer", "args": map[string]any{"answer": map[string]string{"$jq": expr}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Regression: a $jq argument nesting 500,000 "[" crashed tact (exec and
// serve) with "fatal error: stack overflow" while the plan was checked,
// and 200,000 parentheses grew it by 590 MB. Every deep shape is refused
// with one line naming the row and the limit; a long one under the limit
// (checked in a child process) still parses.
func TestParseJQBounds(t *testing.T) {
	reg := tools.DefaultRegistry()
	for _, tc := range []struct{ name, expr, want string }{
		{"500k open brackets", strings.Repeat("[", 500_000), `plan.jsonl:2: argument "answer": invalid $jq expression: filter is 500000 bytes, over the 32768-byte limit`},
		{"200k parentheses", strings.Repeat("(", 200_000) + "." + strings.Repeat(")", 200_000), `plan.jsonl:2: argument "answer": invalid $jq expression: filter is 400001 bytes, over the 32768-byte limit`},
		{"long syntax error", strings.Repeat(" ", 10_000) + `.a | 1 "` + strings.Repeat("x", 5000) + `"`, `plan.jsonl:2: argument "answer": invalid $jq expression: unexpected token "\"xxxxxxxx`},
		{"long unknown function", strings.Repeat(".a|", 2000) + "nosuch", `plan.jsonl:2: argument "answer": invalid $jq expression: function not defined: nosuch/0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"tool":"list_files","args":{}}` + "\n" + jqRow(t, tc.expr)
			_, err := Parse(strings.NewReader(in), "plan.jsonl", reg)
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tc.want) || strings.ContainsAny(err.Error(), "\r\n") || len(err.Error()) > 400 {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
	for _, sh := range jqxtest.Shapes {
		_, err := Parse(strings.NewReader(jqRow(t, sh.OfLength(jqx.MaxFilterBytes+1))), "plan.jsonl", reg)
		if err == nil || !strings.HasSuffix(err.Error(), "bytes, over the 32768-byte limit") {
			t.Fatalf("%s: %v", sh.Name, err)
		}
		if _, err := Parse(strings.NewReader(jqRow(t, sh.OfLength(8000))), "plan.jsonl", reg); err != nil {
			t.Fatalf("%s, 8000 bytes: %v", sh.Name, err)
		}
	}
}

func FuzzPlanJQ(f *testing.F) {
	reg := tools.DefaultRegistry()
	for _, sh := range jqxtest.Shapes {
		f.Add(sh.Make(4), "answer")
	}
	for _, s := range []string{".steps[-1].output", "$state.query", `.steps[0].output | split("\n")[0]`, ".[", "$nope", `"\(.query)"`} {
		f.Add(s, "answer")
	}
	f.Add(".x", "path")
	f.Add(`"a"`, `{"$jq":1}`)
	f.Fuzz(func(t *testing.T, expr, key string) {
		rows := []string{
			jqRow(t, expr),
			`{"tool":"read_file","args":{"path":{"$jq":` + quote(t, expr) + `}}}`,
			// The key and the expression spliced raw: rows that are not
			// JSON, or whose $jq is not a string, come out too.
			`{"tool":"final_answer","args":{"answer":{"$jq":"` + expr + `"},"` + key + `":{"$jq":"` + expr + `"}}}`,
		}
		for _, row := range rows {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			p, err := Parse(strings.NewReader(row), "fuzz.jsonl", reg)
			runtime.ReadMemStats(&after)
			// Filters up to 4 KiB compile in this process (about 4 MiB at
			// most); the row's own JSON decoding adds a few times its size.
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20+uint64(16*len(row)) {
				t.Fatalf("parsing a %d-byte row allocated %d MiB", len(row), grown>>20)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz.jsonl") || strings.ContainsAny(err.Error(), "\r\n") {
					t.Fatalf("error %q", err)
				}
				continue
			}
			// An accepted $jq compiles within the bounds, every time.
			for _, s := range p.Steps {
				for k, v := range s.Args {
					if kind, e := ClassifyArg(v); kind == ArgJQ {
						if err := jqx.Check(e, "$state"); err != nil {
							t.Fatalf("accepted %s=%q does not check: %v", k, e, err)
						}
					}
				}
			}
		}
	})
}

func quote(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
