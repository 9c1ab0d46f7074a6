package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A schema within the budget is shown as it is; a larger one as an
// outline within the budget that still names every top-level property,
// the required ones without '?', and enums.
func TestOutline(t *testing.T) {
	small := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`
	if got := Outline(json.RawMessage(small), 1000); got != small {
		t.Fatalf("small schema changed: %s", got)
	}
	var b strings.Builder
	b.WriteString(`{"type":"object","$defs":{"kind":{"enum":["x","y"],"description":"` + strings.Repeat("long words ", 50) + `"}},"properties":{`)
	for i := range 40 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"description":"%s","type":"object","properties":{"k":{"$ref":"#/$defs/kind"},"n":{"type":"integer","minimum":1,"maximum":9},"deep":{"type":"array","items":{"type":"object","properties":{"z":{"type":"string","format":"date"}}}}},"required":["k"]}`, i, strings.Repeat("about this ", 20))
	}
	b.WriteString(`},"required":["p0"]}`)
	raw := json.RawMessage(b.String())
	for _, budget := range []int{6 << 10, 2 << 10} {
		got := Outline(raw, budget)
		if len(got) > budget {
			t.Fatalf("outline of %d bytes over the budget %d", len(got), budget)
		}
		if !strings.HasPrefix(got, "(outline) {p0: ") || !strings.Contains(got, "p39?: ") {
			t.Errorf("budget %d: %s", budget, got)
		}
		t.Logf("%d bytes of %d: %s", len(got), len(raw), got)
	}
	if got := Outline(raw, 6<<10); !strings.Contains(got, `k: "x"|"y"`) || !strings.Contains(got, "n?: integer 1..9") {
		t.Errorf("detail lost at 6 KiB: %.400s", got)
	}
}
