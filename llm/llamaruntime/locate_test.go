package llamaruntime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installCrafted installs a crafted CPU runtime under root.
func installCrafted(t *testing.T, root string) Runtime {
	t.Helper()
	file := craft(t, goodEntries(t))
	pinTo(t, file)
	res, err := Install(context.Background(), InstallOptions{Root: root, File: file})
	if err != nil {
		t.Fatal(err)
	}
	return res.Runtime
}

// rewriteManifest edits an installed runtime's manifest.
func rewriteManifest(t *testing.T, dir string, edit func(*Manifest)) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	edit(&m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLocate: nothing installed, a runtime of another version, a missing
// library, TACT_RUNTIME_DIR, each in one line that says what to do.
func TestLocate(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		root := t.TempDir()
		_, err := Locate(LocateOptions{Root: root})
		oneLine(t, err, "no llama.cpp runtime in "+root, "tact runtime install", "npm pack "+pinned[CPU].Spec())
		if !errors.Is(err, ErrNotInstalled) {
			t.Errorf("%v is not ErrNotInstalled", err)
		}
	})
	t.Run("only another version", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "3.21.0"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := Locate(LocateOptions{Root: root})
		oneLine(t, err, "no llama.cpp runtime for this tact (node-llama-cpp "+Version+")", "only 3.21.0", "tact runtime install")
	})
	t.Run("other version", func(t *testing.T) {
		root := t.TempDir()
		r := installCrafted(t, root)
		rewriteManifest(t, r.Dir, func(m *Manifest) { m.Version, m.LlamaCpp = "3.21.0", "b6000" })
		_, err := Locate(LocateOptions{Root: root})
		oneLine(t, err, "is node-llama-cpp 3.21.0 (llama.cpp b6000)", "this tact needs "+Version, "tact runtime install")
		if !errors.Is(err, ErrVersion) {
			t.Errorf("%v is not ErrVersion", err)
		}
		// tact runtime install replaces it.
		file := craft(t, goodEntries(t))
		pinTo(t, file)
		res, err := Install(context.Background(), InstallOptions{Root: root, File: file})
		if err != nil || res.Already || !strings.Contains(res.Replaced, "3.21.0") {
			t.Fatalf("install over another version: %+v, %v", res, err)
		}
	})
	t.Run("missing library", func(t *testing.T) {
		root := t.TempDir()
		r := installCrafted(t, root)
		if err := os.Remove(filepath.Join(r.Dir, "libggml-cpu-haswell.so")); err != nil {
			t.Fatal(err)
		}
		_, err := Locate(LocateOptions{Root: root})
		oneLine(t, err, "libggml-cpu-haswell.so is missing", "tact runtime install --force")
	})
	t.Run("TACT_RUNTIME_DIR", func(t *testing.T) {
		root := t.TempDir()
		r := installCrafted(t, root)
		got, err := Locate(LocateOptions{Root: t.TempDir(), Dir: r.Dir})
		if err != nil || got.Dir != r.Dir || got.Why != "TACT_RUNTIME_DIR" {
			t.Fatalf("Locate: %+v, %v", got, err)
		}
		empty := t.TempDir()
		_, err = Locate(LocateOptions{Root: root, Dir: empty})
		oneLine(t, err, "TACT_RUNTIME_DIR: "+empty+": not a tact runtime")
	})
	t.Run("unsupported CPU", func(t *testing.T) {
		root := t.TempDir()
		installCrafted(t, root)
		fakeCPU(t, "fpu mmx")
		_, err := Locate(LocateOptions{Root: root})
		oneLine(t, err, "this CPU lacks sse2")
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%v is not ErrUnsupported", err)
		}
	})
}

// TestList: every runtime directory with its state, deep-checked (a
// library changed in place, same size, is caught by its checksum).
func TestList(t *testing.T) {
	root := t.TempDir()
	r := installCrafted(t, root)
	if err := os.MkdirAll(filepath.Join(root, "3.21.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Dir != filepath.Join(root, "3.21.0") || entries[0].Err == nil || entries[1].Dir != r.Dir || entries[1].Err != nil {
		t.Fatalf("List: %+v", entries)
	}
	lib := filepath.Join(r.Dir, "libggml-cpu-haswell.so")
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(lib, b, 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err = List(root)
	if err != nil {
		t.Fatal(err)
	}
	oneLine(t, entries[1].Err, "libggml-cpu-haswell.so changed since it was installed")
}
