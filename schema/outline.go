package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Outline is how a prompt shows a schema: the schema itself (compact
// JSON) when it takes at most budget bytes, else a compact outline of
// what a value looks like (property names, types, enums, required ones,
// bounds), as detailed as fits: descriptions go first, then depth. The
// grammar and the validator hold the whole schema either way; the
// outline only has to tell the model what to write, so a large real
// schema fits a small model's window.
func Outline(raw json.RawMessage, budget int) string {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return string(raw)
	}
	if compact.Len() <= budget {
		return compact.String()
	}
	n, err := Normalize(raw)
	if err != nil {
		return cut(compact.String(), budget)
	}
	doc, _, err := decodeOrdered(n.Schema, maxNormalizeDepth)
	if err != nil {
		return cut(compact.String(), budget)
	}
	const intro = "(outline) "
	for depth := 12; depth >= 1; depth-- {
		for _, desc := range []bool{true, false} {
			o := &outliner{depth: depth, desc: desc}
			if s := intro + o.value(doc, 0); len(s) <= budget {
				return s
			}
		}
	}
	o := &outliner{depth: 1}
	return cut(intro+o.value(doc, 0), budget)
}

func cut(s string, n int) string {
	if len(s) <= n || n < 4 {
		return s
	}
	for n > 0 && !utf8Start(s[n-3]) {
		n--
	}
	return s[:n-3] + "..."
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

type outliner struct {
	depth int  // object and array levels shown in full
	desc  bool // descriptions shown
}

func (o *outliner) value(v any, level int) string {
	s, ok := v.(*object)
	if !ok {
		return "any"
	}
	if c, ok := s.vals["const"]; ok {
		return compactJSON(c)
	}
	if e, ok := s.vals["enum"].([]any); ok {
		parts := make([]string, len(e))
		for i, x := range e {
			parts[i] = compactJSON(x)
		}
		return strings.Join(parts, "|")
	}
	if list, ok := s.vals["anyOf"].([]any); ok {
		parts := make([]string, len(list))
		for i, b := range list {
			parts[i] = o.value(b, level)
		}
		return strings.Join(parts, " | ")
	}
	var types []string
	switch t := s.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if ts, ok := x.(string); ok {
				types = append(types, ts)
			}
		}
	}
	if len(types) == 6 {
		return "any"
	}
	if len(types) == 0 {
		types = []string{"object"}
		if _, ok := s.vals["items"]; ok {
			types = []string{"array"}
		}
	}
	parts := make([]string, 0, len(types))
	for _, t := range types {
		parts = append(parts, o.typed(s, t, level))
	}
	return strings.Join(parts, " | ")
}

func (o *outliner) typed(s *object, t string, level int) string {
	switch t {
	case "object":
		props, _ := s.vals["properties"].(*object)
		if props == nil || len(props.keys) == 0 {
			return "object"
		}
		if level >= o.depth {
			return "{...}"
		}
		required := map[string]bool{}
		if r, ok := s.vals["required"].([]any); ok {
			for _, x := range r {
				if name, ok := x.(string); ok {
					required[name] = true
				}
			}
		}
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range props.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			if !required[k] {
				b.WriteByte('?')
			}
			b.WriteString(": ")
			b.WriteString(o.value(props.vals[k], level+1))
			if o.desc {
				if ps, ok := props.vals[k].(*object); ok {
					if d, ok := ps.vals["description"].(string); ok && d != "" {
						fmt.Fprintf(&b, " /* %s */", strings.Join(strings.Fields(d), " "))
					}
				}
			}
		}
		if a, ok := s.vals["additionalProperties"]; ok && a != false {
			b.WriteString(", ...")
		}
		b.WriteByte('}')
		return b.String()
	case "array":
		items, ok := s.vals["items"]
		inner := "any"
		if ok {
			if level >= o.depth {
				inner = "..."
			} else {
				inner = o.value(items, level+1)
			}
		}
		return "[" + inner + "]" + bounds(s, "minItems", "maxItems")
	case "string":
		out := "string"
		if f, ok := s.vals["format"].(string); ok {
			out += "(" + f + ")"
		}
		if p, ok := s.vals["pattern"].(string); ok {
			out += " /" + p + "/"
		}
		return out + bounds(s, "minLength", "maxLength")
	case "integer", "number":
		return t + bounds(s, "minimum", "maximum")
	}
	return t
}

func bounds(s *object, lo, hi string) string {
	l, hasL := s.vals[lo]
	h, hasH := s.vals[hi]
	switch {
	case hasL && hasH:
		return fmt.Sprintf(" %v..%v", l, h)
	case hasL:
		return fmt.Sprintf(" >=%v", l)
	case hasH:
		return fmt.Sprintf(" <=%v", h)
	}
	return ""
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}
