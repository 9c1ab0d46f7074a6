package models

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/tactcli/tact/internal/filekind"
)

// errNotRegular marks a model path that is not a regular file (a FIFO, a
// device, a socket or a directory, directly or through a symlink).
var errNotRegular = errors.New("not a regular file")

// notRegular is the "model FILE: is a named pipe (FIFO), not a regular file"
// error for a file of mode m.
func notRegular(path string, m fs.FileMode) error {
	return badModel(path, errNotRegular, "is %s, not a regular file; refused", filekind.Name(m))
}

// statModel stats path (following symlinks) and refuses anything but a
// regular file, without opening it: opening a FIFO for reading blocks until a
// writer appears, and opening some devices has side effects.
func statModel(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, badModel(path, err, "%s", openReason(err))
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	return st, nil
}

// openModel opens a model file for reading without ever blocking: it refuses
// non-regular files before opening, opens with O_NONBLOCK (so a file swapped
// for a FIFO in between cannot hang the open) and checks the mode again with
// fstat on the open descriptor, which is what is actually read.
func openModel(path string) (*os.File, os.FileInfo, error) {
	if _, err := statModel(path); err != nil {
		return nil, nil, err
	}
	return openRegular(path, os.O_RDONLY, 0)
}

// openRegular opens path with flag|O_NONBLOCK and returns it only if the
// descriptor refers to a regular file. O_NONBLOCK does not change reads or
// writes of regular files.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, nil, badModel(path, err, "%s", openReason(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, badModel(path, err, "%v", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, st.Mode())
	}
	return f, st, nil
}
