package schema

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/schema/schematest"
)

// Patterns are ECMA-262: what real schemas write compiles, and the
// classes mean what ECMA-262 says; Go's syntax still compiles where
// ECMA-262's refuses it (no schema tact took before is refused now).
func TestCompilePattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{`^(?=.*\d)(?=.*[a-z])[a-z\d]{8,}$`, []string{"abcdefg1"}, []string{"abcdefgh", "12345678", "ab1"}}, // lookahead (password rules)
		{`^(?!-)[a-z-]+$`, []string{"a-b"}, []string{"-ab"}},                                                // negative lookahead
		{`(?<=\$)\d+`, []string{"$42"}, []string{"42"}},                                                     // lookbehind
		{`^\cJ$`, []string{"\n"}, []string{"J"}},                                                            // \c control escape
		{`^\u{1F600}$`, []string{"😀"}, []string{"u"}},                                                       // the "u" flag's escape
		{`^\s$`, []string{" ", "\t", "\u00a0", "\ufeff", "\u2028", "\u3000"}, []string{"a", "\u180e"}},      // ECMA-262 WhiteSpace and LineTerminator
		{`^\d$`, []string{"7"}, []string{"\u0967", "\u07c0"}},                                               // ASCII digits only
		{`^\w+$`, []string{"a_Z9"}, []string{"é", "ü"}},                                                     // ASCII word characters only
		{`^[^]$`, []string{"x", "\n"}, []string{""}},                                                        // ECMA-262's "anything" class
		{`^\p{L}+$`, []string{"héllo"}, []string{"h3"}},                                                     // Unicode property
		{`^(?P<year>\d{4})$`, []string{"2024"}, []string{"24"}},                                             // Go's syntax: by Go's regexp
		{`^\p{Greek}+$`, []string{"αβ"}, []string{"ab"}},
		{`^[a-z]{2,3}$`, []string{"ab"}, []string{"abcd"}},
	} {
		re, err := CompilePattern(tc.pattern)
		if err != nil {
			t.Errorf("%q: %v", tc.pattern, err)
			continue
		}
		for _, s := range tc.match {
			if !re.MatchString(s) {
				t.Errorf("%q does not match %q", tc.pattern, s)
			}
		}
		for _, s := range tc.noMatch {
			if re.MatchString(s) {
				t.Errorf("%q matches %q", tc.pattern, s)
			}
		}
	}
	for _, bad := range []string{`(`, `[a-`, `a{2,1}`, `\k<nope>x(`} {
		if _, err := CompilePattern(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

// A pattern that backtracks catastrophically ends at the time limit as
// no match: the value is refused, the run goes on.
func TestPatternMatchBounded(t *testing.T) {
	defer func(d time.Duration) { patternMatchTimeout = d }(patternMatchTimeout)
	patternMatchTimeout = 50 * time.Millisecond
	re, err := CompilePattern(`^(a+)+$`)
	if err != nil {
		t.Fatal(err)
	}
	if re.MatchString(strings.Repeat("a", 64) + "!") {
		t.Fatal("matched")
	}
	v := MustCompile(json.RawMessage(`{"type":"string","pattern":"^(a|aa)+$"}`))
	if err := v.Validate(strings.Repeat("a", 80) + "b"); err == nil || !strings.Contains(err.Error(), "does not match pattern") {
		t.Fatalf("got %v", err)
	}
}

// Real schemas with ECMA-262 patterns are valid JSON Schemas for --schema
// (format "regex" in the meta-schema checks them with the same engine).
func TestAnswerSchemaECMAPatterns(t *testing.T) {
	for _, raw := range []string{
		`{"type":"string","pattern":"^(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)$"}`,
		`{"type":"object","patternProperties":{"^(?!x-)\\w+$":{"type":"string"}}}`,
		`{"type":"string","pattern":"^\\cA$"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"string","format":"regex"}`,
	} {
		if _, err := CompileAnswer([]byte(raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	v := MustCompile(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"string","format":"regex"}`))
	if err := v.Validate(`^(?=a)a$`); err != nil {
		t.Errorf("an ECMA-262 regex is not a regex: %v", err)
	}
	if err := v.Validate(`(`); err == nil {
		t.Error("an unclosed group is a regex")
	}
}

// The suite's optional ECMA-262 cases (tests/draft2020-12/optional/
// ecmascript-regex.json) pass: "\s", "\d", "\w", "$", "\c", "\u{...}",
// Unicode properties as ECMA-262 has them.
func TestSuiteECMARegex(t *testing.T) {
	cases, err := schematest.Suite(suiteRoot, "tests/draft2020-12/optional", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 70 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		v, err := Compile(c.Schema)
		if err != nil {
			t.Errorf("%s: does not compile: %v", c.Name(), err)
			continue
		}
		if got := v.Validate(decode(t, c.Data)) == nil; got != c.Valid {
			t.Errorf("%s: valid=%v, want %v", c.Name(), got, c.Valid)
		}
	}
}
