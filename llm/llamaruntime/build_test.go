package llamaruntime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeSource makes a stand-in for node-llama-cpp's tarball: a git bundle of
// a tiny "llama.cpp" whose CMake project has the targets the native build
// asks for (llama, ggml, ggml-base, ggml-cpu), a patch for it and the
// release tag. It pins Source and the expected commit to it for the rest
// of the test.
func fakeSource(t *testing.T) string {
	t.Helper()
	for _, tool := range append(slices.Clone(buildTools), cxx(), "cc") {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the native build's test runs cmake, git and a C/C++ compiler (apt-get install cmake build-essential git)", tool)
		}
	}
	repo := filepath.Join(t.TempDir(), "llama.cpp")
	files := map[string]string{
		"CMakeLists.txt": `cmake_minimum_required(VERSION 3.19)
project(fake_llama C)
add_library(ggml-base SHARED base.c)
add_library(ggml SHARED ggml.c)
target_link_libraries(ggml PRIVATE ggml-base)
add_library(ggml-cpu MODULE cpu.c)
target_link_libraries(ggml-cpu PRIVATE ggml-base)
add_library(llama SHARED llama.c)
target_link_libraries(llama PRIVATE ggml ggml-base)
`,
		"base.c":  "int ggml_base(void) { return 1; }\n",
		"ggml.c":  "int ggml_base(void);\nint ggml_init(void) { return ggml_base(); }\n",
		"cpu.c":   "int ggml_base(void);\nint ggml_backend_score(void) { return ggml_base(); }\n",
		"llama.c": "int ggml_init(void);\nint llama_backend_init(void) { return ggml_init(); }\n",
		"LICENSE": "MIT License (stand-in)\n",
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "squashed")
	commit := git("rev-parse", "HEAD")
	// The patch node-llama-cpp would apply: the test checks it was.
	if err := os.WriteFile(filepath.Join(repo, "llama.c"), []byte(files["llama.c"]+"int llama_patched(void) { return 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := git("diff")
	git("checkout", "--", "llama.c")
	bundle := filepath.Join(t.TempDir(), "gitRelease.bundle")
	git("bundle", "create", bundle, "HEAD")
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	file := craft(t, []entry{
		{name: "package/package.json", body: []byte(`{"name":"node-llama-cpp"}`)},
		{name: "package/llama/gitRelease.bundle", body: b},
		{name: "package/llama/llama.cpp.info.json", body: []byte(`{"tag": "` + LlamaCppRelease + `", "llamaCppGithubRepo": "ggml-org/llama.cpp"}`)},
		{name: "package/llama/patches/PR-1.diff", body: []byte(patch + "\n")},
		{name: "package/llama/addon/addon.cpp", body: []byte("// not unpacked\n")},
	})
	sum, err := integrity(file)
	if err != nil {
		t.Fatal(err)
	}
	oldSource, oldCommit := Source, sourceCommit
	Source.Integrity = sum
	sourceCommit = commit
	t.Cleanup(func() { Source, sourceCommit = oldSource, oldCommit })
	return file
}

// TestBuildNative runs the native build's whole pipeline on a stand-in
// source (seconds, not the real build's minutes): integrity, unpacking the
// bundle, the patch, cmake, the install as VERSION-native with this CPU's
// flags; Locate then prefers it, and passes it over on a CPU without one
// of those flags.
func TestBuildNative(t *testing.T) {
	file := fakeSource(t)
	root, work := t.TempDir(), t.TempDir()
	var progress strings.Builder
	res, err := Build(context.Background(), BuildOptions{Root: root, File: file, WorkDir: work, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	dir := filepath.Join(root, Version+"-native")
	m := res.Runtime.Manifest
	if res.Runtime.Dir != dir || m.Variant != Native || m.Package != "node-llama-cpp" || m.Integrity != Source.Integrity || m.Compiler == "" {
		t.Errorf("runtime %s, manifest %+v", res.Runtime.Dir, m)
	}
	flags, err := nativeCPUFlags()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.CPUFlags, flags) || len(flags) == 0 {
		t.Errorf("recorded CPU flags %v, want %v", m.CPUFlags, flags)
	}
	for _, n := range []string{Source.Llama, Source.Ggml, Source.GgmlBase, "libggml-cpu.so", "LICENSE"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("the native runtime lacks %s: %v", n, err)
		}
	}
	if !strings.Contains(progress.String(), "applying node-llama-cpp's PR-1.diff") {
		t.Errorf("the patch was not applied:\n%s", progress.String())
	}
	if out, err := exec.Command("nm", "-D", filepath.Join(dir, Source.Llama)).Output(); err == nil && !strings.Contains(string(out), "llama_patched") {
		t.Errorf("the built libllama lacks the patch's symbol:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(work, "package", "addon.cpp")); err == nil {
		t.Error("the build unpacked more than the source bundle, tag and patches")
	}

	again, err := Build(context.Background(), BuildOptions{Root: root, File: file, WorkDir: work})
	if err != nil || !again.Already {
		t.Fatalf("second build: %+v, %v; want already installed", again, err)
	}

	// With a prebuilt runtime beside it, Locate prefers the native one on
	// this CPU, and the prebuilt one on a CPU lacking one of its flags.
	prebuilt := craft(t, goodEntries(t))
	pinTo(t, prebuilt)
	if _, err := Install(context.Background(), InstallOptions{Root: root, File: prebuilt}); err != nil {
		t.Fatal(err)
	}
	r, err := Locate(LocateOptions{Root: root})
	if err != nil || r.Dir != dir || r.Why != "native build for this CPU" {
		t.Fatalf("Locate: %s (%s), %v", r.Dir, r.Why, err)
	}
	fakeCPU(t, strings.Join(flags[1:], " "))
	r, err = Locate(LocateOptions{Root: root})
	if err != nil || r.Dir != filepath.Join(root, Version) || !strings.Contains(r.Why, "passed over") || !strings.Contains(r.Why, "this CPU lacks "+flags[0]) {
		t.Fatalf("Locate on another CPU: %s (%s), %v", r.Dir, r.Why, err)
	}
}

// TestBuildRefusesBadSource: the prebuilt package given to build, and an
// altered source tarball, are refused before anything is unpacked.
func TestBuildRefusesBadSource(t *testing.T) {
	file := fakeSource(t)
	prebuilt := craft(t, goodEntries(t))
	pinTo(t, prebuilt)
	work := t.TempDir()
	_, err := Build(context.Background(), BuildOptions{Root: t.TempDir(), File: prebuilt, WorkDir: work})
	oneLine(t, err, "prebuilt libraries", "tact runtime install")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "node-llama-cpp-3.22.1.tgz")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), BuildOptions{Root: t.TempDir(), File: bad, WorkDir: work})
	oneLine(t, err, "integrity mismatch", "nothing was built")
	if _, err := os.Stat(filepath.Join(work, "llama.cpp")); err == nil {
		t.Error("a refused source was unpacked")
	}
}
