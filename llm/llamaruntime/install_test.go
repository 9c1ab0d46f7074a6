package llamaruntime

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInstallRealTarball installs the pinned package from its real tarball
// (npm pack): only the libraries and the licence are unpacked, the manifest
// records them, Locate finds the runtime, a second install leaves it alone
// and --force replaces it.
func TestInstallRealTarball(t *testing.T) {
	p := pinned[CPU]
	file := realTarball(t, p)
	root := t.TempDir()
	res, err := Install(context.Background(), InstallOptions{Root: root, File: file})
	if err != nil {
		t.Fatal(err)
	}
	if res.Already || res.URL != "" {
		t.Errorf("fresh install from a file: %+v", res)
	}
	dir := filepath.Join(root, Version)
	if res.Runtime.Dir != dir {
		t.Errorf("installed into %s, want %s", res.Runtime.Dir, dir)
	}
	m := res.Runtime.Manifest
	if m.Package != p.Name || m.Version != Version || m.LlamaCpp != LlamaCppRelease || m.Variant != CPU || m.Integrity != p.Integrity {
		t.Errorf("manifest: %+v", m)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, want := range []string{"LICENSE", ManifestName, p.Llama, p.Ggml, p.GgmlBase, "libggml-cpu-x64.so", "libggml-cpu-haswell.so", "libggml-cpu-zen4.so", "libggml-cpu-sapphirerapids.so"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s lacks %s: %v", dir, want, names)
		}
	}
	for _, never := range []string{"llama-addon.node", "libllama-common.so", "package.json", "_nlcBuildMetadata.json", "index.js"} {
		if slices.Contains(names, never) {
			t.Errorf("%s holds %s: only libraries and the licence are unpacked", dir, never)
		}
	}
	if got := len(m.CPUBackends()); got != 14 {
		t.Errorf("%d CPU backends, want the package's 14: %v", got, m.CPUBackends())
	}
	if got := installedDirs(t, root); !slices.Equal(got, []string{Version}) {
		t.Errorf("root holds %v, want only %s (no temporary directory, no download)", got, Version)
	}

	r, err := Locate(LocateOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != dir || r.Why != "prebuilt" {
		t.Errorf("Locate: %s (%s)", r.Dir, r.Why)
	}

	again, err := Install(context.Background(), InstallOptions{Root: root, File: file})
	if err != nil || !again.Already {
		t.Fatalf("second install: %+v, %v; want already installed", again, err)
	}
	forced, err := Install(context.Background(), InstallOptions{Root: root, File: file, Force: true})
	if err != nil || forced.Already || forced.Replaced != "--force" {
		t.Fatalf("forced install: %+v, %v", forced, err)
	}
	if got := installedDirs(t, root); !slices.Equal(got, []string{Version}) {
		t.Errorf("after --force root holds %v", got)
	}

	// A library damaged after the install: Locate refuses it in one line,
	// and the next install replaces it.
	lib := filepath.Join(dir, p.Llama)
	if err := os.Truncate(lib, 1000); err != nil {
		t.Fatal(err)
	}
	_, err = Locate(LocateOptions{Root: root})
	oneLine(t, err, p.Llama, "corrupt", "tact runtime install --force")
	if !errors.Is(err, ErrLibrary) {
		t.Errorf("%v is not ErrLibrary", err)
	}
	fixed, err := Install(context.Background(), InstallOptions{Root: root, File: file})
	if err != nil || fixed.Already || fixed.Replaced == "" {
		t.Fatalf("install over a damaged runtime: %+v, %v", fixed, err)
	}
	if _, err := Locate(LocateOptions{Root: root}); err != nil {
		t.Fatal(err)
	}
}

// TestInstallRefusesBadTarballs: each bad input is refused with one line
// that names it, and the runtimes directory is left as it was (an
// installed runtime stays, nothing half-installed appears).
func TestInstallRefusesBadTarballs(t *testing.T) {
	lib := systemLib(t)
	p := pinned[CPU]
	good := goodEntries(t)
	without := func(name string) []entry {
		var out []entry
		for _, e := range good {
			if !strings.HasSuffix(e.name, "/"+name) {
				out = append(out, e)
			}
		}
		return out
	}
	with := func(extra ...entry) []entry { return append(slices.Clone(good), extra...) }
	tests := []struct {
		name    string
		entries []entry
		kind    error
		want    []string
	}{
		{"dotdot", with(entry{name: "package/../../evil.so", body: lib}), ErrArchive, []string{"package/../../evil.so", "a .. in its path", "nothing was installed"}},
		{"absolute", with(entry{name: "/tmp/evil.so", body: lib}), ErrArchive, []string{"/tmp/evil.so", "an absolute path"}},
		{"symlink", with(entry{name: p.Bins + "libevil.so", typ: tar.TypeSymlink, linkname: "/etc/passwd"}), ErrArchive, []string{"libevil.so", "a symbolic link (to /etc/passwd)"}},
		{"hardlink", with(entry{name: p.Bins + "libevil.so", typ: tar.TypeLink, linkname: p.Bins + p.Llama}), ErrArchive, []string{"a hard link"}},
		{"device", with(entry{name: "package/dev", typ: tar.TypeChar}), ErrArchive, []string{"package/dev", "a device"}},
		{"fifo", with(entry{name: "package/fifo", typ: tar.TypeFifo}), ErrArchive, []string{"a FIFO"}},
		{"missing llama", without(p.Llama), ErrLibrary, []string{p.Llama + " is missing"}},
		{"missing cpu baseline", without("libggml-cpu-x64.so"), ErrLibrary, []string{"libggml-cpu-x64.so is missing"}},
		{"not elf", with(entry{name: p.Bins + "libggml-cpu-zen4.so", body: []byte("#!/bin/sh\necho not a library\n")}), ErrLibrary, []string{"libggml-cpu-zen4.so is not a shared library"}},
		{"truncated elf", with(entry{name: p.Bins + "libggml-cpu-zen4.so", body: lib[:len(lib)/3]}), ErrLibrary, []string{"libggml-cpu-zen4.so"}},
		{"duplicate", with(entry{name: p.Bins + p.Llama, body: lib}), ErrArchive, []string{"appears twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := craft(t, tc.entries)
			pinTo(t, file)
			root := t.TempDir()
			_, err := Install(context.Background(), InstallOptions{Root: root, File: file})
			oneLine(t, err, tc.want...)
			if !errors.Is(err, tc.kind) {
				t.Errorf("%v: not %v", err, tc.kind)
			}
			if got := installedDirs(t, root); len(got) != 0 {
				t.Errorf("the refused install left %v in the runtimes directory", got)
			}
		})
	}

	// Over an installed runtime, a refused --force install keeps it.
	t.Run("keeps installed", func(t *testing.T) {
		root := t.TempDir()
		file := craft(t, good)
		pinTo(t, file)
		if _, err := Install(context.Background(), InstallOptions{Root: root, File: file}); err != nil {
			t.Fatal(err)
		}
		bad := craft(t, with(entry{name: "package/../x", body: lib}))
		pinTo(t, bad)
		_, err := Install(context.Background(), InstallOptions{Root: root, File: bad, Force: true})
		oneLine(t, err, "a .. in its path")
		if got := installedDirs(t, root); !slices.Equal(got, []string{Version}) {
			t.Errorf("root holds %v after a refused reinstall", got)
		}
		pinTo(t, file)
		if _, err := Locate(LocateOptions{Root: root}); err != nil {
			t.Errorf("the installed runtime was damaged: %v", err)
		}
	})
}

// TestInstallIntegrity: a tarball that is not the pinned one (altered,
// truncated, another package, another variant) is refused before anything
// is unpacked.
func TestInstallIntegrity(t *testing.T) {
	file := craft(t, goodEntries(t))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pinTo(t, file)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	flipped := slices.Clone(data)
	flipped[len(flipped)/2] ^= 0xff
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"altered", write("altered.tgz", flipped), []string{"altered.tgz", "integrity mismatch", "nothing was installed"}},
		{"truncated", write("truncated.tgz", data[:len(data)/2]), []string{"truncated.tgz", "integrity mismatch", "truncated"}},
		{"empty", write("empty.tgz", nil), []string{"empty.tgz", "integrity mismatch"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			_, err := Install(context.Background(), InstallOptions{Root: root, File: tc.file})
			oneLine(t, err, tc.want...)
			if !errors.Is(err, ErrIntegrity) {
				t.Errorf("%v is not ErrIntegrity", err)
			}
			if got := installedDirs(t, root); len(got) != 0 {
				t.Errorf("left %v", got)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := Install(context.Background(), InstallOptions{Root: t.TempDir(), File: filepath.Join(dir, "nope.tgz")})
		oneLine(t, err, "nope.tgz")
	})
}

// TestInstallOtherPackage: the CUDA tarball without --cuda, and the source
// package, are named rather than called corrupt.
func TestInstallOtherPackage(t *testing.T) {
	src := craft(t, goodEntries(t))
	sum, err := integrity(src)
	if err != nil {
		t.Fatal(err)
	}
	old := Source
	Source.Integrity = sum
	t.Cleanup(func() { Source = old })
	_, err = Install(context.Background(), InstallOptions{Root: t.TempDir(), File: src})
	oneLine(t, err, "node-llama-cpp@"+Version, "the source package", "tact runtime build")

	oldCUDA := pinned[CUDA]
	c := oldCUDA
	c.Integrity = sum
	pinned[CUDA] = c
	Source = old
	t.Cleanup(func() { pinned[CUDA] = oldCUDA })
	_, err = Install(context.Background(), InstallOptions{Root: t.TempDir(), File: src})
	oneLine(t, err, c.Spec(), "add --cuda")
}

// TestInstallUnsupportedCPU: a CPU without the x86-64 baseline the
// prebuilt libraries need is refused before any download or unpacking.
func TestInstallUnsupportedCPU(t *testing.T) {
	fakeCPU(t, "fpu vme de pse tsc msr")
	root := t.TempDir()
	_, err := Install(context.Background(), InstallOptions{Root: root, File: "/nonexistent.tgz"})
	oneLine(t, err, "this CPU lacks sse2")
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("%v is not ErrUnsupported", err)
	}
	if got := installedDirs(t, root); len(got) != 0 {
		t.Errorf("left %v", got)
	}
}

// TestCheckLibc: libraries whose C library versions the system lacks.
func TestCheckLibc(t *testing.T) {
	file := craft(t, goodEntries(t))
	pinTo(t, file)
	root := t.TempDir()
	res, err := Install(context.Background(), InstallOptions{Root: root, File: file})
	if err != nil {
		t.Fatal(err)
	}
	old := libDirs
	libDirs = []string{t.TempDir()}
	t.Cleanup(func() { libDirs = old })
	err = checkLibc(res.Runtime.Dir, []string{pinned[CPU].Llama})
	oneLine(t, err, "needs libc.so.6", "glibc")
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("%v is not ErrUnsupported", err)
	}
	if compareVersions("GLIBC_2.9", "GLIBC_2.34") >= 0 || compareVersions("GLIBCXX_3.4.30", "GLIBCXX_3.4.29") <= 0 {
		t.Error("compareVersions orders versions wrongly")
	}
}

// TestMakefilePin: make test and make demo install the package pinned here
// (the Makefile names it for npm pack).
func TestMakefilePin(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Skip("no Makefile:", err)
	}
	mk := string(b)
	for _, want := range []string{
		"RUNTIME_PKG := " + pinned[CPU].Spec() + "\n",
		"RUNTIME_SRC_PKG := " + Source.Spec() + "\n",
		"/tact/runtime/" + Version + "\n",
		"/" + Source.PackName(),
	} {
		if !strings.Contains(mk, want) {
			t.Errorf("the Makefile lacks %q: keep it in step with llm/llamaruntime's pin", want)
		}
	}
}
