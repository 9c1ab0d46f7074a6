// Package redacttest holds what the tests of several packages need to check
// that a cut (a capture cap, a shortened prompt argument) never splits a
// secret so that part of it escapes redaction.
package redacttest

import (
	"strings"
	"testing"

	"github.com/tactcli/tact/redact"
)

// Secret is the environment secret Redactor knows.
const Secret = "supersecretval"

// Redactor knows Secret (as MY_API_KEY's value) and the given patterns.
func Redactor(t testing.TB, patterns ...string) *redact.Redactor {
	t.Helper()
	r, err := redact.NewRedactor([]string{"MY_API_KEY=" + Secret}, patterns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// LeakedPart returns a substring of secret of 4 or more bytes found in s.
func LeakedPart(s, secret string) string {
	for n := len(secret); n >= 4; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(s, secret[i:i+n]) {
				return secret[i : i+n]
			}
		}
	}
	return ""
}
