package suiterun

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// copyTree copies the directory src into dst (which must exist): regular
// files with their mode bits, directories and symbolic links as they are.
// Anything else (a FIFO, a device) is an error naming it: a fixture holds
// files.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
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
			return os.Symlink(target, to)
		case mode.IsRegular():
			return copyFile(path, to, mode.Perm())
		default:
			return fmt.Errorf("%s: not a regular file, directory or link (%s)", path, mode.Type())
		}
	})
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
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
