//go:build cgollama

package llamacpp

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/ollama/ollama/llama"
	"github.com/tactcli/tact/grammar"
	"github.com/tactcli/tact/grammar/gbnf"
	"github.com/tactcli/tact/schema"
)

// llamaParses: llama.cpp's own parser reads the grammar.
func llamaParses(gbnf string) bool {
	var ids []uint32
	var pieces []string
	for c := byte(0x20); c < 0x7f; c++ {
		ids = append(ids, uint32(c))
		pieces = append(pieces, string(c))
	}
	ids, pieces = append(ids, 0x7f), append(pieces, "")
	g := llama.NewGrammar(gbnf, ids, pieces, []int32{0x7f})
	if g == nil {
		return false
	}
	g.Free()
	return true
}

// TestGrammarDifferential compares tact's converter (package grammar)
// with the binding's (llama.cpp's json-schema-to-grammar over
// schema.Normalize) on the corpus: llama.cpp's parser reads the new
// grammar wherever it read the old one, and where the old converter
// failed too (listed); 200 texts drawn from each new grammar are JSON
// that validates against the schema, wherever the converter widened
// nothing (and the share that validates otherwise is logged).
// TACT_GRAMMAR_DRAWS overrides the 200.
func TestGrammarDifferential(t *testing.T) {
	draws := 200
	if s := os.Getenv("TACT_GRAMMAR_DRAWS"); s != "" {
		draws, _ = strconv.Atoi(s)
	}
	cases := corpusSchemas(t)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	var agree, newOnly, oldOnly, refusedBoth, widenedCount, drawn, drawnValid int
	var newOnlyNames []string
	oldWidened, oldKeys, newKeys := 0, map[string]int{}, map[string]int{}
	for _, name := range names {
		raw := cases[name]
		v, err := schema.Compile(raw)
		if err != nil {
			t.Errorf("%s: the corpus schema does not compile: %v", name, err)
			continue
		}
		oldOK := false
		if gb, err := bindingGBNF(raw); err == nil {
			oldOK = llamaParses(gb)
		}
		// What the old path left to the validator (llama.cpp's converter
		// takes only what schema.Normalize leaves it).
		if n, err := schema.Normalize(raw); err == nil && len(n.Loosened) > 0 {
			oldWidened++
			for _, k := range n.Loosened {
				oldKeys[k]++
			}
		}
		g, err := grammar.FromSchema(raw)
		newOK := err == nil && llamaParses(g.GBNF)
		switch {
		case oldOK && newOK:
			agree++
		case newOK:
			newOnly++
			newOnlyNames = append(newOnlyNames, name)
		case oldOK:
			oldOnly++
			t.Errorf("%s: llama.cpp reads the old grammar, not the new one (err %v)", name, err)
		default:
			refusedBoth++
			t.Errorf("%s: no grammar either way (new: %v)", name, err)
		}
		if !newOK {
			continue
		}
		if len(g.Widened) > 0 {
			widenedCount++
			for _, k := range g.Widened {
				newKeys[k]++
			}
		}
		pg, err := gbnf.Parse(g.GBNF)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rng := rand.New(rand.NewPCG(uint64(len(raw)), 3))
		for i := range draws {
			text := pg.Generate(rng, 4+i%5)
			drawn++
			if !json.Valid([]byte(text)) {
				t.Fatalf("%s: draw %q is not JSON", name, text)
			}
			if _, err := v.ValidateJSON([]byte(text)); err == nil {
				drawnValid++
			} else if len(g.Widened) == 0 {
				t.Errorf("%s: draw %.300s refused: %v (nothing widened)", name, text, err)
				break
			}
		}
	}
	t.Logf("%d schemas: llama.cpp reads both grammars %d, only the new %d %v, only the old %d, neither %d; %d widened; %d/%d draws validate",
		len(cases), agree, newOnly, newOnlyNames, oldOnly, refusedBoth, widenedCount, drawnValid, drawn)
	t.Logf("schemas whose grammar leaves something to the validator: before %d %v, now %d %v", oldWidened, oldKeys, widenedCount, newKeys)
}

// BenchmarkGrammarLargest converts the corpus' largest schema with the
// binding's converter (before) and tact's (after), reporting the
// grammar's size; the time includes llama.cpp parsing the grammar.
func BenchmarkGrammarLargest(b *testing.B) {
	t := &testing.T{}
	cases := corpusSchemas(t)
	var name string
	for n, raw := range cases {
		if len(raw) > len(cases[name]) {
			name = n
		}
	}
	raw := cases[name]
	b.Logf("largest: %s, %d bytes", name, len(raw))
	for _, conv := range []struct {
		label string
		f     func([]byte) (string, error)
	}{{"binding", bindingGBNF}, {"tact", schemaGBNF}} {
		b.Run(conv.label, func(b *testing.B) {
			var size int
			for b.Loop() {
				gb, err := conv.f(raw)
				if err != nil {
					b.Fatal(err)
				}
				if !llamaParses(gb) {
					b.Fatal("llama.cpp cannot parse it")
				}
				size = len(gb)
			}
			b.ReportMetric(float64(size), "grammar-bytes")
		})
	}
}
