package devsetup

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeSpan is a `...` span of markdown (one line).
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// looksLikePath: a span that names a file or folder of the repository (a
// slash or a file extension, no spaces, no flags).
func looksLikePath(s string) bool {
	if strings.ContainsAny(s, " =*$(){}<>|") || strings.HasPrefix(s, "-") {
		return false
	}
	return strings.Contains(s, "/") || regexp.MustCompile(`\.(go|md|txtar|sh|json|jsonl)$`).MatchString(s)
}

// TestAgentsMDPaths: every path AGENTS.md names exists, so the file map
// cannot drift from the tree.
func TestAgentsMDPaths(t *testing.T) {
	raw, err := os.ReadFile("../../AGENTS.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, line := range strings.Split(string(raw), "\n") {
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if !looksLikePath(p) {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join("../..", filepath.FromSlash(strings.TrimSuffix(p, "/")))); err != nil {
				t.Errorf("AGENTS.md:%d names %s, which does not exist", i+1, p)
			}
		}
	}
	if n < 20 {
		t.Errorf("AGENTS.md names only %d paths: is the file map gone?", n)
	}
}

func TestLooksLikePath(t *testing.T) {
	for s, want := range map[string]bool{
		"cmd/tact/":           true,
		"tools/decl.go":       true,
		"README.md":           true,
		"make test":           false,
		"--json":              false,
		"TACT_*":              false,
		"newNAMECmd(f, runF)": false,
		"llm.Backend":         false,
	} {
		if got := looksLikePath(s); got != want {
			t.Errorf("looksLikePath(%q) = %v, want %v", s, got, want)
		}
	}
}
