package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/grammar"
	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/schema/schematest"
)

// validateWithPython is an independent validator: python's jsonschema
// (each schema's own draft, by $schema), over a JSONL file of {"schema",
// "value", "name"} lines; it returns the lines that do not validate.
const validateWithPython = `
import json, sys
from jsonschema import validators
bad = 0
for line in open(sys.argv[1], encoding="utf-8"):
    c = json.loads(line)
    cls = validators.validator_for(c["schema"])
    errs = list(cls(c["schema"]).iter_errors(c["value"]))
    if errs:
        bad += 1
        print(c["name"], json.dumps(c["value"])[:200], errs[0].message[:200])
sys.exit(1 if bad else 0)
`

// The corpus' schemas as --schema on the tiny random-weight model: per
// schema a batch of queries (TACT_CORPUS_QUERIES, default 3; the
// closing figures used 20; TACT_CORPUS_MATCH keeps the schemas whose name
// holds it), 4 at once on the one model, with a
// budget of one action, so every run ends in an answer the grammar
// shaped (the model's or the fallback's). Every answer printed validates
// with python's jsonschema, or the run ended 11 (invalid_answer) with
// nothing printed; no schema is refused.
func TestSchemaCorpusTinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tiny model")
	}
	if err := exec.Command("python3", "-c", "import jsonschema").Run(); err != nil {
		t.Skip("python3 with jsonschema is not installed (apt python3-jsonschema): the independent validator")
	}
	queries := 3
	if s := os.Getenv("TACT_CORPUS_QUERIES"); s != "" {
		queries, _ = strconv.Atoi(s)
	}
	c := newE2E(t)
	model := synth.Cached(t, synth.Tiny)
	schemas := map[string]string{}
	files, _ := filepath.Glob("../../schema/testdata/corpus/*.json")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		schemas[strings.TrimSuffix(filepath.Base(f), ".json")] = string(raw)
	}
	for _, sh := range schematest.Shapes {
		schemas["shape "+sh.Name] = sh.Schema
	}
	if m := os.Getenv("TACT_CORPUS_MATCH"); m != "" {
		for name := range schemas {
			if !strings.Contains(name, m) {
				delete(schemas, name)
			}
		}
	}
	var lines []string
	for i := range queries {
		lines = append(lines, fmt.Sprintf("answer question %d about the files", i+1))
	}
	checks, err := os.Create(filepath.Join(c.dir, "checks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	answers, refused, cut := 0, 0, 0
	for name, raw := range schemas {
		// Where the grammar widens nothing, it alone makes every answer
		// valid: a run may not end invalid_answer.
		g, err := grammar.FromSchema(schema.FinalAnswerArgs(json.RawMessage(raw)))
		if err != nil {
			t.Errorf("%s: no grammar: %v", name, err)
			continue
		}
		file := c.file("schema.json", raw)
		p := c.start(strings.NewReader(strings.Join(lines, "\n")+"\n"), nil, "batch", "--model", model, "--workspace", c.ws,
			"--no-plan", "--no-ask", "--max-iterations", "1", "--parallel", "4", "--max-tokens", "1024", "--ctx-size", "32768", "--temperature", "1", "--schema", "@"+file)
		code := p.wait(10 * time.Minute)
		if code == 2 {
			t.Errorf("%s: refused: %s", name, p.stderr.String())
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(p.stdout.String()))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var res struct {
				ExitCode int             `json:"exit_code"`
				Answer   json.RawMessage `json:"final_answer"`
				Reason   string          `json:"termination_reason"`
				Message  string          `json:"message"`
			}
			if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
				t.Fatalf("%s: %v: %s", name, err, sc.Text())
			}
			switch {
			case res.ExitCode == 11 && strings.Contains(res.Message, "unexpected end of JSON input"):
				cut++ // the reply ran out of --max-tokens: not the grammar's doing
			case res.ExitCode == 11 && strings.Contains(res.Message, "context window full"):
				t.Errorf("%s: the schema does not fit a 32k window: %s", name, res.Message)
			case res.ExitCode == 11:
				refused++
				if len(g.Widened) == 0 {
					t.Errorf("%s: invalid_answer though the grammar widens nothing: %s", name, res.Message)
				} else {
					t.Logf("%s: invalid_answer (the grammar widens %q): %s", name, g.Widened, res.Message)
				}
				if len(res.Answer) > 0 && string(res.Answer) != "null" && string(res.Answer) != `""` {
					t.Errorf("%s: exit 11 with an answer %s", name, res.Answer)
				}
			case len(res.Answer) == 0 || string(res.Answer) == "null":
				t.Errorf("%s: exit %d (%s) with no answer", name, res.ExitCode, res.Reason)
			default:
				answers++
				line, _ := json.Marshal(map[string]any{"name": name, "schema": json.RawMessage(raw), "value": res.Answer})
				fmt.Fprintln(checks, string(line))
			}
		}
	}
	checks.Close()
	out, err := exec.Command("python3", "-c", validateWithPython, checks.Name()).CombinedOutput()
	if err != nil {
		t.Errorf("answers python's jsonschema refuses (%v):\n%s", err, out)
	}
	t.Logf("%d schemas × %d queries: %d answers printed (each validated by python's jsonschema), %d runs ended invalid_answer where the grammar widened a keyword, %d cut at --max-tokens", len(schemas), queries, answers, refused, cut)
}
