package llamacpp

// The corpus of schemas (grammar_diff_test.go compares the converters on
// it under the cgo provider) sampled on the tiny model under either
// provider.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tactcli/tact/grammar"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/schema/schematest"
	tacttools "github.com/tactcli/tact/tools"
)

// corpusSchemas are the schemas the converters are compared on: every
// built-in tool's, tact's action and plan schemas, the test shapes, and
// the public corpus in schema/testdata/corpus (see its README for the
// sources and licences).
func corpusSchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	reg := tacttools.DefaultRegistry()
	for _, tool := range append(reg.List(), tacttools.FinalAnswerTool{}) {
		out["tool/"+tool.Name()] = tool.Schema()
	}
	thought := schema.ThoughtOptions{Required: true, MinLength: 10}
	out["tact/action"] = schema.Action(tacttools.SchemaTools(reg.List()), thought, true)
	out["tact/plan"] = schema.Plan(tacttools.SchemaTools(reg.List()), thought, 20)
	for _, sh := range schematest.Shapes {
		out["shape/"+sh.Name] = json.RawMessage(sh.Schema)
	}
	files, _ := filepath.Glob("../../schema/testdata/corpus/*.json")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out["corpus/"+strings.TrimSuffix(filepath.Base(f), ".json")] = raw
	}
	return out
}

// TestGrammarSampledCorpus samples the tiny random-weight model under each
// corpus schema's new grammar: every reply is JSON, and validates where
// nothing was widened. TACT_GRAMMAR_SAMPLES sets the replies per schema
// (default 3: the mechanics, on a model that writes nonsense).
func TestGrammarSampledCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("samples a model")
	}
	samples := 3
	if s := os.Getenv("TACT_GRAMMAR_SAMPLES"); s != "" {
		samples, _ = strconv.Atoi(s)
	}
	b := newTiny(t, func(o *Options) { o.CtxSize = 4096; o.BatchSize = 512 })
	cases := corpusSchemas(t)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	var total, valid int
	for _, name := range names {
		raw := cases[name]
		g, err := grammar.FromSchema(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := schema.MustCompile(raw)
		for i := range samples {
			resp, err := b.Complete(context.Background(), llm.Request{
				Kind:      llm.KindAction,
				Messages:  []llm.Message{{Role: "user", Content: "Reply with JSON."}},
				Schema:    raw,
				Sampling:  llm.Sampling{Temperature: 1, TopK: 40, TopP: 0.95, Seed: i},
				MaxTokens: 384,
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			total++
			if !json.Valid([]byte(resp.Text)) && resp.Usage.CompletionTokens >= 384 {
				continue // cut at MaxTokens: a long value, not a wrong one
			}
			if !json.Valid([]byte(resp.Text)) {
				t.Fatalf("%s: reply %d is not JSON: %q", name, i, resp.Text)
			}
			if _, err := v.ValidateJSON([]byte(resp.Text)); err == nil {
				valid++
			} else if len(g.Widened) == 0 {
				t.Errorf("%s: reply %d refused with nothing widened: %v\n%.300s", name, i, err, resp.Text)
			}
		}
	}
	t.Logf("%d replies over %d schemas, %d validate", total, len(cases), valid)
}
