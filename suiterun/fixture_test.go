package suiterun

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFreshWorkspaceRefuses: a fixture's link that leads out of it (to
// /etc, to the home directory, up past its top), a FIFO and a fixture over
// the caps are one error naming it, and nothing is left behind; links
// inside the fixture are kept, and a fixture that is itself a link is
// copied from what it leads to.
func TestFreshWorkspaceRefuses(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(tmp, "tmp"))
	if err := os.Mkdir(filepath.Join(tmp, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		make       func(fx string) error
	}{
		{"absolute link", "a link to /etc, out of the fixture", func(fx string) error { return os.Symlink("/etc", filepath.Join(fx, "etc")) }},
		{"home link", "out of the fixture", func(fx string) error { return os.Symlink(os.Getenv("HOME"), filepath.Join(fx, "home")) }},
		{"up link", "a link to ../../x, out of the fixture", func(fx string) error {
			if err := os.Mkdir(filepath.Join(fx, "sub"), 0o755); err != nil {
				return err
			}
			return os.Symlink("../../x", filepath.Join(fx, "sub", "up"))
		}},
		{"fifo", "not a regular file, directory or link", func(fx string) error { return syscall.Mkfifo(filepath.Join(fx, "pipe"), 0o644) }},
		{"too big", "over the cap", func(fx string) error {
			f, err := os.Create(filepath.Join(fx, "big"))
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(maxFixtureBytes + 1) // sparse: no disk used
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := filepath.Join(tmp, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.Mkdir(fx, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(fx, "a.txt"), []byte("a"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(fx); err != nil {
				t.Fatal(err)
			}
			_, _, err := freshWorkspace(fx)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fx) {
				t.Fatalf("err = %v, want one naming %s and %q", err, fx, tc.want)
			}
			if left, _ := os.ReadDir(filepath.Join(tmp, "tmp")); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}

	// Links inside the fixture are kept; a fixture that is a link is
	// copied from its target.
	fx := filepath.Join(tmp, "ok")
	if err := os.MkdirAll(filepath.Join(fx, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fx, "d", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d/f", filepath.Join(fx, "lf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../f", filepath.Join(fx, "d", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok", filepath.Join(tmp, "alias")); err != nil {
		t.Fatal(err)
	}
	ws, remove, err := freshWorkspace(filepath.Join(tmp, "alias"))
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	if b, err := os.ReadFile(filepath.Join(ws, "lf")); err != nil || string(b) != "x" {
		t.Fatalf("lf = %q, %v", b, err)
	}
}
