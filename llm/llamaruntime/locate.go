package llamaruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LocateOptions configures Locate.
type LocateOptions struct {
	Root string // runtimes directory; "": DefaultRoot()
	// Dir (TACT_RUNTIME_DIR) names the runtime directory to use, and no
	// other.
	Dir string
}

// preference is the order Locate tries the installed variants in: a native
// build (made for this CPU), then CUDA (installed on purpose, and its CPU
// libraries are the prebuilt ones), then the prebuilt CPU libraries.
var preference = []Variant{Native, CUDA, CPU}

// Locate returns the runtime tact uses: o.Dir when set, else the first
// usable of this version's native build, CUDA and prebuilt CPU runtimes
// under o.Root. A runtime is usable when its manifest is of this version,
// every file it lists is there with its size, and this CPU can run it; a
// native build whose CPU flags this CPU lacks is passed over for the
// prebuilt one (Runtime.Why says so). With none usable the error says, in
// one line, how to install one (ErrNotInstalled when there is none at all).
func Locate(o LocateOptions) (Runtime, error) {
	if o.Dir != "" {
		r, err := open(o.Dir, false)
		if err != nil {
			return Runtime{}, &Error{Msg: "TACT_RUNTIME_DIR: " + err.Error(), Kind: kindOf(err), Err: err}
		}
		r.Why = "TACT_RUNTIME_DIR"
		return r, nil
	}
	root := o.Root
	if root == "" {
		root = DefaultRoot()
	}
	var skipped []string
	var firstErr error
	for _, v := range preference {
		dir := filepath.Join(root, v.DirName())
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		r, err := open(dir, false)
		if err != nil {
			skipped = append(skipped, err.Error())
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		r.Why = why(v, skipped)
		return r, nil
	}
	if firstErr != nil {
		return Runtime{}, firstErr
	}
	return Runtime{}, notInstalled(root)
}

func why(v Variant, skipped []string) string {
	w := map[Variant]string{Native: "native build for this CPU", CUDA: "prebuilt, with CUDA", CPU: "prebuilt"}[v]
	if len(skipped) > 0 {
		w += "; passed over: " + strings.Join(skipped, "; ")
	}
	return w
}

func kindOf(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return nil
}

// InstallHint is the one line that tells how to install the runtime.
func InstallHint() string {
	p := pinned[CPU]
	return fmt.Sprintf("run tact runtime install (downloads %s, %s), or give it the tarball of npm pack %s",
		p.Spec(), sizeMB(p.Size), p.Spec())
}

func sizeMB(n int64) string { return fmt.Sprintf("%d MB", (n+500_000)/1_000_000) }

// notInstalled says that root holds no runtime of this version, naming
// the other versions it holds.
func notInstalled(root string) error {
	var others []string
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			others = append(others, e.Name())
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		return errorf(ErrNotInstalled, "no llama.cpp runtime for this tact (node-llama-cpp %s) in %s, only %s: %s",
			Version, root, strings.Join(others, ", "), InstallHint())
	}
	return errorf(ErrNotInstalled, "no llama.cpp runtime in %s: %s", root, InstallHint())
}

// open reads and checks one runtime directory (deep: every file's
// checksum and ELF header too).
func open(dir string, deep bool) (Runtime, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return Runtime{}, err
	}
	if err := checkVersion(dir, m); err != nil {
		return Runtime{}, err
	}
	if err := checkFiles(dir, m, deep); err != nil {
		return Runtime{}, err
	}
	if err := checkCPU(dir, m); err != nil {
		return Runtime{}, err
	}
	return Runtime{Dir: dir, Manifest: m}, nil
}

// Entry is one directory under the runtimes root, as List sees it.
type Entry struct {
	Dir      string
	Manifest Manifest // zero when unreadable
	// Err says why the runtime is not usable by this tact (nil: usable).
	Err error
}

// List returns every runtime under root (any version), each checked
// deeply: its manifest, version, files (checksums and ELF headers), and
// whether this CPU and C library can run it.
func List(root string) ([]Entry, error) {
	if root == "" {
		root = DefaultRoot()
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		ent := Entry{Dir: dir}
		ent.Manifest, ent.Err = ReadManifest(dir)
		if ent.Err == nil {
			_, ent.Err = open(dir, true)
		}
		if ent.Err == nil {
			var libs []string
			for _, f := range ent.Manifest.Files {
				if isLibrary(f.Name) {
					libs = append(libs, f.Name)
				}
			}
			ent.Err = checkLibc(dir, libs)
		}
		out = append(out, ent)
	}
	return out, nil
}
