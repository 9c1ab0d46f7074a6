package wspath

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRel(t *testing.T) {
	ws := t.TempDir()
	out := t.TempDir()
	for _, d := range []string{"src", "docs"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("../src", filepath.Join(ws, "docs", "out")))
	must(os.Symlink(out, filepath.Join(ws, "away")))
	must(os.WriteFile(filepath.Join(ws, "src", "main.txt"), nil, 0o600))
	realOut, _ := filepath.EvalSymlinks(out)
	for _, c := range []struct {
		p, rel string
		inside bool
	}{
		{"docs/out/main.txt", "src/main.txt", true},
		{"docs/out/new/file.txt", "src/new/file.txt", true}, // a missing tail kept
		{"docs/x.md", "docs/x.md", true},
		{"./docs/../src/main.txt", "src/main.txt", true},
		{"away/f", filepath.ToSlash(filepath.Join(realOut, "f")), false},
		{"../elsewhere", "", false},
		{".", ".", true},
	} {
		rel, inside := Rel(ws, c.p)
		if inside != c.inside || (c.rel != "" && rel != c.rel) {
			t.Errorf("Rel(%q) = %q, %v; want %q, %v", c.p, rel, inside, c.rel, c.inside)
		}
	}
}
