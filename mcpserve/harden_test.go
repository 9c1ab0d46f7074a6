package mcpserve

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRunSchemaLimits: tact_exec's schema argument has the step API's
// depth and size limits, checked before it is compiled.
func TestRunSchemaLimits(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(nil)
	rows := []any{map[string]any{"tool": "final_answer", "args": map[string]any{"answer": "x"}}}
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 100) + `{}` + strings.Repeat(`}}`, 100)
	for _, c := range []struct{ schema, want string }{
		{deep, "schema: the schema nests 201 levels deep, at most 64"},
		{`{"description":"` + strings.Repeat("x", 70000) + `"}`, "schema: the schema takes"},
	} {
		text, isErr := call(t, cs, "tact_exec", map[string]any{"rows": rows, "schema": json.RawMessage(c.schema)})
		if !isErr || !strings.Contains(text, c.want) {
			t.Fatalf("%v %.200q, want an error holding %q", isErr, text, c.want)
		}
	}
}
