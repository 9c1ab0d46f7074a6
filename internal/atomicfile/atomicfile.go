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
// symbolic link is followed (its target is replaced); path must be a
// regular file when it exists. A kill between the write and the rename
// leaves path untouched and a hidden ".NAME.tmp-*" beside it.
func Write(path string, data []byte) (err error) {
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
