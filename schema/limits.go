package schema

import "fmt"

// Limits on a tool's argument schema that comes from outside (tact serve's
// clients): checked on the raw bytes before anything builds a tree from
// them, since compiling a schema costs far more than its size suggests
// (2,500 nested objects in 92 KB took over a minute of CPU).
const (
	// MaxToolSchemaDepth is the deepest JSON nesting of one tool's
	// parameters schema: each nested object property takes two levels
	// ({"properties": {"name": {...}}}), so 32 nested objects.
	MaxToolSchemaDepth = 64
	// MaxToolSchemaBytes is the largest one tool's parameters schema.
	MaxToolSchemaBytes = 64 << 10
)

// CheckSize reports whether raw is within MaxToolSchemaBytes and
// MaxToolSchemaDepth, scanning its bytes once (no tree is built); the
// error names the limit. raw is assumed to be valid JSON (checked by the
// caller's decoder); a string's brackets are not counted.
func CheckSize(raw []byte) error {
	if d := Depth(raw); d > MaxToolSchemaDepth {
		return fmt.Errorf("the schema nests %d levels deep, at most %d (the limit on one tool's schema)", d, MaxToolSchemaDepth)
	}
	if len(raw) > MaxToolSchemaBytes {
		return fmt.Errorf("the schema takes %d bytes, at most %d (the limit on one tool's schema)", len(raw), MaxToolSchemaBytes)
	}
	return nil
}

// Depth is the deepest nesting of arrays and objects in a JSON text
// (0 for a scalar), counted on the bytes without decoding them.
func Depth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
