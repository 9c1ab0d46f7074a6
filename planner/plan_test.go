package planner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
)

func TestParseErrors(t *testing.T) {
	reg := tools.DefaultRegistry()
	tests := []struct {
		name, input, want string
	}{
		{"malformed JSON", "{\"tool\":\"read_file\",\"args\":{\"path\":\"a\"}}\n{\"tool\":", "plan.jsonl:2: invalid JSON"},
		{"not an object", "[1,2]", "plan.jsonl:1: invalid plan row: expected a JSON object"},
		{"unknown tool", "\n\n{\"tool\":\"rm_rf\",\"args\":{}}", "plan.jsonl:3: unknown tool \"rm_rf\""},
		{"missing tool", `{"args":{}}`, `plan.jsonl:1: missing "tool"`},
		{"bad arg type", `{"tool":"read_file","args":{"path":7}}`, "plan.jsonl:1: arguments for read_file: at /path"},
		{"unknown arg", `{"tool":"read_file","args":{"path":"a","color":"red"}}`, "plan.jsonl:1: arguments for read_file"},
		{"unknown field", `{"tool":"read_file","args":{"path":"a"},"tol":1}`, `plan.jsonl:1: invalid plan step: json: unknown field "tol"`},
		{"bad jq", `{"tool":"read_file","args":{"path":{"$jq":".steps["}}}`, `plan.jsonl:1: argument "path": invalid $jq expression`},
		{"second header", "{\"type\":\"plan\",\"query\":\"a\"}\n{\"type\":\"plan\",\"query\":\"b\"}", "plan.jsonl:2: second plan header"},
		{"header after steps", "{\"tool\":\"final_answer\",\"args\":{\"answer\":\"x\"}}\n{\"type\":\"plan\",\"query\":\"b\"}", "plan.jsonl:2: plan header after steps"},
		{"unknown type", `{"type":"note"}`, `plan.jsonl:1: unknown row type "note"`},
		{"empty", "\n\n", "plan.jsonl: plan has no steps"},
		{"trailing data", `{"tool":"final_answer","args":{"answer":"x"}} {}`, "plan.jsonl:1: invalid JSON"},
		// Regression: rows missing required arguments parsed and failed only
		// when they ran (exit 3), after earlier steps had run.
		{"empty args", "{\"tool\":\"list_files\",\"args\":{}}\n{\"tool\":\"read_file\",\"args\":{}}", `plan.jsonl:2: arguments for read_file: missing required argument "path"`},
		{"no args", `{"tool":"final_answer"}`, `plan.jsonl:1: arguments for final_answer: missing required argument "answer"`},
		{"null args", `{"tool":"run_command","args":null}`, `plan.jsonl:1: arguments for run_command: missing required argument "command"`},
		{"one of two", `{"tool":"edit_file","args":{"path":"a","old_string":"x"}}`, `plan.jsonl:1: arguments for edit_file: missing required argument "new_string"`},
		{"BOM then bad row", "\xef\xbb\xbf{\"tool\":", "plan.jsonl:1: invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.input), "plan.jsonl", reg)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant prefix %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestParseAcceptsPlaceholdersAndHeader(t *testing.T) {
	reg := tools.DefaultRegistry()
	in := `{"type":"plan","query":"why is the disk full?","created":"2026-11-22T00:00:00Z","planner":{"backend":"script"}}
{"type":"step","step":1,"thought":"look","tool":"list_files","args":{"path":"."}}
{"tool":"read_file","args":{"path":""}}
{"tool":"read_file","args":{"path":{"$jq":".steps[0].output | split(\"\n\")[0]"}}}
{"tool":"final_answer","args":{"answer":{"$jq":".steps[-1].output"}}}
`
	p, err := Parse(strings.NewReader(in), "p", reg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Query() != "why is the disk full?" || len(p.Steps) != 4 || p.Steps[1].Line != 3 {
		t.Fatalf("%+v", p)
	}
	if !p.Steps[1].NeedsModel() || p.Steps[2].NeedsModel() {
		t.Fatal("NeedsModel wrong")
	}
	if got := strings.Join(p.Tools(), ","); got != "list_files,read_file,final_answer" {
		t.Fatalf("tools %s", got)
	}
	// Round trip: what WriteJSONL writes parses to the same plan.
	var buf bytes.Buffer
	if err := p.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := Parse(&buf, "round", reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Steps) != len(p.Steps) || q.Query() != p.Query() || q.Steps[3].Step != 4 {
		t.Fatalf("round trip %+v", q)
	}
}

// Fill ("") and $jq values count as present for required arguments, and a
// UTF-8 byte order mark before the first row is accepted.
func TestParseRequiredArgsAndBOM(t *testing.T) {
	reg := tools.DefaultRegistry()
	in := "\xef\xbb\xbf" + `{"type":"plan","query":"q"}
{"tool":"read_file","args":{"path":""}}
{"tool":"final_answer","args":{"answer":{"$jq":".steps[0].output"}}}
`
	p, err := Parse(strings.NewReader(in), "bom.jsonl", reg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Query() != "q" || len(p.Steps) != 2 || p.Steps[0].Line != 2 {
		t.Fatalf("%+v", p)
	}
	// Without a header the BOM precedes the first step.
	if _, err := Parse(strings.NewReader("\xef\xbb\xbf"+`{"tool":"list_files","args":{}}`), "b", reg); err != nil {
		t.Fatal(err)
	}
}

func FuzzParsePlan(f *testing.F) {
	reg := tools.DefaultRegistry()
	for _, s := range []string{
		`{"type":"plan","query":"q"}` + "\n" + `{"tool":"read_file","args":{"path":"a"}}`,
		`{"tool":"jq","args":{"filter":".a","input":"{}"}}`,
		`{"tool":"read_file","args":{"path":{"$jq":".x"}}}`,
		`{"tool":"run_command","args":{"command":""}}`,
		"{", "\n\n\n", `{"type":"plan"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), "fuzz.jsonl", reg)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		for _, s := range p.Steps {
			if _, ok := reg.Get(s.Tool); !ok || s.Line < 1 {
				t.Fatalf("bad step %+v", s)
			}
		}
		var buf bytes.Buffer
		if err := p.WriteJSONL(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(&buf, "again", reg); err != nil {
			t.Fatalf("written plan does not parse: %v\n%s", err, buf.String())
		}
	})
}
