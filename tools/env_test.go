package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twLayout builds, under a fresh temp dir:
//
//	outside/secret           a file outside the workspace
//	ws/                      the workspace
//	ws/dir/file.txt
//	ws/link_out -> ../outside          (symlinked dir leading out)
//	ws/link_in  -> dir                 (symlink staying inside)
//	ws/abs_out  -> <abs outside>/secret
//	ws/dangling_out -> <abs outside>/nothing-yet
//	ws/loop1 -> loop2, ws/loop2 -> loop1
//
// and returns the Env for ws and the outside dir.
func twLayout(t testing.TB) (*Env, string) {
	t.Helper()
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	ws := filepath.Join(root, "ws")
	for _, d := range []string{outside, filepath.Join(ws, "dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	twWrite(t, filepath.Join(outside, "secret"), "top secret\n")
	twWrite(t, filepath.Join(ws, "dir", "file.txt"), "hello\n")
	links := map[string]string{
		"link_out":     "../outside",
		"link_in":      "dir",
		"abs_out":      filepath.Join(outside, "secret"),
		"dangling_out": filepath.Join(outside, "nothing-yet"),
		"loop1":        "loop2",
		"loop2":        "loop1",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	env, err := NewEnv(ws)
	if err != nil {
		t.Fatal(err)
	}
	return env, outside
}

func twWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNewEnv(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	twWrite(t, filepath.Join(root, "file"), "x")
	realRoot, _ := filepath.EvalSymlinks(root)

	env, err := NewEnv(filepath.Join(root, "alias"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(realRoot, "real"); env.Workspace != want {
		t.Errorf("Workspace = %q, want symlink-resolved %q", env.Workspace, want)
	}
	for _, bad := range []string{filepath.Join(root, "missing"), filepath.Join(root, "file")} {
		if _, err := NewEnv(bad); err == nil {
			t.Errorf("NewEnv(%q) succeeded, want error", bad)
		}
	}
}

func TestResolve(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	tests := []struct {
		path    string
		want    string // relative to ws; "" means an error is wanted
		errPart string
	}{
		{"dir/file.txt", "dir/file.txt", ""},
		{"./dir/../dir/file.txt", "dir/file.txt", ""},
		{".", ".", ""},
		{"new/deep/file", "new/deep/file", ""},
		{"link_in/file.txt", "dir/file.txt", ""},
		{"link_in/new.txt", "dir/new.txt", ""},
		{ws + "/dir/file.txt", "dir/file.txt", ""},
		{"dir/../../x", "", `path "dir/../../x" escapes the workspace`},
		{"../x", "", `path "../x" escapes the workspace`},
		{"..", "", "escapes the workspace"},
		{"/etc/passwd", "", `path "/etc/passwd" escapes the workspace`},
		{"link_out/secret", "", "escapes the workspace through a symlink"},
		{"link_out", "", "escapes the workspace through a symlink"},
		{"link_out/new-file", "", "escapes the workspace through a symlink"},
		{"link_out/new/dir/file", "", "escapes the workspace through a symlink"},
		{"abs_out", "", "escapes the workspace through a symlink"},
		{"dangling_out", "", "escapes the workspace through a symlink"},
		{"loop1", "", "too many levels of symbolic links"},
		{"dir/file.txt/x", "", "not a directory"},
		{"", "", "empty path"},
		{"a\x00b", "", "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := env.Resolve(tt.path)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Resolve(%q) = %q, want error containing %q", tt.path, got, tt.errPart)
				}
				if !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("Resolve(%q) error = %q, want it to contain %q", tt.path, err, tt.errPart)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.path, err)
			}
			if want := filepath.Join(ws, tt.want); got != want {
				t.Fatalf("Resolve(%q) = %q, want %q", tt.path, got, want)
			}
		})
	}
}

func TestResolveSymlinkedWorkspaceParent(t *testing.T) {
	// A symlink whose target goes up and back into the workspace is fine.
	env, _ := twLayout(t)
	base := filepath.Base(env.Workspace)
	if err := os.Symlink("../"+base+"/dir", filepath.Join(env.Workspace, "roundtrip")); err != nil {
		t.Fatal(err)
	}
	got, err := env.Resolve("roundtrip/file.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(env.Workspace, "dir", "file.txt"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Going through a missing directory and back up must not skip the
	// symlink check of what follows.
	if err := os.Symlink("nothing/../link_out", filepath.Join(env.Workspace, "sneaky")); err != nil {
		t.Fatal(err)
	}
	if got, err := env.Resolve("sneaky/secret"); err == nil {
		t.Fatalf("Resolve(sneaky/secret) = %q, want escape error", got)
	}
}

func TestResolveNoWorkspace(t *testing.T) {
	for _, env := range []*Env{nil, {}, {Workspace: "relative"}} {
		if _, err := env.Resolve("x"); err == nil {
			t.Errorf("Resolve with Env %+v succeeded, want error", env)
		}
	}
}

// FuzzResolve checks the sandbox invariant: whatever the input, a resolved
// path lies inside the workspace, also after following its symlinks.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"a", "dir/file.txt", "../x", "/etc/passwd", "link_out/secret", "link_in/../link_out/x",
		"link_in/../../outside", "./././", "dir//file.txt", "abs_out", "dangling_out/x", "loop1/x",
		"sneaky/x", "..\x00", "dir/../link_out/new", "/", "//", "link_in/./../link_in/x",
	} {
		f.Add(s)
	}
	env, _ := twLayout(f)
	if err := os.Symlink("nothing/../link_out", filepath.Join(env.Workspace, "sneaky")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := env.Resolve(p)
		if err != nil {
			return
		}
		if !insideDir(env.Workspace, got) {
			t.Fatalf("Resolve(%q) = %q, outside workspace %q", p, got, env.Workspace)
		}
		// The existing part of the result must really be inside too.
		existing := got
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			existing = filepath.Dir(existing)
		}
		real, err := filepath.EvalSymlinks(existing)
		if err != nil {
			return
		}
		if !insideDir(env.Workspace, real) {
			t.Fatalf("Resolve(%q) = %q, whose existing part %q is really %q, outside the workspace", p, got, existing, real)
		}
	})
}

func TestResolveHandBuiltEnvThroughSymlink(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "real"), 0o755)
	os.Symlink("real", filepath.Join(root, "alias"))
	env := &Env{Workspace: filepath.Join(root, "alias")}
	got, err := env.Resolve("x.txt")
	if err != nil {
		t.Fatal(err)
	}
	realRoot, _ := filepath.EvalSymlinks(root)
	if want := filepath.Join(realRoot, "real", "x.txt"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if rel := env.Rel(got); rel != "x.txt" {
		t.Fatalf("Rel = %q", rel)
	}
}

// A refusal names the path the model gave and nothing outside the
// workspace: not a symlink's target, not a directory met on the way there.
func TestResolveErrorsNeverNameOutside(t *testing.T) {
	env, outside := twLayout(t)
	twWrite(t, filepath.Join(outside, "plain"), "x")
	for _, tc := range []struct{ path, want string }{
		{"link_out/secret", `path "link_out/secret" escapes the workspace through a symlink`},
		{"abs_out", `path "abs_out" escapes the workspace through a symlink`},
		{"link_out/plain/x", `path "link_out/plain/x" escapes the workspace through a symlink`},
		{"dangling_out", `path "dangling_out" escapes the workspace through a symlink`},
		{"dir/file.txt/x", `path "dir/file.txt/x": dir/file.txt is not a directory`},
	} {
		_, err := env.Resolve(tc.path)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Resolve(%q) = %v, want %q", tc.path, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), outside) {
			t.Errorf("Resolve(%q) error names the outside path: %v", tc.path, err)
		}
	}
}
