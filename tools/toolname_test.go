package tools

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Tool patterns match the whole name as people read it: "*" crosses "."
// and "/" (issue 23: "evil.*" let "evil.admin/wipe" run with --yes), and
// nothing else is special or loose. Names no server may give (refused by
// ValidMCPToolName) are matched exactly too, so a rule can never be
// dodged by a name's spelling.
func TestMatchToolPattern(t *testing.T) {
	long := strings.Repeat("x", 128)
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"evil.*", "evil.admin/wipe", true},
		{"evil.*", "evil.a/b/c/d", true},
		{"evil.*", "evil.admin.wipe", true},
		{"evil.*", "evil.", true},
		{"evil.*", "evil", false},
		{"evil.*", "evilx.wipe", false},
		{"evil.*", "Evil.wipe", false},
		{"evil.*", "xevil.wipe", false},
		{"evil.*", "\u0435vil.wipe", false}, // Cyrillic "е"
		{"evil.*", "evil.has space", true},
		{"evil.*", "evil.\x1b[31m", true},
		{"evil.*", "evil.\u202egnp", true},
		{"evil.*", "evil." + long, true},
		{"*", "anything/at all", true},
		{"*", "", true},
		{"**", "x", true},
		{"*.wipe", "evil.admin/wipe", false},
		{"*wipe", "evil.admin/wipe", true},
		{"*/wipe", "evil.admin/wipe", true}, // not a valid rule, but matching stays exact
		{"evil.*wipe*", "evil.admin/wipe-all", true},
		{"evil.*.wipe", "evil.a.b.wipe", true},
		{"evil.*.wipe", "evil.wipe", false},
		{"github.delete_*", "github.delete_repo", true},
		{"github.delete_*", "github.delete", false},
		{"a*a*a*a*a*b", strings.Repeat("a", 190), false},
		{"a*a*a*a*a*b", strings.Repeat("a", 190) + "b", true},
		{"evil.admin", "evil.admin", true},
		{"evil.admin", "evil.admin/wipe", false},
		{"evil.a?min", "evil.admin", false},
		{"evil.[a]dmin", "evil.admin", false},
		{"run_command", "run_command", true},
		{"run_*", "run_command", true},
		{"*_file", "fs.read_file", true},
	}
	for _, tt := range tests {
		if got := MatchToolPattern(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchToolPattern(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// The names a server may give its tools: the MCP specification's alphabet,
// 1 to 128 characters; the rest is refused.
func TestValidMCPToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"read_file": true, "admin.wipe": true, "a-b_c.D9": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, "admin/wipe": false, "has space": false,
		"\u0430dmin": false, "red\x1b[31m": false, "tab\tname": false, "nul\x00": false, "new\nline": false,
		"bidi\u202e": false, "c1\u009b": false, "star*": false, "q?": false, "[s]": false, "back\\": false,
		"caf\u00e9": false, "full\uff0ewidth": false, "\xff": false,
	} {
		if got := ValidMCPToolName(name); got != want {
			t.Errorf("ValidMCPToolName(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzMatchToolPattern checks the matcher against a regular expression
// built from the same pattern, on any input, and that it stays fast.
func FuzzMatchToolPattern(f *testing.F) {
	f.Add("evil.*", "evil.admin/wipe")
	f.Add("*a*b*", "xaxbx")
	f.Add("a*", "\x00a")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 300 || len(name) > 300 {
			return
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if err != nil {
			return
		}
		// regexp works on UTF-8 runes, the matcher on bytes: they agree
		// on valid UTF-8.
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			MatchToolPattern(pattern, name)
			return
		}
		if got, want := MatchToolPattern(pattern, name), re.MatchString(name); got != want {
			t.Fatalf("MatchToolPattern(%q, %q) = %v, regexp says %v", pattern, name, got, want)
		}
	})
}
