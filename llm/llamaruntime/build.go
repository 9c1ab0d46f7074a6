package llamaruntime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/models"
)

// BuildOptions configures Build.
type BuildOptions struct {
	Root string // runtimes directory; "": DefaultRoot()
	// File is node-llama-cpp's tarball (npm pack node-llama-cpp@3.22.1);
	// "": download it from Registry.
	File     string
	Registry string // "": DefaultRegistry
	// WorkDir holds the source and the build; it is kept, so a failed or
	// repeated build resumes. "": $XDG_CACHE_HOME/tact/runtime-build/VERSION.
	WorkDir string
	Jobs    int // parallel compile jobs; 0: the number of CPUs
	// Progress receives one line per stage, Bar the download's progress
	// bar, Log the commands' output (cmake, the compiler). nil: none (the
	// output is in WorkDir/build.log either way).
	Progress     io.Writer
	Bar          io.Writer
	Log          io.Writer
	HTTPClient   *http.Client
	StallTimeout time.Duration
	// Force rebuilds when a native runtime for this CPU is installed.
	Force bool
}

// BuildResult is what Build did.
type BuildResult struct {
	Runtime  Runtime
	Already  bool          // a native runtime for this CPU was installed: nothing built
	Took     time.Duration // the cmake configure and build
	LogFile  string        // WorkDir/build.log
	Compiler string
}

// sourceCommit is the commit the source bundle must check out (tests
// build a stand-in repository).
var sourceCommit = LlamaCppCommit

// buildTools are the programs Build runs.
var buildTools = []string{"cmake", "git"}

// cmakeOptions are the cache entries of the native build: node-llama-cpp's
// own source build for the current machine (GGML_NATIVE, no curl, no
// OpenSSL), with OpenMP off like the prebuilt libraries; no tools, tests,
// examples or server, and not libllama-common (tact calls only llama.h).
// GGML_NATIVE rules out GGML_BACKEND_DL, so the one CPU backend
// (libggml-cpu.so) is linked by libggml, not chosen at load time.
var cmakeOptions = []string{
	"-DCMAKE_BUILD_TYPE=Release",
	"-DBUILD_SHARED_LIBS=ON",
	"-DGGML_NATIVE=ON",
	"-DGGML_BACKEND_DL=OFF",
	"-DGGML_CPU_ALL_VARIANTS=OFF",
	"-DGGML_OPENMP=OFF",
	"-DGGML_CCACHE=OFF",
	"-DGGML_METAL=OFF",
	"-DGGML_BUILD_NUMBER=1",
	"-DLLAMA_BUILD_COMMON=OFF",
	"-DLLAMA_CURL=OFF",
	"-DLLAMA_HTTPLIB=OFF",
	"-DLLAMA_OPENSSL=OFF",
	"-DLLAMA_BUILD_BORINGSSL=OFF",
	"-DLLAMA_BUILD_TESTS=OFF",
	"-DLLAMA_BUILD_TOOLS=OFF",
	"-DLLAMA_BUILD_EXAMPLES=OFF",
	"-DLLAMA_BUILD_SERVER=OFF",
	"-DLLAMA_BUILD_APP=OFF",
}

// wrapperCMake builds llama.cpp as a subproject, naming libllama and libggml
// as the prebuilt package does (OUTPUT_NAME llama.v0.5.0; node-llama-cpp's
// addVariantSuffix) without versioned sonames (no symlinks to install),
// each library finding the others beside it ($ORIGIN).
const wrapperCMake = `cmake_minimum_required(VERSION 3.19)
project(tact_llama_runtime C CXX)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_PLATFORM_NO_VERSIONED_SONAME ON)
set(CMAKE_BUILD_RPATH_USE_ORIGIN ON)
set(CMAKE_SKIP_BUILD_RPATH FALSE)
set(CMAKE_BUILD_RPATH "$ORIGIN")
set(CMAKE_INSTALL_RPATH "$ORIGIN")
add_subdirectory(llama.cpp)
set_target_properties(llama PROPERTIES OUTPUT_NAME "llama.%[1]s" LIBRARY_OUTPUT_NAME "llama.%[1]s")
set_target_properties(ggml PROPERTIES OUTPUT_NAME "ggml.%[1]s" LIBRARY_OUTPUT_NAME "ggml.%[1]s")
`

// Build compiles the pinned llama.cpp release for this machine's CPU from
// the source node-llama-cpp carries (its tarball's llama/gitRelease.bundle
// and llama/patches, applied as node-llama-cpp applies them), and installs
// the libraries as the runtime VERSION-native, recording this CPU's
// instruction-set flags (Locate passes the runtime over on a CPU that
// lacks one). The source tarball's integrity is checked before anything
// is unpacked, and the install is atomic as Install's. It needs cmake, a
// C/C++ compiler and git.
func Build(ctx context.Context, o BuildOptions) (BuildResult, error) {
	if err := checkArch(); err != nil {
		return BuildResult{}, err
	}
	var missing []string
	for _, tool := range append(slices.Clone(buildTools), cxx()) {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return BuildResult{}, errorf(ErrBuild, "tact runtime build needs %s, which this system lacks (Debian/Ubuntu: apt-get install cmake build-essential git)",
			strings.Join(missing, ", "))
	}
	flags, err := nativeCPUFlags()
	if err != nil {
		return BuildResult{}, fmt.Errorf("runtime build: the CPU's flags: %w", err)
	}
	root := o.Root
	if root == "" {
		root = DefaultRoot()
	}
	work := o.WorkDir
	if work == "" {
		work = filepath.Join(config.CacheDir(), "runtime-build", Version)
	}
	for _, d := range []string{root, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return BuildResult{}, fmt.Errorf("runtime build: %w", err)
		}
	}
	target := filepath.Join(root, Native.DirName())
	if r, err := open(target, true); err == nil && !o.Force && slices.Equal(r.Manifest.CPUFlags, flags) {
		r.Why = string(Native)
		return BuildResult{Runtime: r, Already: true}, nil
	}
	// The work directory's lock keeps two builds apart for the whole
	// build; the runtimes directory's only for the download and install.
	unlockWork, err := lockRoot(ctx, work, o.Progress)
	if err != nil {
		return BuildResult{}, err
	}
	defer unlockWork()

	file := o.File
	if file == "" {
		file, err = downloadSource(ctx, root, o)
		if err != nil {
			return BuildResult{}, err
		}
		defer func() {
			os.Remove(file)
			os.Remove(file + models.MetaExt)
		}()
	}
	sum, err := integrity(file)
	if err != nil {
		return BuildResult{}, fmt.Errorf("runtime build: %w", err)
	}
	if sum != Source.Integrity {
		if other, _, ok := identify(sum); ok {
			return BuildResult{}, errorf(ErrIntegrity, "%s is %s, prebuilt libraries: tact runtime install %s installs it; tact runtime build takes %s", file, other.Spec(), file, Source.Spec())
		}
		return BuildResult{}, errorf(ErrIntegrity, "%s: integrity mismatch: sha512 %s, want %s (%s; another version, or a damaged or truncated file); nothing was built",
			file, sum, Source.Integrity, Source.Spec())
	}

	logPath := filepath.Join(work, "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return BuildResult{}, fmt.Errorf("runtime build: %w", err)
	}
	defer logFile.Close()
	var log io.Writer = logFile
	if o.Log != nil {
		log = io.MultiWriter(logFile, o.Log)
	}
	b := &builder{ctx: ctx, work: work, log: log, logPath: logPath, progress: o.Progress}
	if err := b.source(file); err != nil {
		return BuildResult{}, err
	}
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	start := time.Now()
	if err := b.compile(jobs); err != nil {
		return BuildResult{}, err
	}
	took := time.Since(start)
	compiler := b.compilerVersion()

	unlock, err := lockRoot(ctx, root, o.Progress)
	if err != nil {
		return BuildResult{}, err
	}
	defer unlock()
	cleanStale(root)
	r, err := b.install(root, target, Manifest{Package: Source.Name, Version: Version, LlamaCpp: LlamaCppRelease, Variant: Native,
		Integrity: sum, Llama: Source.Llama, Ggml: Source.Ggml, GgmlBase: Source.GgmlBase, LinkedCPU: true, CPUFlags: flags, Compiler: compiler,
		Installed: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return BuildResult{}, err
	}
	r.Why = string(Native)
	return BuildResult{Runtime: r, Took: took, LogFile: logPath, Compiler: compiler}, nil
}

func cxx() string {
	if c := os.Getenv("CXX"); c != "" {
		return c
	}
	return "c++"
}

func downloadSource(ctx context.Context, root string, o BuildOptions) (string, error) {
	return download(ctx, root, Source, InstallOptions{Registry: o.Registry, Progress: o.Bar,
		HTTPClient: o.HTTPClient, StallTimeout: o.StallTimeout})
}

// builder runs one native build's stages in its work directory.
type builder struct {
	ctx      context.Context
	work     string
	log      io.Writer
	logPath  string
	progress io.Writer
}

func (b *builder) say(format string, a ...any) {
	if b.progress != nil {
		fmt.Fprintf(b.progress, format+"\n", a...)
	}
}

// run runs a command with its output in the log; a failure names the
// command and the log's last lines.
func (b *builder) run(dir, name string, args ...string) error {
	fmt.Fprintf(b.log, "$ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(b.ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdout = b.log
	cmd.Stderr = b.log
	// No terminal prompts (git), same messages whatever the locale.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		if b.ctx.Err() != nil {
			return &Error{Msg: fmt.Sprintf("runtime build: interrupted during %s; the work directory %s is kept for the next build", name, b.work), Kind: ErrBuild, Err: b.ctx.Err()}
		}
		return &Error{Msg: fmt.Sprintf("runtime build: %s %s failed (%v): %s; the whole output is in %s",
			name, firstArg(args), err, lastLine(b.logPath), b.logPath), Kind: ErrBuild, Err: err}
	}
	return nil
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// lastLine is the log's last line that says something (an error, mostly).
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "no log"
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "gmake") || strings.HasPrefix(l, "make") {
			continue
		}
		if strings.Contains(strings.ToLower(l), "error") || last == "" {
			last = l
		}
	}
	if len(last) > 300 {
		last = last[:300] + "..."
	}
	return last
}

// wantedSource names what Build unpacks from node-llama-cpp's tarball: the
// llama.cpp source bundle, its release tag and node-llama-cpp's patches.
func wantedSource(name string) string {
	switch name {
	case "package/llama/gitRelease.bundle":
		return "gitRelease.bundle"
	case "package/llama/llama.cpp.info.json":
		return "llama.cpp.info.json"
	}
	if rest, ok := strings.CutPrefix(name, "package/llama/patches/"); ok && !strings.Contains(rest, "/") && strings.HasSuffix(rest, ".diff") {
		return "patch-" + rest
	}
	return ""
}

// source leaves the pinned llama.cpp release, patched, in work/llama.cpp,
// reusing a checkout an earlier build left (so a build resumes).
func (b *builder) source(tarball string) error {
	src := filepath.Join(b.work, "llama.cpp")
	stamp := filepath.Join(b.work, "source.ok")
	if st, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(st)) == sourceCommit {
		b.say("reusing the llama.cpp %s source in %s", LlamaCppRelease, src)
		return nil
	}
	os.Remove(stamp)
	pkg := filepath.Join(b.work, "package")
	for _, d := range []string{pkg, src} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("runtime build: %w", err)
		}
	}
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return fmt.Errorf("runtime build: %w", err)
	}
	b.say("unpacking the llama.cpp %s source from %s", LlamaCppRelease, filepath.Base(tarball))
	names, err := unpack(tarball, wantedSource, pkg)
	if err != nil {
		return err
	}
	if !slices.Contains(names, "gitRelease.bundle") {
		return errorf(ErrBuild, "%s holds no llama/gitRelease.bundle (llama.cpp's source)", tarball)
	}
	if err := checkReleaseTag(filepath.Join(pkg, "llama.cpp.info.json")); err != nil {
		return err
	}
	if err := b.run(b.work, "git", "clone", "--quiet", filepath.Join(pkg, "gitRelease.bundle"), src); err != nil {
		return err
	}
	head, err := exec.CommandContext(b.ctx, "git", "-C", src, "rev-parse", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(head)) != sourceCommit {
		return errorf(ErrBuild, "runtime build: the source bundle checks out %s, want llama.cpp %s (%s)", strings.TrimSpace(string(head)), LlamaCppRelease, sourceCommit)
	}
	var patches []string
	for _, n := range names {
		if strings.HasPrefix(n, "patch-") {
			patches = append(patches, n)
		}
	}
	slices.Sort(patches)
	for _, p := range patches {
		path := filepath.Join(pkg, p)
		// node-llama-cpp skips a patch the source already has.
		if exec.CommandContext(b.ctx, "git", "-C", src, "apply", "--reverse", "--check", "--ignore-whitespace", path).Run() == nil {
			continue
		}
		b.say("applying node-llama-cpp's %s", strings.TrimPrefix(p, "patch-"))
		if err := b.run(src, "git", "apply", "--ignore-whitespace", path); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(b.work, "CMakeLists.txt"), []byte(fmt.Sprintf(wrapperCMake, LlamaCppRelease)), 0o644); err != nil {
		return fmt.Errorf("runtime build: %w", err)
	}
	return os.WriteFile(stamp, []byte(sourceCommit+"\n"), 0o644)
}

func checkReleaseTag(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return errorf(ErrBuild, "runtime build: the source package has no llama/llama.cpp.info.json")
	}
	var info struct {
		Tag string `json:"tag"`
	}
	if err := json.Unmarshal(b, &info); err != nil || info.Tag != LlamaCppRelease {
		return errorf(ErrBuild, "runtime build: the source package carries llama.cpp %q, want %s", info.Tag, LlamaCppRelease)
	}
	return nil
}

// compile configures and builds the libraries with cmake.
func (b *builder) compile(jobs int) error {
	build := filepath.Join(b.work, "build")
	b.say("configuring llama.cpp %s for this CPU (cmake, GGML_NATIVE)", LlamaCppRelease)
	args := append([]string{"-S", b.work, "-B", build}, cmakeOptions...)
	if err := b.run(b.work, "cmake", args...); err != nil {
		return err
	}
	b.say("compiling with %d jobs (minutes; the output is in %s)", jobs, b.logPath)
	return b.run(b.work, "cmake", "--build", build, "--config", "Release", "--parallel", strconv.Itoa(jobs),
		"--target", "llama", "ggml", "ggml-base", "ggml-cpu")
}

func (b *builder) compilerVersion() string {
	out, err := exec.CommandContext(b.ctx, cxx(), "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// install copies the built libraries and llama.cpp's licence into a
// temporary directory beside target, checks them, writes the manifest and
// renames the directory into place.
func (b *builder) install(root, target string, m Manifest) (Runtime, error) {
	built := map[string]string{}
	want := append([]string{m.Llama, m.Ggml, m.GgmlBase}, Source.Needs...)
	err := filepath.WalkDir(filepath.Join(b.work, "build"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && slices.Contains(want, d.Name()) {
			built[d.Name()] = path
		}
		return nil
	})
	if err != nil {
		return Runtime{}, fmt.Errorf("runtime build: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "."+filepath.Base(target)+".install-*")
	if err != nil {
		return Runtime{}, fmt.Errorf("runtime build: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Runtime{}, fmt.Errorf("runtime build: %w", err)
	}
	var names []string
	for _, n := range want {
		path, ok := built[n]
		if !ok {
			return Runtime{}, errorf(ErrBuild, "runtime build: the build made no %s (see %s)", n, b.logPath)
		}
		if err := copyFile(path, filepath.Join(tmp, n)); err != nil {
			return Runtime{}, fmt.Errorf("runtime build: %w", err)
		}
		names = append(names, n)
	}
	if err := copyFile(filepath.Join(b.work, "llama.cpp", "LICENSE"), filepath.Join(tmp, "LICENSE")); err == nil {
		names = append(names, "LICENSE")
	}
	if err := finish(b.logPath, tmp, names, Source, &m); err != nil {
		return Runtime{}, err
	}
	if err := replaceDir(root, tmp, target); err != nil {
		return Runtime{}, fmt.Errorf("runtime build: %w", err)
	}
	done = true
	return Runtime{Dir: target, Manifest: m}, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
