package llamaruntime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Errors callers tell apart (errors.Is); every message is one line that
// names the input.
var (
	// ErrNotInstalled: no usable runtime (tact run exits 2 on it).
	ErrNotInstalled = errors.New("no llama.cpp runtime installed")
	// ErrIntegrity: a tarball is not the pinned package.
	ErrIntegrity = errors.New("integrity mismatch")
	// ErrArchive: a tarball holds an entry tact never unpacks (.., an
	// absolute path, a link, a device) or is not a gzip tar.
	ErrArchive = errors.New("unsafe or malformed archive")
	// ErrLibrary: a library is missing, truncated or not a shared library
	// for this machine.
	ErrLibrary = errors.New("missing or corrupt library")
	// ErrVersion: a runtime of another version than this tact's.
	ErrVersion = errors.New("runtime of another version")
	// ErrUnsupported: the libraries cannot run on this machine (CPU,
	// architecture, C library).
	ErrUnsupported = errors.New("runtime not supported on this machine")
	// ErrBusy: another install or build holds the runtime directory's lock.
	ErrBusy = errors.New("another runtime install is running")
	// ErrBuild: tact runtime build could not build the libraries.
	ErrBuild = errors.New("native build failed")
)

// Error is a runtime error: a one-line message, a kind (one of the Err
// variables) and a cause.
type Error struct {
	Msg  string
	Kind error
	Err  error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Kind, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func errorf(kind error, format string, a ...any) error {
	return &Error{Msg: fmt.Sprintf(format, a...), Kind: kind}
}

// ManifestName is the manifest's file name inside a runtime directory.
const ManifestName = "manifest.json"

// Manifest describes an installed runtime.
type Manifest struct {
	Package   string  `json:"package"`   // npm package the libraries came from (node-llama-cpp: built from its source)
	Version   string  `json:"version"`   // that package's version
	LlamaCpp  string  `json:"llama_cpp"` // llama.cpp release
	Variant   Variant `json:"variant"`
	Integrity string  `json:"integrity"` // the tarball's sha512 (for native, the source package's)
	// Llama, Ggml and GgmlBase name the files of libllama, libggml and
	// libggml-base in the directory.
	Llama    string `json:"llama"`
	Ggml     string `json:"ggml"`
	GgmlBase string `json:"ggml_base"`
	// Files lists every file installed (libraries and licence).
	Files []File `json:"files"`
	// LinkedCPU (native builds): libggml links its one CPU backend
	// (libggml-cpu.so), so nothing is chosen when it loads; the prebuilt
	// packages' libggml loads the best of their CPU backends
	// (ggml_backend_load_all_from_path on the directory).
	LinkedCPU bool `json:"linked_cpu,omitempty"`
	// CPUFlags (native builds) are the instruction-set flags of the CPU the
	// libraries were built for: a CPU lacking one may not run them.
	CPUFlags []string `json:"cpu_flags,omitempty"`
	// Compiler (native builds) is the C++ compiler's first --version line.
	Compiler  string    `json:"compiler,omitempty"`
	Installed time.Time `json:"installed"`
}

// File is one installed file.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// CPUBackends are the CPU backend libraries ggml chooses from when it loads
// (libggml-cpu-haswell.so, ...; a native build has one, libggml-cpu.so).
func (m Manifest) CPUBackends() []string {
	var out []string
	for _, f := range m.Files {
		if strings.HasPrefix(f.Name, "libggml-cpu") && strings.HasSuffix(f.Name, ".so") {
			out = append(out, f.Name)
		}
	}
	return out
}

// Runtime is an installed runtime directory.
type Runtime struct {
	Dir      string
	Manifest Manifest
	// Why says how Locate chose it (for tact runtime): "TACT_RUNTIME_DIR",
	// "native build", ...
	Why string
}

// Path returns the path of a file of the runtime (Manifest.Llama, say).
func (r Runtime) Path(name string) string { return filepath.Join(r.Dir, name) }

// String is how tact names a runtime to people: "3.22.1-native (llama.cpp v0.5.0)".
func (r Runtime) String() string {
	return fmt.Sprintf("%s (node-llama-cpp %s, llama.cpp %s, %s)", filepath.Base(r.Dir), r.Manifest.Version, r.Manifest.LlamaCpp, r.Manifest.Variant)
}

// maxManifest bounds the manifest read (outside input: a directory the
// user may point TACT_RUNTIME_DIR at).
const maxManifest = 1 << 20

// ReadManifest reads dir's manifest.
func ReadManifest(dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Manifest{}, &Error{Msg: fmt.Sprintf("%s: not a tact runtime (no %s); install one with tact runtime install", dir, ManifestName), Kind: ErrNotInstalled, Err: err}
	}
	if err != nil {
		return Manifest{}, &Error{Msg: fmt.Sprintf("runtime %s: %v", dir, err), Kind: ErrLibrary, Err: err}
	}
	defer f.Close()
	var m Manifest
	dec := json.NewDecoder(io.LimitReader(f, maxManifest))
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, &Error{Msg: fmt.Sprintf("%s: unreadable manifest (%v); reinstall with tact runtime install --force", path, err), Kind: ErrLibrary, Err: err}
	}
	return m, nil
}

func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeSynced(filepath.Join(dir, ManifestName), append(b, '\n'))
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkVersion refuses a runtime of another version than this tact's.
func checkVersion(dir string, m Manifest) error {
	if m.Version != Version || m.LlamaCpp != LlamaCppRelease {
		return errorf(ErrVersion, "runtime %s is node-llama-cpp %s (llama.cpp %s); this tact needs %s (llama.cpp %s): run tact runtime install",
			dir, orUnknown(m.Version), orUnknown(m.LlamaCpp), Version, LlamaCppRelease)
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "of unknown version"
	}
	return s
}

// checkFiles checks that every file the manifest lists is in dir with its
// size, and that libllama, libggml, libggml-base and a CPU backend are
// among them. deep also compares every file's SHA-256 and reads each
// library's ELF header.
func checkFiles(dir string, m Manifest, deep bool) error {
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Name] = true
	}
	for _, name := range []string{m.Llama, m.Ggml, m.GgmlBase} {
		if name == "" || !listed[name] {
			return errorf(ErrLibrary, "runtime %s: the manifest names no %s; reinstall with tact runtime install --force", dir, orLib(name))
		}
	}
	if len(m.CPUBackends()) == 0 {
		return errorf(ErrLibrary, "runtime %s: no CPU backend (libggml-cpu*.so); reinstall with tact runtime install --force", dir)
	}
	for _, f := range m.Files {
		if f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." {
			return errorf(ErrLibrary, "runtime %s: the manifest lists %q, not a file name", dir, f.Name)
		}
		path := filepath.Join(dir, f.Name)
		st, err := os.Lstat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return errorf(ErrLibrary, "runtime %s: %s is missing; reinstall with tact runtime install --force", dir, f.Name)
		case err != nil:
			return &Error{Msg: fmt.Sprintf("runtime %s: %v", dir, err), Kind: ErrLibrary, Err: err}
		case !st.Mode().IsRegular():
			return errorf(ErrLibrary, "runtime %s: %s is not a regular file; reinstall with tact runtime install --force", dir, f.Name)
		case st.Size() != f.Size:
			return errorf(ErrLibrary, "runtime %s: %s has %d bytes, %d when installed (corrupt); reinstall with tact runtime install --force", dir, f.Name, st.Size(), f.Size)
		}
		if !deep {
			continue
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return &Error{Msg: fmt.Sprintf("runtime %s: %v", dir, err), Kind: ErrLibrary, Err: err}
		}
		if sum != f.SHA256 {
			return errorf(ErrLibrary, "runtime %s: %s changed since it was installed (sha256 %s, was %s); reinstall with tact runtime install --force", dir, f.Name, sum, f.SHA256)
		}
		if isLibrary(f.Name) {
			if err := checkELF(path); err != nil {
				return errorf(ErrLibrary, "runtime %s: %v; reinstall with tact runtime install --force", dir, err)
			}
		}
	}
	return nil
}

func orLib(name string) string {
	if name == "" {
		return "library"
	}
	return name
}

// isLibrary: a shared library tact installs (libfoo.so, libfoo.v1.so).
func isLibrary(name string) bool {
	return strings.HasPrefix(name, "lib") && strings.HasSuffix(name, ".so")
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// listFiles records every regular file in dir (but the manifest), sorted.
func listFiles(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, e := range entries {
		if e.Name() == ManifestName || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: e.Name(), Size: st.Size(), SHA256: sum})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}
