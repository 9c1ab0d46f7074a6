package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/schema/schematest"
)

// grammarShaped reports the first subschema of a normalized schema that
// llama.cpp's converter would not handle: each must have a type, a const,
// an enum, an anyOf, properties or items, and none a $ref, allOf or oneOf.
func grammarShaped(v any, at string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: %T is not a schema object", at, v)
	}
	for _, k := range []string{"$ref", "allOf", "oneOf", "$defs", "definitions", "pattern", "not"} {
		if _, ok := m[k]; ok {
			return fmt.Errorf("%s: keeps %s", at, k)
		}
	}
	known := false
	for _, k := range []string{"type", "const", "enum", "anyOf", "properties", "items"} {
		if _, ok := m[k]; ok {
			known = true
		}
	}
	if a, ok := m["additionalProperties"]; ok && a != true {
		known = true
	}
	if !known {
		return fmt.Errorf("%s: nothing a grammar is built from: %v", at, m)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			if err := grammarShaped(p, at+"/properties/"+name); err != nil {
				return err
			}
		}
	}
	if a, ok := m["additionalProperties"]; ok {
		if _, isBool := a.(bool); !isBool {
			if err := grammarShaped(a, at+"/additionalProperties"); err != nil {
				return err
			}
		}
	}
	if it, ok := m["items"]; ok {
		if err := grammarShaped(it, at+"/items"); err != nil {
			return err
		}
	}
	if list, ok := m["anyOf"].([]any); ok {
		for i, b := range list {
			if err := grammarShaped(b, fmt.Sprintf("%s/anyOf/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// What each shape's normalization leaves to the validator: nil means
// nothing (the grammar checks all the original does).
var wantLoosened = map[string][]string{
	"pydantic model with $defs":      nil,
	"local ref to a definition":      nil,
	"nested refs":                    nil,
	"refs to refs":                   nil,
	"pydantic v1 allOf around a ref": nil,
	"anyOf of refs and null":         nil,
	"discriminated oneOf of refs":    {"oneOf"},
	"description only":               nil,
	"title only and empty":           nil,
	"enum and const mixes":           nil,
	"type arrays":                    nil,
	"additionalProperties schema":    nil,
	"patternProperties":              {"patternProperties"},
	"recursive ref":                  {"$ref (recursive)"},
	"recursion through the root":     {"$ref (recursive)"},
	"mutual recursion":               {"$ref (recursive)"},
	"ref with siblings":              nil,
	"keywords beside anyOf":          nil,
	"allOf of objects":               nil,
	"what a grammar cannot say": {"dependentRequired", "if", "maxLength", "minItems", "minProperties", "minimum/maximum",
		"multipleOf", "not", "pattern", "prefixItems", "then", "uniqueItems"},
	"integer bounds":                      {"minimum/maximum"},
	"anchor and $id refs":                 nil,
	"draft-07":                            {"format", "items (tuple)"},
	"draft-04":                            {"exclusiveMinimum"},
	"required without properties":         nil,
	"numbers a grammar cannot write back": {"const", "enum"},
	"deep but within limits":              nil,
	"root without a type":                 nil,
	"dynamic ref":                         {"$dynamicRef"},
	"odd property names":                  nil,
	"untyped keywords of one type":        {"keywords of a type the schema does not name"},
	"formats":                             {"format"},
	"boolean schemas":                     nil,
}

// Every shape: the original compiles, the normalized schema compiles and
// is grammar-shaped, normalizing again changes nothing, the instances the
// original accepts the normalized one accepts too, and what it loosens is
// named.
func TestNormalizeShapes(t *testing.T) {
	for _, sh := range schematest.Shapes {
		t.Run(sh.Name, func(t *testing.T) {
			orig, err := Compile(json.RawMessage(sh.Schema))
			if err != nil {
				t.Fatalf("the original does not compile: %v", err)
			}
			nz, err := NormalizeArgs(json.RawMessage(sh.Schema))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\nloosened %q", nz.Schema, nz.Loosened)
			norm, err := Compile(nz.Schema)
			if err != nil {
				t.Fatalf("the normalized schema does not compile: %v\n%s", err, nz.Schema)
			}
			var doc any
			if err := json.Unmarshal(nz.Schema, &doc); err != nil {
				t.Fatal(err)
			}
			if err := grammarShaped(doc, "#"); err != nil {
				t.Fatal(err)
			}
			if doc.(map[string]any)["type"] != "object" && doc.(map[string]any)["anyOf"] == nil {
				t.Errorf("the arguments schema is not an object's: %s", nz.Schema)
			}
			again, err := NormalizeArgs(nz.Schema)
			if err != nil || string(again.Schema) != string(nz.Schema) {
				t.Errorf("normalizing again changed it:\n%s\n%s (%v)", nz.Schema, again.Schema, err)
			}
			for _, v := range sh.Valid {
				if _, err := orig.ValidateJSON([]byte(v)); err != nil {
					t.Errorf("the original refuses its valid %s: %v", v, err)
				}
				if _, err := norm.ValidateJSON([]byte(v)); err != nil {
					t.Errorf("the normalized schema refuses %s: %v", v, err)
				}
			}
			for _, v := range sh.Invalid {
				if _, err := orig.ValidateJSON([]byte(v)); err == nil {
					t.Errorf("the original accepts its invalid %s", v)
				}
			}
			want, ok := wantLoosened[sh.Name]
			if !ok {
				t.Fatalf("no expectation for %q", sh.Name)
			}
			if !slices.Equal(nz.Loosened, want) {
				t.Errorf("loosened %q, want %q", nz.Loosened, want)
			}
		})
	}
}

// A top-level property named "" would name the grammar's root rule: a
// grammar's own root schema loosens it; an arguments schema, embedded
// under "args", keeps it.
func TestNormalizeEmptyNameAtRoot(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"":{"type":"string"},"a":{"type":"integer"}}}`)
	n, err := Normalize(raw)
	if err != nil || string(n.Schema) != `{"type":"object"}` || !slices.Equal(n.Loosened, []string{"properties (an empty name)"}) {
		t.Fatalf("%s %q %v", n.Schema, n.Loosened, err)
	}
	n, err = NormalizeArgs(raw)
	if err != nil || len(n.Loosened) > 0 || !strings.Contains(string(n.Schema), `"":{"type":"string"}`) {
		t.Fatalf("%s %q %v", n.Schema, n.Loosened, err)
	}
}

// Property order is the original's: a grammar writes properties in schema
// order, and a client orders them on purpose.
func TestNormalizeKeepsOrder(t *testing.T) {
	nz, err := NormalizeArgs(json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"$ref":"#/$defs/a"},"mid":{"type":"integer"}},"$defs":{"a":{"type":"object","properties":{"y":{},"b":{}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := string(nz.Schema)
	if !(strings.Index(s, `"zeta"`) < strings.Index(s, `"alpha"`) && strings.Index(s, `"alpha"`) < strings.Index(s, `"mid"`) && strings.Index(s, `"y"`) < strings.Index(s, `"b"`)) {
		t.Fatalf("order lost: %s", s)
	}
}

// $ref expansion is bounded: a schema whose refs double at every level
// (2^30 leaves if inlined) normalizes quickly to a bounded size, the
// refs past the budget loosened.
func TestNormalizeExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range 30 {
		fmt.Fprintf(&b, `"d%d":{"type":"object","properties":{"l":{"$ref":"#/$defs/d%d"},"r":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
	}
	b.WriteString(`"d30":{"type":"string"}}}`)
	start := time.Now()
	nz, err := NormalizeArgs(json.RawMessage(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s", took)
	}
	if nz.Nodes > 2*maxExpansion || len(nz.Schema) > 1<<20 {
		t.Errorf("%d nodes, %d bytes", nz.Nodes, len(nz.Schema))
	}
	if !slices.Contains(nz.Loosened, "$ref (expansion limit)") && !slices.Contains(nz.Loosened, "$ref (nested too deep)") {
		t.Errorf("loosened %q", nz.Loosened)
	}
	if _, err := Compile(nz.Schema); err != nil {
		t.Fatal(err)
	}
}

// anyOf merges are bounded too: allOf of anyOfs multiplies branches.
func TestNormalizeBranchesBounded(t *testing.T) {
	var parts []string
	for i := range 12 {
		parts = append(parts, fmt.Sprintf(`{"anyOf":[{"properties":{"a%d":{"type":"string"}}},{"properties":{"b%d":{"type":"string"}}}]}`, i, i))
	}
	nz, err := NormalizeArgs(json.RawMessage(`{"type":"object","allOf":[` + strings.Join(parts, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	if nz.Nodes > 2*maxExpansion || !slices.Contains(nz.Loosened, "anyOf (too many branches to merge)") {
		t.Fatalf("%d nodes, loosened %q", nz.Nodes, nz.Loosened)
	}
}

func TestCheckSize(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{}` + strings.Repeat(`}}`, n)
	}
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"just under the depth", nest(MaxToolSchemaDepth/2 - 1), ""},
		{"2,500 nested objects", nest(2500), "nests 5001 levels deep, at most 64"},
		{"brackets in strings do not count", `{"description":"` + strings.Repeat("{[", 100) + `"}`, ""},
		{"escaped quotes", `{"description":"\"{{{{{{{{\\"}`, ""},
		{"too big", `{"description":"` + strings.Repeat("x", MaxToolSchemaBytes) + `"}`, "at most 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSize([]byte(tc.schema))
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A reference that leads nowhere makes the schema bad (the validator
// refuses it too): an error, not a grammar that allows anything there.
func TestNormalizeDanglingRef(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`,
		`{"$ref":"#/$defs/missing","$defs":{"w":{"type":"string"}}}`,
		`{"items":{"$ref":"#/items/0"}}`,
	} {
		if _, err := Normalize(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), "$ref") {
			t.Errorf("Normalize(%s) = %v, want a $ref error", raw, err)
		}
	}
}
