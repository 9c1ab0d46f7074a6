package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Tool names and the patterns policy rules match them with. One definition
// serves every place a tool is named (policy allow and deny, "always"
// rules, the MCP servers file, the MCP client), so no place can read a name
// more loosely than another.

// MaxMCPToolName is the longest name an MCP server may give a tool (the
// MCP specification's 128).
const MaxMCPToolName = 128

// maxToolPattern bounds a rule's tool pattern: the longest MCP tool name,
// SERVER.TOOL, is 64+1+128 characters, so a longer pattern is a mistake
// (and would only make matching slower).
const maxToolPattern = 256

// ToolNameAlphabet says in words which characters tool names use.
const ToolNameAlphabet = `ASCII letters, digits, "_", "-" and "."`

// toolNameByte reports whether b may appear in a tool name: the characters
// the MCP specification (2025-11-25) allows in tool names.
func toolNameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-' || b == '.'
}

// ValidMCPToolName reports whether a server's name for a tool is usable:
// 1 to 128 of A-Z, a-z, 0-9, "_", "-" and ".". Anything else ("/", spaces,
// control characters, look-alike letters from other scripts) is refused,
// never escaped or matched loosely.
func ValidMCPToolName(name string) bool {
	if name == "" || len(name) > MaxMCPToolName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !toolNameByte(name[i]) {
			return false
		}
	}
	return true
}

// BadToolNameChar describes the first character of name that tool names
// may not use ("" when there is none), for error messages.
func BadToolNameChar(name string) string {
	for i, r := range name {
		if r >= utf8.RuneSelf || !toolNameByte(byte(r)) {
			return describeRune(name[i:], r)
		}
	}
	return ""
}

func describeRune(s string, r rune) string {
	if r == utf8.RuneError {
		if _, size := utf8.DecodeRuneInString(s); size <= 1 {
			return fmt.Sprintf("byte 0x%02x (not UTF-8)", s[0])
		}
	}
	return fmt.Sprintf("%+q (U+%04X)", r, r)
}

// CheckToolPattern reports why pattern cannot be a rule's tool pattern,
// or nil: a pattern is tool name characters and "*".
func CheckToolPattern(pattern string) error {
	if pattern == "" {
		return fmt.Errorf("empty tool pattern")
	}
	if len(pattern) > maxToolPattern {
		return fmt.Errorf("longer than %d characters", maxToolPattern)
	}
	for i, r := range pattern {
		if r == '*' {
			continue
		}
		if r >= utf8.RuneSelf || !toolNameByte(byte(r)) {
			return fmt.Errorf("%s is not allowed: tool names use %s, and in a pattern only \"*\" is special (it matches any run of characters)", describeRune(pattern[i:], r), ToolNameAlphabet)
		}
	}
	return nil
}

// MatchToolPattern reports whether pattern matches the whole of name. "*"
// matches any run of characters, none included, "." and "/" too, so
// "github.*" matches every tool of server github whatever its name; every
// other character matches only itself (case matters). Unlike path
// globs there is no "?", "[...]" or "\" escape: tool names cannot contain
// them, and a pattern must read the way it matches.
func MatchToolPattern(pattern, name string) bool {
	// Greedy match with backtracking to the last "*": linear for the
	// patterns people write, at most len(pattern)*len(name) steps.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	return strings.Trim(pattern[p:], "*") == ""
}

// IsToolPattern reports whether a rule's tool is a pattern (has a "*").
func IsToolPattern(tool string) bool { return strings.Contains(tool, "*") }
