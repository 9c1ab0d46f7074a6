// Package text holds the small string helpers tact's packages share: the
// first line of a message, indentation, byte sizes for people, and cutting
// at a rune boundary.
package text

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// OneLine is s with every run of whitespace, newlines included, made one
// space, and none at either end.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Indent puts prefix before every non-empty line of s.
func Indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// DecimalSize formats n bytes in decimal units, as download sizes are
// given: 512B, 1.5KB, 248MB, 4.1GB.
func DecimalSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v < 10 {
		return fmt.Sprintf("%.1f%cB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.0f%cB", v, "KMGTPE"[exp])
}

// BinarySize formats n bytes in binary units, as memory and limits are
// given: "10 bytes", "2 KiB", "262 MiB", "9.3 GiB" (KiB and MiB rounded down).
func BinarySize(n uint64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatUint(n>>20, 10) + " MiB"
	case n >= 1<<10:
		return strconv.FormatUint(n>>10, 10) + " KiB"
	}
	return strconv.FormatUint(n, 10) + " bytes"
}

// RuneStart moves i back to the start of the UTF-8 sequence it falls in,
// so s[:RuneStart(s, i)] never ends inside a rune. In invalid UTF-8 (no
// start within UTFMax-1 bytes) i stays.
func RuneStart(s string, i int) int {
	i = min(max(i, 0), len(s))
	j := i
	for k := 0; k < utf8.UTFMax-1 && j > 0 && j < len(s) && !utf8.RuneStart(s[j]); k++ {
		j--
	}
	if j == len(s) || utf8.RuneStart(s[j]) {
		return j
	}
	return i
}

// JSON is json.Marshal without HTML escaping, so "<", ">" and "&" stay
// readable in commands, plans and traces.
func JSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Clip keeps at most n runes of s, ending in "…" when cut.
func Clip(s string, n int) string {
	n = max(n, 1)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}

// longValue is the size from which a clipped value also says how long it
// was: a listing that shows a 1 MB argument as 30 characters must not hide
// that it is 1 MB.
const longValue = 200

// ClipArgs is a call's JSON arguments for a one-line listing (the run
// display, the model-free summary): compact JSON, each string value cut
// to most runes (with its size when it is long), the whole to 8*most
// runes. Input that is not JSON is clipped as text.
func ClipArgs(raw json.RawMessage, most int) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Clip(string(raw), most)
	}
	b, err := JSON(clipStrings(v, most))
	if err != nil {
		return Clip(string(raw), most)
	}
	return Clip(strings.TrimSuffix(string(b), "\n"), 8*most)
}

func clipStrings(v any, most int) any {
	switch v := v.(type) {
	case string:
		c := Clip(v, most)
		if len(v) > longValue {
			c += " (" + DecimalSize(int64(len(v))) + ")"
		}
		return c
	case []any:
		for i := range v {
			v[i] = clipStrings(v[i], most)
		}
	case map[string]any:
		for k, x := range v {
			v[k] = clipStrings(x, most)
		}
	}
	return v
}

// JSONKind names the JSON type of a valid value as messages say it
// ("object", "array", "string", "boolean", "null", "number"; "nothing"
// for no bytes).
func JSONKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}
