package schema

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzPattern takes a schema's pattern and a string to match, as a
// hostile schema (an MCP server's, a tact serve client's) and a model's
// answer bring them: compiling never panics, a compiled pattern keeps its
// text, and matching (alone, and through a schema's "pattern" and
// "patternProperties") always returns, bounded by patternMatchTimeout.
func FuzzPattern(f *testing.F) {
	for _, seed := range []struct{ p, s string }{
		{`^(a+)+$`, strings.Repeat("a", 40) + "!"},
		{`(a|a)*b`, strings.Repeat("a", 40)},
		{`(.*){1,32000}[bc]`, strings.Repeat("x", 64)},
		{`^(\w+\s?)*$`, strings.Repeat("word ", 12) + "!"},
		{`a{2147483647}`, "a"},
		{`((a{1000}){1000}){1000}`, "aaa"},
		{`(?<=a{100000})b`, "ab"},
		{`^\u{10FFFF}[\u{0}-\u{10FFFF}]$`, "\U0010FFFFx"},
		{`(?=(?=(?=a)))a`, "a"},
		{`(?<a>x)\k<a>`, "xx"},
		{`\k<a>(?<a>x)`, "x"},
		{strings.Repeat("(", 500) + "a" + strings.Repeat(")", 500), "a"},
		{`[\s\S]*?$`, "\u2028\ufeff"},
		{`\cA\c\`, "\x01"},
		{`(?P<x>a)`, "a"},
		{`\p{Letter}`, "é"},
		{`(?i)[\x{80}-\x{10FFFF}]`, "É"},
		{`\8\9\0`, "89\x00"},
	} {
		f.Add(seed.p, seed.s)
	}
	f.Fuzz(func(t *testing.T, pattern, subject string) {
		if len(pattern) > 1024 || len(subject) > 1024 {
			return
		}
		defer func(d time.Duration) { patternMatchTimeout = d }(patternMatchTimeout)
		patternMatchTimeout = time.Millisecond
		re, err := CompilePattern(pattern)
		if err == nil {
			if re.String() != pattern {
				t.Fatalf("compiled %q as %q", pattern, re.String())
			}
			returns(t, func() { re.MatchString(subject) })
		}
		p, _ := json.Marshal(pattern)
		raw := json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","pattern":` + string(p) + `}},"patternProperties":{` + string(p) + `:{"type":"string"}}}`)
		v, err := Compile(raw)
		if err != nil {
			return
		}
		returns(t, func() { _ = v.Validate(map[string]any{"s": subject, subject: subject}) })
	})
}

// returns fails the test when fn has not returned after far longer than
// patternMatchTimeout allows (a few matches, each ending within
// regexp2's clock period, 100ms, of its deadline): it hangs.
func returns(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("matching did not return")
	}
}
