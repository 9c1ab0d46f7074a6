package grammar

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tactcli/tact/grammar/gbnf"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/schema/schematest"
)

// parse converts a schema and parses its grammar with the Go reader of
// GBNF: it must parse, and every rule must be able to end.
func parse(t testing.TB, raw string) (*Grammar, *gbnf.Grammar) {
	t.Helper()
	g, err := FromSchema(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("FromSchema(%s): %v", raw, err)
	}
	pg, err := gbnf.Parse(g.GBNF)
	if err != nil {
		t.Fatalf("the grammar does not parse: %v\n%s", err, g.GBNF)
	}
	if err := pg.Productive(); err != nil {
		t.Fatalf("%v\n%s", err, g.GBNF)
	}
	return g, pg
}

// drawValid draws n texts from the grammar and checks each is JSON that
// the schema accepts (where nothing was widened: a widened grammar may
// draw what the validator then refuses, by design); it returns how many
// the validator refused.
func drawValid(t *testing.T, raw string, g *Grammar, pg *gbnf.Grammar, n int, seed uint64) int {
	t.Helper()
	v, err := schema.Compile(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	refused := 0
	for i := range n {
		text := pg.Generate(rng, 6+i%6)
		if !json.Valid([]byte(text)) {
			t.Fatalf("draw %d is not JSON: %q\n%s", i, text, g.GBNF)
		}
		if _, err := v.ValidateJSON([]byte(text)); err != nil {
			refused++
			if len(g.Widened) == 0 {
				t.Fatalf("draw %d is refused by the schema, and nothing was widened: %s: %v\nschema %s\n%s", i, text, err, raw, g.GBNF)
			}
		}
	}
	return refused
}

// Every real-world shape: the grammar parses, produces the shape's valid
// instances, and 200 draws from it are JSON the schema accepts.
func TestShapes(t *testing.T) {
	for _, sh := range schematest.Shapes {
		t.Run(sh.Name, func(t *testing.T) {
			g, pg := parse(t, sh.Schema)
			for _, v := range sh.Valid {
				if !pg.Accepts(v) {
					t.Errorf("the grammar refuses %s\n%s", v, g.GBNF)
				}
			}
			refused := drawValid(t, sh.Schema, g, pg, 200, 1)
			t.Logf("widened %q; %d/200 draws refused by the validator", g.Widened, refused)
		})
	}
}

// What each construct holds, tried on texts in and out.
func TestConstructs(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		in, out      []string
		widened      []string
	}{
		{"anchored pattern", `{"type":"string","pattern":"^[a-z]+-\\d{2}$"}`,
			[]string{`"ab-12"`, `"z-00"`}, []string{`"ab-1"`, `"Ab-12"`, `"x ab-12"`, `""`}, nil},
		{"unanchored pattern", `{"type":"string","pattern":"ab+c"}`,
			[]string{`"abc"`, `"xxabbbcyy"`}, []string{`"ac"`, `""`}, nil},
		{"pattern alternation anchored per branch", `{"type":"string","pattern":"^a$|^bc"}`,
			[]string{`"a"`, `"bcd"`}, []string{`"ab"`, `"xbc"`}, nil},
		{"pattern with quote and backslash", `{"type":"string","pattern":"^[\"\\\\]x$"}`,
			[]string{`"\"x"`, `"\\x"`}, []string{`""x"`, `"x"`}, nil},
		{"pattern \\u escape", `{"type":"string","pattern":"^\\u00e9+$"}`,
			[]string{`"éé"`}, []string{`"e"`}, nil},
		{"case-insensitive group", `{"type":"string","pattern":"^(?i:ab)$"}`,
			[]string{`"aB"`, `"AB"`}, []string{`"ac"`}, nil},
		{"lookahead is widened", `{"type":"string","pattern":"^(?=a)a+$"}`,
			[]string{`"a"`, `"zzz"`}, nil, []string{"pattern"}},
		{"word boundary is widened", `{"type":"string","pattern":"\\bcat\\b"}`,
			[]string{`"dog"`}, nil, []string{"pattern"}},
		{"string lengths", `{"type":"string","minLength":2,"maxLength":3}`,
			[]string{`"ab"`, `"a\"c"`, `"éλ中"`}, []string{`"a"`, `"abcd"`}, nil},
		{"date", `{"type":"string","format":"date"}`, []string{`"2026-11-28"`}, []string{`"2026-13-01"`, `"26-11-28"`}, []string{"format (the calendar)"}},
		{"time", `{"type":"string","format":"time"}`, []string{`"23:59:60Z"`, `"08:00:00.5+01:00"`}, []string{`"24:00:00Z"`, `"08:00"`}, []string{"format (the calendar)"}},
		{"date-time", `{"type":"string","format":"date-time"}`, []string{`"2026-11-28T23:38:01Z"`}, []string{`"2026-11-28 23:38:01"`}, []string{"format (the calendar)"}},
		{"uuid", `{"type":"string","format":"uuid"}`, []string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`}, nil},
		{"unknown format is widened", `{"type":"string","format":"email"}`, []string{`"x"`}, nil, []string{"format"}},
		{"integer range", `{"type":"integer","minimum":-12,"maximum":105}`,
			[]string{"-12", "-1", "0", "7", "99", "105"}, []string{"-13", "106", "1000", "-0", "01"}, nil},
		{"exclusive bounds", `{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}`,
			[]string{"1", "9"}, []string{"0", "10"}, nil},
		{"minimum only", `{"type":"integer","minimum":18}`, []string{"18", "19", "100", "123456"}, []string{"17", "-5", "9"}, nil},
		{"maximum only", `{"type":"integer","maximum":-3}`, []string{"-3", "-40", "-1000"}, []string{"-2", "0", "5"}, nil},
		{"tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`,
			[]string{`["a",1]`, `["a"]`, `[]`}, []string{`["a",1,2]`, `[1]`}, nil},
		{"tuple then items", `{"type":"array","prefixItems":[{"const":"x"}],"items":{"type":"boolean"},"minItems":2}`,
			[]string{`["x",true]`, `["x",true,false]`}, []string{`["x"]`, `["x",1]`}, nil},
		{"draft-07 tuple", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"integer"}],"additionalItems":false}`,
			[]string{`[1]`, `[]`}, []string{`[1,2]`}, nil},
		{"array bounds", `{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3}`,
			[]string{`[1]`, `[1, 2,3]`}, []string{`[]`, `[1,2,3,4]`}, nil},
		{"recursion", `{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"k":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["v"]}},"$ref":"#/$defs/n"}`,
			[]string{`{"v":1,"k":[{"v":2,"k":[{"v":3,"k":[{"v":4,"k":[{"v":5}]}]}]}]}`}, []string{`{"v":1,"k":[{}]}`}, nil},
		{"optional properties in any subset", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"},"d":{"type":"integer"}},"additionalProperties":false}`,
			[]string{`{}`, `{"b":1}`, `{"a":1,"d":2}`, `{"a":1,"b":2,"c":3,"d":4}`, `{"c":1,"d":2}`}, []string{`{"e":1}`, `{"b":1,"a":2}`, `{,"a":1}`, `{"a":1,}`}, nil},
		{"additional properties schema", `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}}`,
			[]string{`{"a":1,"x":"y"}`, `{"x":"y","z":"w"}`, `{}`}, []string{`{"x":1}`}, nil},
		{"any object", `{"type":"object"}`, []string{`{}`, `{"a":[1,{"b":null}]}`}, []string{`[]`}, nil},
		{"property with only a description", `{"type":"object","properties":{"v":{"description":"anything"}},"required":["v"]}`,
			[]string{`{"v":1}`, `{"v":{"x":[true]}}`}, []string{`{}`}, nil},
		{"odd property names", `{"type":"object","properties":{"a\"b":{"type":"integer"},"":{"type":"integer"},"é<>":{"type":"integer"}},"required":["a\"b","","é<>"]}`,
			[]string{`{"a\"b":1,"":2,"é<>":3}`}, nil, nil},
		{"big integer const", `{"const":12345678901234567890}`, []string{"12345678901234567890"}, []string{"12345678901234567000"}, nil},
		{"bounded whitespace", `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`,
			[]string{"{\n  \"a\": 1\n}", `{ "a" : 1 }`}, []string{`{` + strings.Repeat(" ", 40) + `"a":1}`}, nil},
		{"type list with keywords per type", `{"type":["string","integer","null"],"maxLength":2,"minimum":5}`,
			[]string{`"ab"`, `7`, `null`}, []string{`"abc"`, `4`}, nil},
		{"draft-04 id as a base", `{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://x.test/root.json","type":"object","definitions":{"a":{"id":"#a","type":"integer"}},"properties":{"p":{"$ref":"#a"},"q":{"$ref":"http://x.test/root.json#/definitions/a"}},"required":["p","q"]}`,
			[]string{`{"p":1,"q":2}`}, []string{`{"p":"x","q":2}`, `{"p":1,"q":[]}`}, nil},
		{"oneOf is widened", `{"oneOf":[{"type":"integer"},{"type":"number"}]}`, []string{`1`, `1.5`}, nil, []string{"oneOf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, pg := parse(t, tc.schema)
			for _, s := range tc.in {
				if !pg.Accepts(s) {
					t.Errorf("refuses %s\n%s", s, g.GBNF)
				}
			}
			for _, s := range tc.out {
				if pg.Accepts(s) {
					t.Errorf("accepts %s\n%s", s, g.GBNF)
				}
			}
			if !slices.Equal(g.Widened, tc.widened) {
				t.Errorf("widened %q, want %q", g.Widened, tc.widened)
			}
			drawValid(t, tc.schema, g, pg, 50, 2)
		})
	}
}

// Integer ranges, every value around the bounds.
func TestIntRanges(t *testing.T) {
	for _, r := range [][2]int64{{0, 0}, {0, 9}, {3, 120}, {-120, -3}, {-7, 7}, {10, 10}, {99, 101}, {-1000, 999}, {123, 4567}, {1, 1000000}} {
		lo, hi := r[0], r[1]
		e, ok := intRange(&lo, &hi)
		if !ok {
			t.Fatalf("%d..%d not written", lo, hi)
		}
		pg, err := gbnf.Parse("root ::= " + e + "\n")
		if err != nil {
			t.Fatalf("%d..%d: %v\n%s", lo, hi, err, e)
		}
		check := func(v int64) {
			if got, want := pg.Accepts(fmt.Sprint(v)), v >= lo && v <= hi; got != want {
				t.Errorf("%d..%d: %d accepted %v\n%s", lo, hi, v, got, e)
			}
		}
		for v := lo - 60; v <= lo+60; v++ {
			check(v)
		}
		for v := hi - 60; v <= hi+60; v++ {
			check(v)
		}
	}
}

// Limits: a schema whose grammar would be too big is refused with the
// path where it grew; repetitions past the budget are widened.
func TestLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 3000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"enum":["%s"]}`, i, strings.Repeat("v", 6000))
	}
	b.WriteString(`}}`)
	// Simplify keeps 1024 properties of one object; each of 6 KB.
	g, err := FromSchema(json.RawMessage(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.GBNF) > MaxBytes {
		t.Fatalf("%d bytes", len(g.GBNF))
	}
	// Repetitions llama.cpp writes out as rules: bounded over the grammar.
	b.Reset()
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 40 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"s%d":{"type":"string","minLength":%d,"maxLength":1000}`, i, i)
	}
	b.WriteString(`}}`)
	g, _ = parse(t, b.String())
	if !slices.ContainsFunc(g.Widened, func(w string) bool { return strings.Contains(w, "axLength") }) {
		t.Errorf("widened %q", g.Widened)
	}
	// Nested repetitions in a pattern multiply: widened, not written out.
	g, _ = parse(t, `{"type":"string","pattern":"^((a{1000}){1000}){1000}$"}`)
	if !slices.Contains(g.Widened, "pattern") {
		t.Errorf("widened %q", g.Widened)
	}
}

// A grammar too big names where: a schema of many large enums.
func TestTooBigNamesPath(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"enum":["%d%s","%s"]}`, i, i, strings.Repeat("v", 9000), strings.Repeat("w", 9000))
	}
	b.WriteString(`}}`)
	_, err := FromSchema(json.RawMessage(b.String()))
	if err == nil || !strings.Contains(err.Error(), "#/properties/p") || !strings.Contains(err.Error(), "MiB") {
		t.Fatalf("err = %v", err)
	}
}

// An answer schema as tact embeds it (schema.FinalAnswerArgs: a resource
// of its own, draft-04's id and $schema kept): its references resolve in
// the grammar as in the validator.
func TestEmbeddedAnswerSchemas(t *testing.T) {
	for _, answer := range []string{
		`{"$defs":{"w":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},"type":"object","properties":{"where":{"$ref":"#/$defs/w"}},"required":["where"]}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://x.test/a.json","definitions":{"n":{"id":"#n","type":"integer","minimum":1,"maximum":5}},"type":"object","properties":{"v":{"$ref":"#n"}},"required":["v"]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/x","definitions":{"x":{"type":"array","items":{"type":"string","format":"date"}}}}`,
	} {
		args := string(schema.FinalAnswerArgs(json.RawMessage(answer)))
		g, pg := parse(t, args)
		if len(g.Widened) > 0 && !slices.Equal(g.Widened, []string{"format (the calendar)"}) {
			t.Errorf("%s: widened %q\n%s", args, g.Widened, g.GBNF)
		}
		drawValid(t, args, g, pg, 100, 5)
	}
}
