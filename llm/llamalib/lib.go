// Package llamalib is tact's binding of llama.cpp's C API, without cgo: it
// loads prebuilt shared libraries of one pinned llama.cpp release (the
// runtime, installed by `tact runtime install`) from a directory at run
// time and calls them through github.com/ebitengine/purego.
//
// The directory holds libggml-base, libggml, libllama and the CPU
// backends (libggml-cpu-<cpu>.so, one per CPU family) that ggml's backend
// registry scores against the running CPU, keeping the best; GPU backends
// (libggml-cuda.so, ...) are picked up the same way when present.
//
// Open checks, in order, and fails with one line naming the directory:
// the files are there and load (dlopen's own reason otherwise, such as an
// older glibc); every C function tact declares (api.go) is exported; the
// release is the one tact pins; the C structs tact mirrors (abi.go) read
// llama.cpp's own defaults back; a CPU backend suits this CPU.
//
// One runtime per process: ggml's backend registry and logger are global,
// so Open on a second directory is an error, and Open on the same one
// returns the same *Lib.
package llamalib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Errors Open wraps, for callers that advise the user.
var (
	// ErrNotInstalled: the directory or one of its libraries is missing.
	ErrNotInstalled = errors.New("llama.cpp runtime not installed")
	// ErrBadRuntime: a library does not load, lacks a function, is another
	// release or fails the layout self-test.
	ErrBadRuntime = errors.New("llama.cpp runtime unusable")
	// ErrUnsupportedCPU: no CPU backend in the directory runs on this CPU.
	ErrUnsupportedCPU = errors.New("no llama.cpp CPU backend for this CPU")
)

// Lib is a loaded runtime.
type Lib struct {
	dir         string
	a           api
	version     string // llama_version()
	ggmlVersion string
	ggmlCommit  string
	cpuLib      string // the libggml-cpu-*.so ggml chose, by base name
	features    []string
	devices     []Device
	sysInfo     string

	// From libc: C memory for what llama.cpp reads during a call made from
	// another goroutine or keeps (abort flags, sampler arrays).
	malloc func(n uintptr) unsafe.Pointer
	free   func(p unsafe.Pointer)
	strlen uintptr // the abort callback: see Context.SetAbort

	// From the CPU backend's registry entry (nil when it lacks them).
	threadpoolNew  func(p *threadpoolParams) unsafe.Pointer
	threadpoolFree func(tp unsafe.Pointer)
}

// Device is one ggml device (the CPU, a GPU).
type Device struct {
	Name        string
	Description string
	Type        int32 // DevCPU, DevGPU, ...
}

var (
	openMu sync.Mutex
	opened *Lib
)

// Open loads the runtime in dir, whose llama.cpp must be release want
// (llama_version(), as SameRelease compares it; "" skips that check). See
// the package comment.
func Open(dir, want string) (*Lib, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("llama.cpp runtime %s: %w", dir, err)
	}
	openMu.Lock()
	defer openMu.Unlock()
	if opened != nil {
		if opened.dir != abs {
			return nil, fmt.Errorf("%w: llama.cpp runtime %s: this process already runs the one in %s", ErrBadRuntime, abs, opened.dir)
		}
		if want != "" && !SameRelease(opened.version, want) {
			return nil, fmt.Errorf("%w: llama.cpp runtime %s is llama.cpp %s, tact wants %s", ErrBadRuntime, abs, opened.version, want)
		}
		return opened, nil
	}
	l, err := open(abs, want)
	if err != nil {
		return nil, err
	}
	opened = l
	return l, nil
}

func open(dir, want string) (*Lib, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotInstalled, dir)
	}
	l := &Lib{dir: dir}
	if err := l.openLibc(); err != nil {
		return nil, err
	}
	// Dependencies first, each by absolute path, so dlopen's reason names
	// the file at fault. The libraries' RUNPATH is $ORIGIN: each finds the
	// others in dir, and ggml's CPU backends find libggml-base there too.
	var llama uintptr
	for _, stem := range []string{"libggml-base", "libggml", "libllama"} {
		path, err := findLib(dir, stem)
		if err != nil {
			return nil, err
		}
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			// dlerror's text starts with the path already.
			return nil, fmt.Errorf("%w: %s does not load: %s", ErrBadRuntime, path, strings.TrimPrefix(err.Error(), path+": "))
		}
		llama = h // a handle's lookups search its dependencies too
	}
	if err := l.bind(llama); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadRuntime, dir, err)
	}
	l.version = goString(l.a.llamaVersion())
	l.ggmlVersion = goString(l.a.ggmlVersion())
	l.ggmlCommit = goString(l.a.ggmlCommit())
	if want != "" && !SameRelease(l.version, want) {
		return nil, fmt.Errorf("%w: %s holds llama.cpp %s, tact wants %s", ErrBadRuntime, dir, l.version, want)
	}
	if err := l.selfTest(); err != nil {
		return nil, fmt.Errorf("%w: %s (llama.cpp %s): %v", ErrBadRuntime, dir, l.version, err)
	}
	l.initLogs()
	l.a.ggmlBackendLoadAllFrom(cString(dir))
	l.a.llamaBackendInit()
	if err := l.readBackends(); err != nil {
		return nil, err
	}
	return l, nil
}

// SameRelease reports whether llama_version() got is release want: equal
// once a leading "v" (release tags: "v0.5.0") is dropped from both, or
// got is want's "-dev" build (what the release's sources build unless
// told otherwise: the prebuilt runtime reports "0.5.0-dev").
func SameRelease(got, want string) bool {
	got, want = strings.TrimPrefix(got, "v"), strings.TrimPrefix(want, "v")
	return got == want || got == want+"-dev"
}

// findLib finds stem.so in dir, or the one suffixed stem.*.so (how the
// prebuilt packages name libggml and libllama: libllama.v0.5.0.so, and
// libllama.cuda.v0.5.0.so in the CUDA package).
func findLib(dir, stem string) (string, error) {
	plain := filepath.Join(dir, stem+".so")
	if _, err := os.Stat(plain); err == nil {
		return plain, nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, stem+".*.so"))
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("%w: %s has no %s.so", ErrNotInstalled, dir, stem)
	case 1:
		return matches[0], nil
	}
	return "", fmt.Errorf("%w: %s holds several %s libraries (%s)", ErrBadRuntime, dir, stem, strings.Join(matches, ", "))
}

// bind looks every symbol up first, then binds them all.
func (l *Lib) bind(h uintptr) error {
	syms := l.a.symbols()
	addrs := make([]uintptr, len(syms))
	var missing []string
	for i, s := range syms {
		p, err := purego.Dlsym(h, s.name)
		if err != nil || p == 0 {
			missing = append(missing, s.name)
			continue
		}
		addrs[i] = p
	}
	if len(missing) > 0 {
		return fmt.Errorf("the libraries lack %d function(s) tact calls: %s", len(missing), strings.Join(missing, ", "))
	}
	for i, s := range syms {
		purego.RegisterFunc(s.fn, addrs[i])
	}
	return nil
}

// openLibc binds malloc, free and strlen from the C library the runtime
// runs on.
func (l *Lib) openLibc() error {
	var libc uintptr
	var err error
	for _, name := range []string{"libc.so.6", "libc.so"} {
		if libc, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("%w: no C library to load (glibc 2.34 or later): %v", ErrBadRuntime, err)
	}
	purego.RegisterLibFunc(&l.malloc, libc, "malloc")
	purego.RegisterLibFunc(&l.free, libc, "free")
	if l.strlen, err = purego.Dlsym(libc, "strlen"); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRuntime, err)
	}
	return nil
}

// readBackends records what ggml loaded: the devices, the CPU backend's
// library and features, and its threadpool functions.
func (l *Lib) readBackends() error {
	for i := range l.a.ggmlBackendDevCount() {
		d := l.a.ggmlBackendDevGet(i)
		l.devices = append(l.devices, Device{
			Name:        goString(l.a.ggmlBackendDevName(d)),
			Description: goString(l.a.ggmlBackendDevDesc(d)),
			Type:        l.a.ggmlBackendDevType(d),
		})
	}
	cpu := l.a.ggmlBackendRegByName(cString("CPU"))
	if cpu == nil {
		var have []string
		matches, _ := filepath.Glob(filepath.Join(l.dir, "libggml-cpu*.so"))
		for _, m := range matches {
			have = append(have, filepath.Base(m))
		}
		return fmt.Errorf("%w: none of %s's CPU libraries (%s) runs on this CPU", ErrUnsupportedCPU, l.dir, strings.Join(have, ", "))
	}
	l.cpuLib = mappedCPULib(l.dir)
	if p := l.a.ggmlBackendRegProc(cpu, cString("ggml_backend_get_features")); p != nil {
		var features func(reg unsafe.Pointer) *backendFeature
		purego.RegisterFunc(&features, uintptr(p))
		for f := features(cpu); f != nil && f.Name != nil; f = (*backendFeature)(unsafe.Add(unsafe.Pointer(f), unsafe.Sizeof(*f))) {
			name, value := goString((*byte)(f.Name)), goString((*byte)(f.Value))
			if value == "1" {
				l.features = append(l.features, name)
			} else {
				l.features = append(l.features, name+"="+value)
			}
		}
	}
	pNew := l.a.ggmlBackendRegProc(cpu, cString("ggml_threadpool_new"))
	pFree := l.a.ggmlBackendRegProc(cpu, cString("ggml_threadpool_free"))
	if pNew != nil && pFree != nil {
		purego.RegisterFunc(&l.threadpoolNew, uintptr(pNew))
		purego.RegisterFunc(&l.threadpoolFree, uintptr(pFree))
	}
	l.sysInfo = goString(l.a.llamaPrintSystemInfo())
	return nil
}

// mappedCPULib names the CPU backend library ggml kept: ggml opens every
// candidate to score it and closes all but the best, so the one under dir
// still mapped into the process is the one chosen.
func mappedCPULib(dir string) string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(maps), "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		path := line[i:]
		if filepath.Dir(path) == dir && strings.HasPrefix(filepath.Base(path), "libggml-cpu") {
			return filepath.Base(path)
		}
	}
	return ""
}

// Dir is the runtime's directory.
func (l *Lib) Dir() string { return l.dir }

// Version is the release's llama.cpp version (llama_version()).
func (l *Lib) Version() string { return l.version }

// GGMLVersion is ggml's version and commit.
func (l *Lib) GGMLVersion() (version, commit string) { return l.ggmlVersion, l.ggmlCommit }

// CPUBackend names the CPU library ggml chose for this CPU, such as
// "libggml-cpu-zen4.so" ("" when it cannot tell), and the CPU features
// that build uses.
func (l *Lib) CPUBackend() (lib string, features []string) {
	return l.cpuLib, slices.Clone(l.features)
}

// Devices lists ggml's devices: the CPU and any GPU a backend found.
func (l *Lib) Devices() []Device { return slices.Clone(l.devices) }

// GPUs lists the GPU devices (discrete or integrated).
func (l *Lib) GPUs() []Device {
	var out []Device
	for _, d := range l.devices {
		if d.Type == DevGPU || d.Type == DevIGPU {
			out = append(out, d)
		}
	}
	return out
}

// SystemInfo is llama_print_system_info(): the features of each backend.
func (l *Lib) SystemInfo() string { return l.sysInfo }

// cString is s as a NUL-terminated C string in Go memory, valid while the
// result is referenced (for arguments C does not keep).
func cString(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
