package main

import (
	"io"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/policy"
)

// Text from outside tact (an MCP server's tool descriptions, names and
// stderr, error messages carrying them, model names and metadata read from
// files) is printed only through policy.SanitizeTerminal, the sanitizer the
// run display uses: control characters (C0, DEL, C1), line and paragraph
// separators and bidi controls are shown as \uXXXX, so such text cannot
// move the cursor, recolour, set the title, write the clipboard (OSC 52)
// or reorder what is shown.

// termCell is outside text for one cell or line: whitespace runs made one
// space (a tab or newline would forge a column or a row), then sanitized.
func termCell(s string) string { return policy.SanitizeTerminal(text.OneLine(s)) }

// termText is outside text of several lines (a chat template), sanitized
// with its line breaks and tabs kept.
func termText(s string) string { return policy.SanitizeTerminal(s) }

// termLine is the first line of a message, sanitized.
func termLine(s string) string { return policy.SanitizeTerminal(text.FirstLine(s)) }

// termJSON makes encoded JSON terminal-safe without changing its value:
// json.Encoder escapes C0 controls but writes C1 controls, U+2028/9 and
// bidi controls raw, and outside strings JSON has no such characters, so
// SanitizeTerminal's \uXXXX are exactly JSON's escapes for them.
func termJSON(b []byte) []byte { return []byte(policy.SanitizeTerminal(string(b))) }

// termJSONWriter applies termJSON to each Write: for json.Encoder, which
// writes one whole value a Write (a rune is never split between two).
type termJSONWriter struct{ w io.Writer }

func (t termJSONWriter) Write(p []byte) (int, error) {
	if _, err := t.w.Write(termJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
