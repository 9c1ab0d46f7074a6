package llamacpp

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/schema/schematest"
	tacttools "github.com/tactcli/tact/tools"
)

// charGrammar parses a GBNF grammar with llama.cpp's parser over the tiny
// model's vocabulary, whose byte tokens (synth's byte fallback: one token
// per byte) let accepts feed text one character at a time.
func charGrammar(t *testing.T, gbnf string) *testGrammar {
	t.Helper()
	m := grammarModel(t)
	g := m.newGrammar(gbnf)
	if g == nil {
		t.Fatalf("llama.cpp cannot parse the grammar:\n%.2000s", gbnf)
	}
	c, err := m.newCandidates()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.free(); c.free() })
	return &testGrammar{g: g, c: c}
}

type testGrammar struct {
	g rtSampler
	c rtCandidates
}

// allows asks the grammar about one token.
func (tg *testGrammar) allows(tok int) bool {
	tg.c.one(tok)
	tg.g.apply(tg.c)
	ok := true
	tg.c.each(func(_ int, logit float32) { ok = !refused(logit) })
	return ok
}

var (
	grammarOnce    sync.Once
	grammarBackend *Backend
	grammarErr     error
)

// grammarModel is the tiny model, loaded once for the package's grammar
// tests and fuzz inputs.
func grammarModel(t *testing.T) rtModel {
	t.Helper()
	o := withRuntime(t, Options{ModelPath: synth.Cached(t, synth.Tiny), CtxSize: 256, BatchSize: 64, Threads: 1, NoCPULock: true})
	grammarOnce.Do(func() { grammarBackend, grammarErr = New(o) })
	if grammarErr != nil {
		t.Fatal(grammarErr)
	}
	m := grammarBackend.model
	if p := m.TokenToPiece(byteToken + 'A'); p != "A" {
		t.Fatalf("the tiny model's byte token for 'A' is %q: synth's vocabulary changed", p)
	}
	return m
}

// byteToken is the tiny model's token of byte 0 (synth's vocabulary: five
// special tokens, then one token per byte).
const byteToken = 5

// accepts reports whether the grammar produces text, byte by byte, and
// may end there (it allows the end-of-generation token).
func accepts(g *testGrammar, text string) (bool, int) {
	for i := 0; i < len(text); i++ {
		tok := byteToken + int(text[i])
		if !g.allows(tok) {
			return false, i
		}
		g.g.accept(tok)
	}
	return g.allows(synth.IMEndID), len(text)
}

// Every real-world shape yields a grammar llama.cpp parses, and the
// grammar produces the shape's valid instances.
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
