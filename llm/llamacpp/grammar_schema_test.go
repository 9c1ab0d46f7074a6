package llamacpp

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ollama/ollama/llama"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/schema/schematest"
	tacttools "github.com/tactcli/tact/tools"
)

// charGrammar parses a GBNF grammar with llama.cpp's parser over a
// vocabulary of one token per printable ASCII character (and an end
// token): no model needed.
func charGrammar(t *testing.T, gbnf string) *llama.Grammar {
	t.Helper()
	var ids []uint32
	var pieces []string
	for c := byte(0x20); c < 0x7f; c++ {
		ids = append(ids, uint32(c))
		pieces = append(pieces, string(c))
	}
	const eog = 0x7f
	ids, pieces = append(ids, eog), append(pieces, "")
	g := llama.NewGrammar(gbnf, ids, pieces, []int32{eog})
	if g == nil {
		t.Fatalf("llama.cpp cannot parse the grammar:\n%.2000s", gbnf)
	}
	t.Cleanup(g.Free)
	return g
}

// accepts reports whether the grammar produces text (ASCII), character by
// character, and may end there.
func accepts(g *llama.Grammar, text string) (bool, int) {
	for i := 0; i < len(text); i++ {
		tok := []llama.TokenData{{ID: int32(text[i]), Logit: 1}}
		g.Apply(tok)
		if math.IsInf(float64(tok[0].Logit), -1) {
			return false, i
		}
		g.Accept(int32(text[i]))
	}
	end := []llama.TokenData{{ID: 0x7f, Logit: 1}}
	g.Apply(end)
	return !math.IsInf(float64(end[0].Logit), -1), len(text)
}

// Every real-world shape yields a grammar llama.cpp parses, and the
// grammar produces the shape's valid instances. The grammar needs only
// the library, no model.
func TestGrammarShapes(t *testing.T) {
	for _, sh := range schematest.Shapes {
		t.Run(sh.Name, func(t *testing.T) {
			n, err := schema.NormalizeArgs(json.RawMessage(sh.Schema))
			if err != nil {
				t.Fatal(err)
			}
			gbnf, err := schemaGBNF(n.Schema)
			if err != nil {
				t.Fatalf("%v\n%s", err, n.Schema)
			}
			for _, v := range sh.Valid {
				if ok, at := accepts(charGrammar(t, gbnf), v); !ok {
					t.Errorf("the grammar refuses %s at byte %d (%q)\nschema %s\n%s", v, at, v[:at], n.Schema, gbnf)
				}
			}
			// The raw schema too: the backend normalizes what it is given.
			if _, err := schemaGBNF([]byte(sh.Schema)); err != nil {
				t.Errorf("raw: %v", err)
			}
		})
	}
}

// An action schema of all the shapes as tools, and tact's own (every
// built-in tool, replan): one grammar each.
func TestGrammarActionSchemas(t *testing.T) {
	tools := []schema.Tool{{Name: tacttools.FinalAnswer, Schema: tacttools.FinalAnswerTool{}.Schema()}}
	for i, sh := range schematest.Shapes {
		tools = append(tools, schema.Tool{Name: "t" + strings.Repeat("x", i), Schema: json.RawMessage(sh.Schema)})
	}
	thought := schema.ThoughtOptions{Required: true, MinLength: 5000}
	for name, sch := range map[string]json.RawMessage{
		"shapes":   schema.Action(tools, thought, false),
		"built-in": schema.Action(tacttools.SchemaTools(tacttools.DefaultRegistry().List()), thought, true),
		"plan":     schema.Plan(tacttools.SchemaTools(tacttools.DefaultRegistry().List()), thought, 20),
	} {
		if _, err := schema.Compile(sch); err != nil {
			t.Fatalf("%s: the action schema does not compile: %v", name, err)
		}
		gbnf, err := schemaGBNF(sch)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		charGrammar(t, gbnf)
	}
	// A reply naming a tool whose schema had a $ref: the grammar writes it.
	sch := schema.Action(tools[:2], schema.ThoughtOptions{}, false)
	gbnf, err := schemaGBNF(sch)
	if err != nil {
		t.Fatal(err)
	}
	reply := `{"tool":"t","args":{"w":{"city":"Paris"}}}`
	if ok, at := accepts(charGrammar(t, gbnf), reply); !ok {
		t.Fatalf("refused at %d: %s\n%s", at, reply, gbnf)
	}
}

// A grammar over the binding's 1 MiB buffer is built whole, not cut.
func TestGrammarLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 400 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"enum":["%s"]}`, i, strings.Repeat("v", 3000))
	}
	b.WriteString(`},"required":[`)
	for i := range 400 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d"`, i)
	}
	b.WriteString(`]}`)
	gbnf, err := schemaGBNF([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(gbnf) <= 1<<20 {
		t.Fatalf("grammar of %d bytes: the test wants one over 1 MiB", len(gbnf))
	}
	charGrammar(t, gbnf)
}

// FuzzSchemaGrammar: every schema the validator accepts (within the
// limits on a client's tool schema) yields a grammar llama.cpp parses.
func FuzzSchemaGrammar(f *testing.F) {
	for _, sh := range schematest.Shapes {
		f.Add(sh.Schema)
	}
	f.Add(`{"properties":{"":{}}}`)
	f.Add(`{"type":"object","properties":{"a]":{}},"additionalProperties":{"type":"integer"}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) || schema.CheckSize([]byte(raw)) != nil {
			return
		}
		if _, err := schema.Compile(json.RawMessage(raw)); err != nil {
			return
		}
		for _, args := range []bool{false, true} {
			sch := json.RawMessage(raw)
			if args {
				n, err := schema.NormalizeArgs(sch)
				if err != nil {
					t.Fatal(err)
				}
				sch = n.Schema
			}
			gbnf, err := schemaGBNF(sch)
			if err != nil {
				t.Fatalf("%v\n%s", err, raw)
			}
			charGrammar(t, gbnf)
		}
	})
}
