// Package atomicfile replaces a file's content all at once: a reader (or a
// crash, a kill) finds the old content or the new, never part of either.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// NewFileMode is the mode of a file Write creates (not lowered by the umask:
// an output file is meant to be read by others, as a shell's > makes it).
const NewFileMode fs.FileMode = 0o644

// beforeRename, when set (tests), runs after the temporary file is written
// and synced, before it takes path's place.
var beforeRename func(tmp string)

// Write replaces path with data: a temporary file in path's directory is
// written, synced and renamed over path, so path always holds a whole
// file. An existing file keeps its mode; a new one gets NewFileMode. A
// symbolic link is followed (its target is replaced) unless CheckLink
// refuses it; path must be a regular file when it exists. A kill between the write and the rename
// leaves path untouched and a hidden ".NAME.tmp-*" beside it.
func Write(path string, data []byte) (err error) {
	if err := CheckLink(path); err != nil {
		return err
	}
	target := path
	mode := NewFileMode
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && !st.Mode().IsRegular():
		return fmt.Errorf("%s: not a regular file", path)
	case err == nil:
		mode = st.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return Replace(target, data, mode)
}

// Replace writes data to a temporary file beside path with mode, syncs it
// and renames it over path (then syncs the directory, so the rename
// survives a crash): readers see the old file or the new, never half.
// path is taken as it is: no link is resolved, no mode kept.
func Replace(path string, data []byte, mode fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*") // created 0600
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if beforeRename != nil {
		beforeRename(tmp.Name())
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ErrForeignLink: a symbolic link at the path in a sticky, world-writable
// directory that is not wholly this user's (CheckLink).
var ErrForeignLink = errors.New("symbolic link in a sticky world-writable directory")

// CheckLink refuses a symbolic link at path when its directory is sticky
// and world-writable (/tmp) unless the link and what it leads to are this
// user's. Write resolves the link itself and renames over the target, so
// the kernel's protected_symlinks, which guards following such a link on
// open, never applies: without this, root's "-o /tmp/report.txt" would
// replace whatever another user pointed the link at. Elsewhere (a home
// directory, where dotfile managers link files) a link is followed.
func CheckLink(path string) error {
	lst, err := os.Lstat(path)
	if err != nil || lst.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil || dst.Mode()&fs.ModeSticky == 0 || dst.Mode().Perm()&0o002 == 0 {
		return nil
	}
	why := ""
	if uid, ok := owner(lst); ok && uid != os.Geteuid() {
		why = fmt.Sprintf("the link is owned by uid %d", uid)
	} else if st, err := os.Stat(path); err == nil {
		if uid, ok := owner(st); ok && uid != os.Geteuid() {
			why = fmt.Sprintf("it leads to a file owned by uid %d", uid)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else if real, err := filepath.EvalSymlinks(filepath.Dir(resolveOnce(path))); err != nil {
		return err
	} else if st, err := os.Stat(real); err == nil {
		if uid, ok := owner(st); ok && uid != os.Geteuid() && uid != 0 {
			why = fmt.Sprintf("it leads into %s, owned by uid %d", real, uid)
		}
	}
	if why == "" {
		return nil
	}
	return &linkError{fmt.Sprintf("%s: a symbolic link in %s (sticky, writable by everyone), and %s, not this user (uid %d): not followed; remove it or write elsewhere", path, dir, why, os.Geteuid())}
}

// linkError is CheckLink's refusal; it is ErrForeignLink.
type linkError struct{ msg string }

func (e *linkError) Error() string        { return e.msg }
func (e *linkError) Is(target error) bool { return target == ErrForeignLink }

// resolveOnce is path's link target, made absolute against path's
// directory.
func resolveOnce(path string) string {
	t, err := os.Readlink(path)
	if err != nil || filepath.IsAbs(t) {
		return t
	}
	return filepath.Join(filepath.Dir(path), t)
}
