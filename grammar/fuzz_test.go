package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/tactcli/tact/grammar/gbnf"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/schema/schematest"
)

// FuzzFromSchema: any schema the validator accepts within the limits on a
// schema from outside converts without panicking, within MaxBytes and
// MaxRules, to a grammar that parses, whose every rule can end, and whose
// draws are JSON; where nothing was widened, JSON the schema accepts.
func FuzzFromSchema(f *testing.F) {
	for _, sh := range schematest.Shapes {
		f.Add(sh.Schema)
	}
	for _, s := range []string{
		`{"type":"string","pattern":"^(a|b)*c{2,3}$"}`,
		`{"type":"string","pattern":"[^\"\\\\]+\\d?"}`,
		`{"type":"integer","minimum":-5,"maximum":12345}`,
		`{"type":"array","prefixItems":[{"type":"null"}],"items":false,"minItems":1}`,
		`{"$ref":"#","type":"object","properties":{"a":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"a":{},"b":{}},"additionalProperties":{"type":"integer"}}`,
		`{"type":"string","format":"date-time"}`,
		`{"enum":[1e400,"\u0000",{"a":[]}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) || schema.CheckSize([]byte(raw)) != nil {
			return
		}
		v, err := schema.Compile(json.RawMessage(raw))
		if err != nil {
			return
		}
		g, err := FromSchema(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("a schema the validator accepts does not convert: %v", err)
		}
		if len(g.GBNF) > MaxBytes || g.Rules > MaxRules {
			t.Fatalf("%d bytes, %d rules", len(g.GBNF), g.Rules)
		}
		pg, err := gbnf.Parse(g.GBNF)
		if err != nil {
			t.Fatalf("%v\n%s", err, g.GBNF)
		}
		if err := pg.Productive(); err != nil {
			t.Fatalf("%v\n%s", err, g.GBNF)
		}
		rng := rand.New(rand.NewPCG(uint64(len(raw)), 1))
		for range 3 {
			text := pg.Generate(rng, 5)
			if !json.Valid([]byte(text)) {
				t.Fatalf("draw %q is not JSON\n%s", text, g.GBNF)
			}
			if _, err := v.ValidateJSON([]byte(text)); err != nil && len(g.Widened) == 0 {
				t.Fatalf("draw %s refused (%v), nothing widened\nschema %s\n%s", text, err, raw, g.GBNF)
			}
		}
	})
}
