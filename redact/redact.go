// Package redact hides secrets (environment values that look like secrets,
// --redact patterns) in text and JSON, and finds cut points that never
// split a secret.
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every secret the Redactor finds.
const Redacted = "[REDACTED]"

// minSecretLen: shorter environment values ("1", "yes", "dev") would turn
// ordinary output into confetti, so they are not treated as secrets.
const minSecretLen = 4

// Redactor replaces secret environment values and user regexp matches with
// [REDACTED]. The zero value and nil redact nothing.
type Redactor struct {
	replacer *strings.Replacer
	lits     []string // literal secrets, longest first (for safe cuts)
	res      []*regexp.Regexp
}

// IsSecretEnvName reports whether an environment variable's value is treated
// as a secret: names ending in _KEY, _TOKEN or _SECRET, or containing
// PASSWORD (case-insensitive).
func IsSecretEnvName(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_TOKEN") ||
		strings.HasSuffix(n, "_SECRET") || strings.Contains(n, "PASSWORD")
}

// NewRedactor collects secret values from environ (KEY=VALUE pairs, as from
// os.Environ) and compiles patterns. A pattern that does not compile, or that
// matches the empty string (it would redact between every character), is an
// error naming it.
func NewRedactor(environ []string, patterns []string) (*Redactor, error) {
	seen := map[string]bool{}
	var lits []string
	add := func(s string) {
		if len(s) >= minSecretLen && !seen[s] {
			seen[s] = true
			lits = append(lits, s)
		}
	}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !IsSecretEnvName(name) {
			continue
		}
		add(val)
		// Also the forms the value takes inside JSON strings, so redacting
		// an already encoded trace line still catches it.
		for _, enc := range jsonStringForms(val) {
			add(enc)
		}
	}
	// Longest first: a secret that contains another is replaced whole.
	sort.SliceStable(lits, func(i, j int) bool { return len(lits[i]) > len(lits[j]) })
	r := &Redactor{lits: lits}
	if len(lits) > 0 {
		pairs := make([]string, 0, 2*len(lits))
		for _, l := range lits {
			pairs = append(pairs, l, Redacted)
		}
		r.replacer = strings.NewReplacer(pairs...)
	}
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact pattern %q: %v", p, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redact pattern %q: matches the empty string", p)
		}
		r.res = append(r.res, re)
	}
	return r, nil
}

// jsonStringForms returns val as it appears between the quotes of a JSON
// string, with and without HTML escaping, when that differs from val.
func jsonStringForms(val string) []string {
	var out []string
	if b, err := json.Marshal(val); err == nil {
		if s := string(b[1 : len(b)-1]); s != val {
			out = append(out, s)
		}
	}
	if s := marshalString(val); s != "" {
		if s = s[1 : len(s)-1]; s != val {
			out = append(out, s)
		}
	}
	return out
}

// Redact returns s with every secret replaced by [REDACTED]. Environment
// values go first so a user regexp cannot break one apart before it is found.
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	if r.replacer != nil {
		s = r.replacer.Replace(s)
	}
	for _, re := range r.res {
		s = re.ReplaceAllLiteralString(s, Redacted)
	}
	return s
}

// RedactJSON redacts the strings inside a JSON document (keys and values)
// and keeps everything else byte for byte, so a trace line stays valid JSON
// even when a user regexp would otherwise match across a quote. Input that
// is not valid JSON is redacted as plain text.
func (r *Redactor) RedactJSON(data []byte) []byte {
	if r == nil || len(data) == 0 {
		return data
	}
	return RedactJSONWith(data, r.Redact)
}

// RedactJSONWith is RedactJSON for any redacting function (redact may be
// nil: data is returned as is).
func RedactJSONWith(data []byte, redact func(string) string) []byte {
	if redact == nil || len(data) == 0 {
		return data
	}
	out, err := RewriteJSONStrings(data, redact)
	if err != nil {
		return []byte(redact(string(data)))
	}
	return out
}

// RewriteJSONStrings applies f to every string literal of a valid JSON
// document and re-encodes only the strings f changed.
func RewriteJSONStrings(data []byte, f func(string) string) ([]byte, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("invalid JSON")
	}
	var out bytes.Buffer
	out.Grow(len(data))
	i := 0
	for i < len(data) {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			out.Write(data[i:])
			break
		}
		start := i + q
		out.Write(data[i:start])
		// Find the closing quote, skipping escapes; valid JSON guarantees one.
		end := start + 1
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				end++
			}
			end++
		}
		lit := data[start : end+1]
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			return nil, err
		}
		if ns := f(s); ns != s {
			out.WriteString(marshalString(ns))
		} else {
			out.Write(lit)
		}
		i = end + 1
	}
	return out.Bytes(), nil
}

// marshalString encodes s as a JSON string without HTML escaping (<, >, &
// stay readable in prompts and traces).
func marshalString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
