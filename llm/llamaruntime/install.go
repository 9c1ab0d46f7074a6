package llamaruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/models"
)

// DefaultRegistry is the npm registry tact downloads the pinned packages
// from; TACT_RUNTIME_URL replaces it (a mirror with the registry's paths).
const DefaultRegistry = "https://registry.npmjs.org"

// DefaultStallTimeout bounds how long a download waits for the next byte,
// connecting and the server's answer included.
const DefaultStallTimeout = 30 * time.Second

// DefaultRoot is where runtimes are installed: $XDG_DATA_HOME/tact/runtime.
func DefaultRoot() string { return filepath.Join(config.DataDir(), "runtime") }

// InstallOptions configures Install.
type InstallOptions struct {
	Root    string  // runtimes directory; "": DefaultRoot()
	Variant Variant // CPU ("" too) or CUDA
	// File is the package's tarball (npm pack's output); "": download it
	// from Registry.
	File string
	// Registry is the npm registry's base URL (TACT_RUNTIME_URL); "":
	// DefaultRegistry.
	Registry string
	// Progress receives the download's progress bar; nil: none.
	Progress     io.Writer
	HTTPClient   *http.Client
	StallTimeout time.Duration // 0: DefaultStallTimeout
	// Force reinstalls a runtime that is installed and intact.
	Force bool
}

// InstallResult is what Install did.
type InstallResult struct {
	Runtime Runtime
	// Already: an intact runtime was installed; nothing changed.
	Already bool
	// Replaced says why an installed runtime was replaced ("" when none was).
	Replaced string
	// URL is where the tarball came from (shown without credentials); ""
	// for a file.
	URL string
}

// TarballURL is the registry URL of a pinned package's tarball.
func TarballURL(registry string, p Package) string {
	if registry == "" {
		registry = DefaultRegistry
	}
	return strings.TrimRight(registry, "/") + "/" + p.Name + "/-/" + p.TarballName()
}

// Install installs the pinned prebuilt runtime of o.Variant under o.Root
// from o.File, or downloads it from the registry when o.File is "".
//
// The tarball's sha512 must be the pinned integrity before anything is
// unpacked; only its shared libraries and licence are unpacked, into a
// temporary directory beside the target, checked (every expected library
// present, each a readable x86-64 ELF shared object whose C library
// versions this system has) and renamed into place, so a failure at any
// point leaves the installed runtimes as they were. An intact runtime is
// left alone unless o.Force. One install at a time per root (a lock file).
func Install(ctx context.Context, o InstallOptions) (InstallResult, error) {
	v := o.Variant
	if v == "" {
		v = CPU
	}
	p, ok := pinned[v]
	if !ok {
		return InstallResult{}, fmt.Errorf("runtime install: no prebuilt %s runtime (cpu or cuda; tact runtime build makes a native one)", v)
	}
	if err := checkCPU("", Manifest{Variant: v}); err != nil {
		return InstallResult{}, err
	}
	root := o.Root
	if root == "" {
		root = DefaultRoot()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return InstallResult{}, fmt.Errorf("runtime install: %w", err)
	}
	unlock, err := lockRoot(ctx, root, o.Progress)
	if err != nil {
		return InstallResult{}, err
	}
	defer unlock()
	cleanStale(root)

	target := filepath.Join(root, v.DirName())
	replaced := ""
	if _, err := os.Lstat(target); err == nil {
		r, err := open(target, true)
		switch {
		case err == nil && r.Manifest.Integrity == p.Integrity && !o.Force:
			r.Why = string(v)
			return InstallResult{Runtime: r, Already: true}, nil
		case err == nil:
			replaced = "--force"
		default:
			replaced = err.Error()
		}
	}

	res := InstallResult{Replaced: replaced}
	file := o.File
	if file == "" {
		res.URL = models.SafeURL(TarballURL(o.Registry, p))
		file, err = download(ctx, root, p, o)
		if err != nil {
			return InstallResult{}, err
		}
		defer func() {
			os.Remove(file)
			os.Remove(file + models.MetaExt)
		}()
	}
	sum, err := integrity(file)
	if err != nil {
		return InstallResult{}, fmt.Errorf("runtime install: %w", err)
	}
	if sum != p.Integrity {
		return InstallResult{}, integrityError(file, o.File == "", p, v, sum)
	}
	r, err := installTarball(root, target, file, p, v, sum)
	if err != nil {
		return InstallResult{}, err
	}
	r.Why = string(v)
	res.Runtime = r
	return res, nil
}

// integrityError explains a tarball that is not the pinned package: the
// other variant's, the source package, another version, or damaged.
func integrityError(file string, downloaded bool, p Package, v Variant, sum string) error {
	if other, ov, ok := identify(sum); ok {
		switch {
		case other.Name == Source.Name:
			return errorf(ErrIntegrity, "%s is %s, the source package: tact runtime build %s builds it; tact runtime install takes %s", file, other.Spec(), file, p.Spec())
		case ov == CUDA:
			return errorf(ErrIntegrity, "%s is %s: add --cuda to install it", file, other.Spec())
		default:
			return errorf(ErrIntegrity, "%s is %s, not %s: drop --cuda to install it", file, other.Spec(), p.Spec())
		}
	}
	what := file
	if downloaded {
		what = "the download"
		os.Remove(file)
		os.Remove(file + models.MetaExt)
		return errorf(ErrIntegrity, "runtime install: %s of %s has sha512 %s, want %s (the pinned %s); it was removed and nothing was installed",
			what, p.Spec(), sum, p.Integrity, p.Spec())
	}
	return errorf(ErrIntegrity, "%s: integrity mismatch: sha512 %s, want %s (%s; another version, or a damaged or truncated file); nothing was installed",
		file, sum, p.Integrity, p.Spec())
}

// download fetches the pinned tarball into root/.download/, resuming an
// interrupted download, and returns its path.
func download(ctx context.Context, root string, p Package, o InstallOptions) (string, error) {
	dir := filepath.Join(root, ".download")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("runtime install: %w", err)
	}
	partial := filepath.Join(dir, p.PackName()+models.PartialExt)
	stall := o.StallTimeout
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "downloading %s (%s) from %s\n", p.Spec(), text.DecimalSize(p.Size), models.SafeURL(TarballURL(o.Registry, p)))
	}
	_, err := models.Fetch(ctx, models.FetchOptions{URL: TarballURL(o.Registry, p), Partial: partial, Name: p.Spec(),
		Progress: o.Progress, HTTPClient: o.HTTPClient, StallTimeout: stall})
	if err != nil {
		return "", &Error{Msg: "runtime install: " + err.Error() + registryHint(o.Registry), Err: err}
	}
	return partial, nil
}

// registryHint tells where the URL came from when a download fails.
func registryHint(registry string) string {
	if registry == "" {
		return " (set TACT_RUNTIME_URL to a mirror, or give the tarball: npm pack " + pinned[CPU].Spec() + ", then tact runtime install FILE)"
	}
	return " (TACT_RUNTIME_URL)"
}

// installTarball unpacks a verified tarball into a temporary directory
// beside target, checks it and renames it into place.
func installTarball(root, target, file string, p Package, v Variant, sum string) (Runtime, error) {
	tmp, err := os.MkdirTemp(root, "."+filepath.Base(target)+".install-*")
	if err != nil {
		return Runtime{}, fmt.Errorf("runtime install: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Runtime{}, fmt.Errorf("runtime install: %w", err)
	}
	names, err := unpack(file, func(n string) string { return wanted(n, p) }, tmp)
	if err != nil {
		return Runtime{}, err
	}
	m := Manifest{Package: p.Name, Version: Version, LlamaCpp: LlamaCppRelease, Variant: v, Integrity: sum,
		Llama: p.Llama, Ggml: p.Ggml, GgmlBase: p.GgmlBase, Installed: time.Now().UTC().Truncate(time.Second)}
	if err := finish(file, tmp, names, p, &m); err != nil {
		return Runtime{}, err
	}
	if err := replaceDir(root, tmp, target); err != nil {
		return Runtime{}, fmt.Errorf("runtime install: %w", err)
	}
	done = true
	return Runtime{Dir: target, Manifest: m}, nil
}

// finish checks the unpacked libraries in dir and writes the manifest.
func finish(from, dir string, names []string, p Package, m *Manifest) error {
	have := map[string]bool{}
	var libs []string
	for _, n := range names {
		have[n] = true
		if isLibrary(n) {
			libs = append(libs, n)
		}
	}
	for _, n := range append([]string{p.Llama, p.Ggml, p.GgmlBase}, p.Needs...) {
		if !have[n] {
			return errorf(ErrLibrary, "%s: %s is missing from it; nothing was installed", from, n)
		}
	}
	for _, n := range libs {
		if err := checkELF(filepath.Join(dir, n)); err != nil {
			return errorf(ErrLibrary, "%s: %v; nothing was installed", from, err)
		}
	}
	if err := checkLibc(dir, libs); err != nil {
		return err
	}
	files, err := listFiles(dir)
	if err != nil {
		return fmt.Errorf("runtime install: %w", err)
	}
	m.Files = files
	if err := writeManifest(dir, *m); err != nil {
		return fmt.Errorf("runtime install: %w", err)
	}
	syncDir(dir)
	return nil
}

// replaceDir puts the finished directory tmp at target: an old target is
// first renamed aside, then removed, so target is always either the old
// runtime or the new one.
func replaceDir(root, tmp, target string) error {
	old := ""
	if _, err := os.Lstat(target); err == nil {
		o, err := os.MkdirTemp(root, "."+filepath.Base(target)+".old-*")
		if err != nil {
			return err
		}
		os.Remove(o)
		if err := os.Rename(target, o); err != nil {
			return err
		}
		old = o
	}
	if err := os.Rename(tmp, target); err != nil {
		if old != "" {
			os.Rename(old, target)
		}
		return err
	}
	syncDir(root)
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// cleanStale removes what an install or build killed half-way left in root
// (its lock is held: nothing is in progress).
func cleanStale(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") && (strings.Contains(n, ".install-") || strings.Contains(n, ".old-")) {
			os.RemoveAll(filepath.Join(root, n))
		}
	}
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// lockRoot takes the runtimes directory's lock (root/.lock), waiting for
// another install or build to finish; ctx ends the wait.
func lockRoot(ctx context.Context, root string, progress io.Writer) (func(), error) {
	f, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runtime install: %w", err)
	}
	flock := func(how int) error {
		for {
			err := syscall.Flock(int(f.Fd()), how)
			if !errors.Is(err, syscall.EINTR) {
				return err
			}
		}
	}
	err = flock(syscall.LOCK_EX | syscall.LOCK_NB)
	if err == nil {
		return func() { f.Close() }, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("runtime install: lock %s: %w", f.Name(), err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "waiting for another tact runtime install or build in %s\n", root)
	}
	got := make(chan error, 1)
	go func() { got <- flock(syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("runtime install: lock %s: %w", f.Name(), err)
		}
		return func() { f.Close() }, nil
	case <-ctx.Done():
		// The waiting flock ends when the holder lets go; closing the
		// file then drops the lock we would have got.
		go func() { <-got; f.Close() }()
		return nil, &Error{Msg: fmt.Sprintf("runtime install: gave up waiting for another install in %s", root), Kind: ErrBusy, Err: ctx.Err()}
	}
}
