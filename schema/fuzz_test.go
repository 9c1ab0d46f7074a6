package schema

import (
	"encoding/json"
	"testing"

	"github.com/tactcli/tact/schema/schematest"
)

// FuzzClientToolSchema takes a tool schema as tact serve's clients send it
// and an instance: the size check, compiling, normalizing for the grammar
// and validating never panic; every schema the validator accepts
// normalizes to a grammar-shaped schema the validator accepts too, of
// bounded size, that normalizing again leaves as it is; and an instance
// the original accepts, the normalized schema accepts (it only loosens).
func FuzzClientToolSchema(f *testing.F) {
	for _, sh := range schematest.Shapes {
		for _, v := range append(sh.Valid, sh.Invalid...) {
			f.Add(sh.Schema, v)
		}
	}
	f.Add(`{"$ref":"#"}`, `{}`)
	f.Add(`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`)
	f.Add(`{"items":[true,false],"$id":"x:y","anyOf":[{"$ref":"x:y#/items/0"}]}`, `[]`)
	f.Fuzz(func(t *testing.T, raw, instance string) {
		if !json.Valid([]byte(raw)) || CheckSize([]byte(raw)) != nil {
			return
		}
		orig, err := Compile(json.RawMessage(raw))
		if err != nil {
			return
		}
		n, err := NormalizeArgs(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("a schema the validator accepts does not normalize: %v", err)
		}
		_, objects, _ := decodeOrdered([]byte(raw), maxNormalizeDepth)
		if n.Nodes > objects+maxExpansion+1 {
			t.Fatalf("%d subschemas from %d objects", n.Nodes, objects)
		}
		norm, err := Compile(n.Schema)
		if err != nil {
			t.Fatalf("the normalized schema does not compile: %v\n%s", err, n.Schema)
		}
		var doc any
		if err := json.Unmarshal(n.Schema, &doc); err != nil {
			t.Fatal(err)
		}
		if err := grammarShaped(doc, "#"); err != nil {
			t.Fatalf("%v\n%s", err, n.Schema)
		}
		if again, err := NormalizeArgs(n.Schema); err != nil || string(again.Schema) != string(n.Schema) {
			t.Fatalf("normalizing again changed it:\n%s\n%s (%v)", n.Schema, again.Schema, err)
		}
		inst, err := orig.ValidateJSON([]byte(instance))
		if err != nil {
			return
		}
		// Arguments are objects: NormalizeArgs makes the schema one's.
		if _, isObject := inst.(map[string]any); isObject {
			if _, err := norm.ValidateJSON([]byte(instance)); err != nil {
				t.Fatalf("the normalized schema refuses %s, which the original accepts: %v\noriginal %s\nnormalized %s", instance, err, raw, n.Schema)
			}
		}
		whole, err := Normalize(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := MustCompile(whole.Schema).ValidateJSON([]byte(instance)); err != nil {
			t.Fatalf("the normalized schema refuses %s, which the original accepts: %v\noriginal %s\nnormalized %s", instance, err, raw, whole.Schema)
		}
	})
}
