package suiterun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The caps on a fixture copied into every trial's workspace: a fixture
// that names a home directory or / by mistake is one clear error, not a
// disk filled with copies.
const (
	maxFixtureBytes   = 256 << 20
	maxFixtureEntries = 100_000
)

// copyTree copies the directory src into dst (which must exist): regular
// files with their mode bits, directories, and symbolic links that stay
// inside the fixture, as they are. Anything else is an error naming it: a
// FIFO or a device (a fixture holds files), a link that leads out of the
// fixture (absolute, or up past its top: a trial's workspace would reach
// /etc or the home directory through it), a fixture over the caps.
func copyTree(src, dst string) error {
	// src may itself be a link to the fixture's directory (a suite that
	// shares one): copy what it leads to.
	root, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	var bytes int64
	entries := 0
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if entries++; entries > maxFixtureEntries {
			return fmt.Errorf("more than %d files and directories: over the cap of a fixture", maxFixtureEntries)
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			return os.Mkdir(to, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if escapes(rel, target) {
				return fmt.Errorf("%s: a link to %s, out of the fixture: a fixture's links stay inside it", filepath.Join(src, rel), target)
			}
			return os.Symlink(target, to)
		case mode.IsRegular():
			if bytes += info.Size(); bytes > maxFixtureBytes {
				return fmt.Errorf("more than %d MiB of files: over the cap of a fixture", maxFixtureBytes>>20)
			}
			return copyFile(path, to, mode.Perm())
		default:
			return fmt.Errorf("%s: not a regular file, directory or link (%s)", filepath.Join(src, rel), mode.Type())
		}
	})
}

// escapes says whether a link at rel (relative to the fixture's top)
// with this target leads out of the fixture. A link to a link inside it
// is judged on its own text; each link's text must stay inside, so a chain
// of them does too.
func escapes(rel, target string) bool {
	if filepath.IsAbs(target) {
		return true
	}
	to := filepath.Join(filepath.Dir(rel), target)
	return to == ".." || strings.HasPrefix(to, ".."+string(filepath.Separator))
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o600)
	if err != nil {
		return err
	}
	// At most the cap: a file that grows while it is copied does not
	// get past it.
	if n, err := io.Copy(out, io.LimitReader(in, maxFixtureBytes+1)); err != nil || n > maxFixtureBytes {
		out.Close()
		return errors.Join(err, errIf(n > maxFixtureBytes, "%s: over the %d MiB cap of a fixture", from, maxFixtureBytes>>20))
	}
	return out.Close()
}

func errIf(cond bool, format string, args ...any) error {
	if !cond {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// freshWorkspace is a new temporary directory holding a copy of fixture
// ("" : empty), and the function that removes it.
func freshWorkspace(fixture string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "tact-test-*")
	if err != nil {
		return "", nil, fmt.Errorf("trial workspace: %w", err)
	}
	// A trial may leave read-only directories behind: make them writable
	// again so they can be removed.
	remove := func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		_ = os.RemoveAll(dir)
	}
	if fixture != "" {
		if err := copyTree(fixture, dir); err != nil {
			remove()
			return "", nil, fmt.Errorf("fixture %s: %w", fixture, err)
		}
	}
	return dir, remove, nil
}
