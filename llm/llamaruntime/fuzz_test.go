package llamaruntime

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpack: whatever bytes a tarball holds, unpack never panics, never
// writes outside its destination, and leaves only regular files there,
// each named by a wanted entry.
func FuzzUnpack(f *testing.F) {
	lib := []byte("\x7fELF stand-in")
	p := pinned[CPU]
	seeds := [][]entry{
		{{name: "package/LICENSE", body: []byte("MIT")}, {name: p.Bins + p.Llama, body: lib}},
		{{name: "package/../x", body: lib}},
		{{name: p.Bins + "libx.so", typ: tar.TypeSymlink, linkname: "/etc/passwd"}},
		{{name: p.Bins + "sub/libx.so", body: lib}, {name: "package/", typ: tar.TypeDir}},
	}
	for _, es := range seeds {
		b, err := tarball(es)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("\x1f\x8b\x08\x00not really gzip"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		file := filepath.Join(dir, "in.tgz")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(dir, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		names, err := unpack(file, func(n string) string { return wanted(n, p) }, dest)
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, werr error) error {
			if werr != nil || path == dir || path == dest || path == file {
				return nil
			}
			if filepath.Dir(path) != dest {
				t.Errorf("unpack wrote %s, outside %s", path, dest)
			}
			if !d.Type().IsRegular() {
				t.Errorf("unpack made %s, not a regular file", path)
			}
			return nil
		})
		if err == nil {
			for _, n := range names {
				if n != "LICENSE" && (!isLibrary(n) || strings.Contains(n, "/")) {
					t.Errorf("unpacked %q, neither a library nor the licence", n)
				}
			}
		}
	})
}

// FuzzReadManifest: a manifest is outside input (TACT_RUNTIME_DIR may
// name any directory): reading and checking one never panics.
func FuzzReadManifest(f *testing.F) {
	f.Add([]byte(`{"package":"@node-llama-cpp/linux-x64","version":"3.22.1","llama_cpp":"v0.5.0","variant":"cpu","llama":"libllama.v0.5.0.so","files":[{"name":"../x","size":1}]}`))
	f.Add([]byte(`{"files":[{"name":"libggml-cpu-x64.so","size":-1}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(dir)
		if err != nil {
			return
		}
		_ = checkVersion(dir, m)
		_ = checkFiles(dir, m, true)
		_ = m.CPUBackends()
	})
}
