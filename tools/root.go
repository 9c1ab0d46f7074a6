package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/tactcli/tact/internal/filekind"
	"golang.org/x/sys/unix"
)

// File tools never open a path by name from /. Resolve checks the model's
// path (and gives the messages their words), then every open, stat, mkdir,
// rename and directory read goes through an os.Root opened on the workspace:
// Go walks the path one component at a time with openat(O_NOFOLLOW) from the
// workspace's descriptor and refuses any symlink or ".." that would leave it.
// A directory swapped for a symlink after the check therefore makes the call
// fail instead of reaching outside.

// wsPath is one path argument of a file tool, located in the workspace.
type wsPath struct {
	name string   // as the model gave it; every message uses this
	rel  string   // workspace-relative with symlinks resolved at check time; "." is the workspace
	abs  string   // the workspace joined with rel (inside it), for approval prompts
	root *os.Root // the workspace
}

// locate checks path with Resolve and opens the workspace as an os.Root for
// the operations that follow. The caller closes it.
func (e *Env) locate(path string) (*wsPath, error) {
	ws, err := e.workspace()
	if err != nil {
		return nil, err
	}
	real, err := resolveIn(ws, path)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", unwrapPathError(err))
	}
	return &wsPath{name: path, rel: relTo(ws, real), abs: real, root: root}, nil
}

func (p *wsPath) Close() { p.root.Close() }

// fail words err from an operation on p with the model's path.
func (p *wsPath) fail(err error) error { return pathFail(p.name, err) }

// pathFail words err from an operation on the file the model called name:
// the wrapper naming the resolved path is dropped, and an os.Root refusing
// to leave the workspace is told as the escape it is.
func pathFail(name string, err error) error {
	if isRootEscape(err) {
		return escapeError(name)
	}
	return fmt.Errorf("%s: %w", name, unwrapPathError(err))
}

// rootEscapeText is the text of os's unexported errPathEscapes, which every
// os.Root method returns for a path or symlink leading out of the root.
// TestRootEscapeDetected fails if a Go release changes it.
const rootEscapeText = "path escapes from parent"

func isRootEscape(err error) bool {
	if err == nil {
		return false
	}
	err = unwrapPathError(err)
	var errno syscall.Errno
	return !errors.As(err, &errno) && err.Error() == rootEscapeText
}

// openRegular opens p for reading, refusing anything but a regular file.
// O_NONBLOCK keeps a FIFO swapped in after the type check from blocking the
// open; the type is checked again on the open descriptor for the same reason.
func (p *wsPath) openRegular() (*os.File, fs.FileInfo, error) {
	fi, err := p.root.Lstat(p.rel)
	if err != nil {
		return nil, nil, p.fail(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", p.name, filekind.Name(fi.Mode()))
	}
	f, err := p.root.OpenFile(p.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, p.fail(err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, p.fail(err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", p.name, filekind.Name(fi.Mode()))
	}
	return f, fi, nil
}

// openRegular resolves path in the workspace and opens it for reading,
// refusing anything but a regular file (see wsPath.openRegular). It also
// returns the resolved absolute path, which lies inside the workspace.
func (e *Env) openRegular(path string) (*os.File, fs.FileInfo, string, error) {
	p, err := e.locate(path)
	if err != nil {
		return nil, nil, "", err
	}
	defer p.Close()
	f, fi, err := p.openRegular()
	if err != nil {
		return nil, nil, "", err
	}
	return f, fi, p.abs, nil
}

// relJoin joins a workspace-relative directory and a name in it.
func relJoin(dir, name string) string { return path.Join(dir, name) }

// dirHandle is a directory held open by descriptor. Its methods take one
// name in it and use the *at system calls with O_NOFOLLOW, so they act in
// that directory whatever happens later to the path that led to it, and never
// follow a symlink. Opens add O_NONBLOCK so a FIFO cannot block them. (A
// sub-Root from os.Root.OpenRoot would not do: it opens without O_NONBLOCK,
// and a FIFO swapped in for the directory would block it.)
type dirHandle struct {
	f  *os.File
	fd int
}

// openDirIn opens the workspace-relative directory rel through root.
// O_DIRECTORY makes anything else fail at once instead of blocking.
func openDirIn(root *os.Root, rel string) (*dirHandle, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return &dirHandle{f: f, fd: int(f.Fd())}, nil
}

func (d *dirHandle) Close() error { return d.f.Close() }

// sub opens the directory name in d.
func (d *dirHandle) sub(name string) (*dirHandle, error) {
	f, err := d.open(name, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return &dirHandle{f: f, fd: int(f.Fd())}, nil
}

// open opens name in d with flag and, when creating, permission bits perm
// (less the umask).
func (d *dirHandle) open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// lstatType returns the file type of name in d (fs.ModeDir, ModeSymlink,
// ...; 0 for a regular file), not following a symlink.
func (d *dirHandle) lstatType(name string) (fs.FileMode, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, &fs.PathError{Op: "fstatat", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0, nil
	case unix.S_IFDIR:
		return fs.ModeDir, nil
	case unix.S_IFLNK:
		return fs.ModeSymlink, nil
	case unix.S_IFIFO:
		return fs.ModeNamedPipe, nil
	case unix.S_IFSOCK:
		return fs.ModeSocket, nil
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice, nil
	case unix.S_IFBLK:
		return fs.ModeDevice, nil
	default:
		return fs.ModeIrregular, nil
	}
}

func (d *dirHandle) rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "renameat", Old: from, New: to, Err: err}
	}
	return nil
}

func (d *dirHandle) remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &fs.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	return nil
}

// readDir returns d's entries sorted by name.
func (d *dirHandle) readDir() ([]fs.DirEntry, error) {
	entries, err := d.f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// readDir returns the entries of the directory p, sorted by name.
func (p *wsPath) readDir() ([]fs.DirEntry, error) {
	fi, err := p.root.Stat(p.rel)
	if err != nil {
		return nil, p.fail(err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is %s, not a directory", p.name, filekind.Name(fi.Mode()))
	}
	d, err := openDirIn(p.root, p.rel)
	if err != nil {
		return nil, p.fail(err)
	}
	defer d.Close()
	entries, err := d.readDir()
	if err != nil {
		return nil, p.fail(err)
	}
	return entries, nil
}
