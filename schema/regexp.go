package schema

import (
	"fmt"
	"regexp"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Patterns ("pattern", "patternProperties", format "regex") are ECMA-262
// regular expressions, as JSON Schema says: real schemas (JSON Schema
// Store's, pydantic's, zod's) use lookahead, "\c", "\u{...}", and mean
// "\s", "\d", "\w" as ECMA-262 defines them, which Go's regexp (RE2)
// either refuses or reads otherwise. regexp2's ECMAScript mode reads them
// as ECMA-262 does; it backtracks, so every match is bounded by
// patternMatchTimeout.
//
// A pattern regexp2 refuses but Go's regexp compiles ("(?P<name>...)",
// "\p{Letter}") is compiled by Go's regexp, as before regexp2 was used:
// no schema tact accepted is refused now.

// patternMatchTimeout bounds one match of one pattern against one string:
// a catastrophically backtracking pattern ("^(a+)+$") cannot hang a run.
// A match that runs out of time counts as no match: "pattern" then fails
// (the value is refused), and a "patternProperties" pattern does not
// apply to that name. A variable for the fuzz target.
var patternMatchTimeout = time.Second

// patternOptions: ECMA-262 syntax and classes, with the "u" flag's
// escapes ("\u{1F600}"), as JSON Schema's test suite expects.
const patternOptions = regexp2.ECMAScript | regexp2.Unicode

// ecmaRegexp is a regexp2 pattern as the validator's Regexp.
type ecmaRegexp struct{ re *regexp2.Regexp }

func (r ecmaRegexp) String() string { return r.re.String() }

// MatchString reports a match; an error (the timeout) or a panic in the
// engine is no match.
func (r ecmaRegexp) MatchString(s string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	m, err := r.re.MatchString(s)
	return err == nil && m
}

// CompilePattern compiles a JSON Schema pattern the way the validator
// does: ECMA-262 (regexp2), else Go's regexp syntax; the error is
// regexp2's. It never panics.
func CompilePattern(pattern string) (jsonschema.Regexp, error) {
	re, err := compileECMA(pattern)
	if err == nil {
		return ecmaRegexp{re}, nil
	}
	if g, gerr := compileGo(pattern); gerr == nil {
		return g, nil
	}
	return nil, err
}

func compileECMA(pattern string) (re *regexp2.Regexp, err error) {
	defer func() {
		if p := recover(); p != nil {
			re, err = nil, fmt.Errorf("invalid pattern: %v", p)
		}
	}()
	re, err = regexp2.Compile(pattern, patternOptions)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = patternMatchTimeout
	return re, nil
}

func compileGo(pattern string) (re *regexp.Regexp, err error) {
	defer func() {
		if p := recover(); p != nil {
			re, err = nil, fmt.Errorf("invalid pattern: %v", p)
		}
	}()
	return regexp.Compile(pattern)
}
