package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A server's input schema becomes the grammar's schema through
// schema.NormalizeArgs, as client tools and built-ins do: $refs inlined
// (pydantic's), untyped properties as any value, and what the grammar
// cannot say validated before each call.
func TestToolSchemaNormalized(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		dropped      []string
	}{
		{"pydantic", `{"$defs":{"W":{"type":"object","properties":{"city":{"type":"string","description":"the city"}},"required":["city"]}},"type":"object","properties":{"w":{"$ref":"#/$defs/W"},"any":{"description":"any value"}},"required":["w"]}`, nil},
		{"pattern", `{"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{3}$"}}}`, []string{"pattern"}},
		{"recursive", `{"type":"object","properties":{"n":{"$ref":"#"}}}`, []string{"$ref (recursive)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in any
			if err := json.Unmarshal([]byte(tc.schema), &in); err != nil {
				t.Fatal(err)
			}
			grammar, full, dropped, err := toolSchema(in)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(grammar), "$ref") || !slices.Equal(dropped, tc.dropped) || (full != nil) != (len(tc.dropped) > 0) {
				t.Fatalf("grammar %s, dropped %q, full %v", grammar, dropped, full != nil)
			}
			if tc.name == "pydantic" && !strings.Contains(string(grammar), `"description":"the city"`) {
				t.Fatalf("descriptions (shown in prompts) lost: %s", grammar)
			}
		})
	}
}
