package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"syscall"

	"github.com/tactcli/tact/internal/filekind"
	"golang.org/x/sys/unix"
)

// How write_file and edit_file change a file, as a careful tool would:
//
//   - A new file is written to a temp file in its directory and renamed into
//     place; it gets mode 0644 less the umask (the kernel applies it).
//   - An existing file the user may not write (the kernel refuses to open it
//     for writing) is refused and left as it was: a writable directory is not
//     licence to replace a read-only file.
//   - An existing file with one link is replaced atomically (temp file, fsync,
//     rename) when the temp file can be given the same owner, group, mode and
//     extended attributes (ACLs among them); readers and a killed run see the
//     old or the new content, never a mix.
//   - Otherwise it is written in place (write, truncate, fsync): a file with
//     more than one hard link, so every name sees the new content, and a file
//     whose owner, group, mode or attributes the temp file could not take
//     (an ordinary user writing a group-writable file someone else owns).
//     In place is not atomic: a reader may see part of the new content.
//
// Everything happens relative to the descriptor of the file's directory,
// opened through the workspace's os.Root, with single names and O_NOFOLLOW,
// so no path is looked up twice and no symlink is followed.

// writeTarget is a file a write tool is about to replace.
type writeTarget struct {
	dir  *dirHandle     // the file's directory
	base string         // the file's name in dir
	name string         // the path the model gave, for messages
	cur  *os.File       // the existing file, opened for writing; nil for a new file
	st   syscall.Stat_t // cur's status
	// busy: cur is a running program, which Linux will not open for
	// writing (ETXTBSY), so cur is open read-only and only a rename can
	// replace it.
	busy bool
}

// openTarget opens the directory of p (creating missing directories with
// mode 0755 less the umask when mkdirs is set) and, if the file exists, the
// file itself for writing, and for reading too when read is set. A missing
// file is an error only when mustExist is set.
func openTarget(p *wsPath, mkdirs, read, mustExist bool) (*writeTarget, error) {
	parent, base := path.Dir(p.rel), path.Base(p.rel)
	if mkdirs && parent != "." {
		if err := p.root.MkdirAll(parent, 0o755); err != nil {
			if isRootEscape(err) {
				return nil, p.fail(err)
			}
			return nil, fmt.Errorf("create parent of %w", p.fail(err))
		}
	}
	dir, err := openDirIn(p.root, parent)
	if err != nil {
		return nil, p.fail(err)
	}
	t := &writeTarget{dir: dir, base: base, name: p.name}
	// The type is checked before the open: opening a device for writing
	// can itself do something.
	typ, err := dir.lstatType(base)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !mustExist:
		return t, nil
	case err != nil:
		t.Close()
		return nil, p.fail(err)
	case !typ.IsRegular():
		t.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file", p.name, filekind.Name(typ))
	}
	flag := os.O_WRONLY
	if read {
		flag = os.O_RDWR
	}
	f, err := dir.open(base, flag, 0)
	if errors.Is(err, syscall.ETXTBSY) {
		// The kernel checks permission before refusing a running
		// program, so the user may write it.
		f, err = dir.open(base, os.O_RDONLY, 0)
		t.busy = true
	}
	if err != nil {
		defer t.Close()
		if errors.Is(err, fs.ErrPermission) {
			return nil, t.refuseUnwritable(read, err)
		}
		return nil, p.fail(err)
	}
	t.cur = f
	fi, err := f.Stat()
	if err != nil {
		t.Close()
		return nil, p.fail(err)
	}
	if !fi.Mode().IsRegular() {
		t.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file", p.name, filekind.Name(fi.Mode()))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Close()
		return nil, fmt.Errorf("%s: no file status on this system", p.name)
	}
	t.st = *st
	return t, nil
}

// refuseUnwritable says why opening the existing file failed: no write
// permission for tact's user (the common case), or no read permission when
// the edit needs to read it.
func (t *writeTarget) refuseUnwritable(read bool, err error) error {
	if read {
		r, rerr := t.dir.open(t.base, os.O_RDONLY, 0)
		if rerr != nil {
			return pathFail(t.name, rerr)
		}
		r.Close()
	}
	return fmt.Errorf("%s is not writable by this user (uid %d): %w; it was left unchanged",
		t.name, os.Geteuid(), unwrapPathError(err))
}

func (t *writeTarget) Close() {
	if t.cur != nil {
		t.cur.Close()
	}
	t.dir.Close()
}

// existed reports whether the file was there before the write.
func (t *writeTarget) existed() bool { return t.cur != nil }

// replace gives the file the content data by the rules above.
func (t *writeTarget) replace(data []byte) error {
	if t.cur == nil {
		return t.replaceAtomic(data)
	}
	if t.st.Nlink > 1 {
		return t.writeInPlace(data, fmt.Sprintf("it has %d hard links", t.st.Nlink))
	}
	err := t.replaceAtomic(data)
	var ka keepAttrsError
	if errors.As(err, &ka) {
		return t.writeInPlace(data, ka.Error())
	}
	return err
}

// keepAttrsError says the temp file could not take the existing file's
// owner, group, mode or extended attributes, so the file is written in place.
type keepAttrsError struct{ err error }

func (e keepAttrsError) Error() string { return e.err.Error() }
func (e keepAttrsError) Unwrap() error { return e.err }

// replaceAtomic writes data to a temp file next to the file, gives it the
// existing file's owner, group, mode and extended attributes, fsyncs it and
// renames it over the file.
func (t *writeTarget) replaceAtomic(data []byte) (err error) {
	// A new file's mode is 0644 less the umask, applied by the kernel; a
	// replacement stays private until it has the old file's mode.
	perm := fs.FileMode(0o644)
	if t.cur != nil {
		perm = 0o600
	}
	tmp, tmpName, err := createTemp(t.dir, t.base, perm)
	if err != nil {
		return fmt.Errorf("create temp file: %w", unwrapPathError(err))
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			t.dir.remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write: %w", unwrapPathError(err))
	}
	if t.cur != nil {
		if err := keepAttrs(tmp, t.cur, &t.st); err != nil {
			return keepAttrsError{err}
		}
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", unwrapPathError(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close: %w", unwrapPathError(err))
	}
	if err := t.dir.rename(tmpName, t.base); err != nil {
		return fmt.Errorf("rename: %w", unwrapPathError(err))
	}
	renamed = true
	// Make the rename itself durable; failure here leaves a correct file,
	// so it is not reported.
	t.dir.f.Sync()
	return nil
}

// writeInPlace overwrites the existing file through its open descriptor.
// The new content is written before the file is cut to its length, so the
// file is never seen empty on the way.
func (t *writeTarget) writeInPlace(data []byte, why string) error {
	if t.busy {
		return fmt.Errorf("%s is a running program (text file busy) and must be written in place because %s", t.name, why)
	}
	if _, err := t.cur.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write in place: %w", unwrapPathError(err))
	}
	if err := t.cur.Truncate(int64(len(data))); err != nil {
		return fmt.Errorf("truncate: %w", unwrapPathError(err))
	}
	if err := t.cur.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", unwrapPathError(err))
	}
	return nil
}

// createTemp creates a new temp file for base in dir, named so leftovers are
// recognisable (.NAME.tact-N.tmp) and short enough for any NAME.
func createTemp(dir *dirHandle, base string, perm fs.FileMode) (*os.File, string, error) {
	short := base
	if len(short) > 100 {
		short = short[:100]
	}
	for {
		name := fmt.Sprintf(".%s.tact-%d.tmp", short, rand.Uint32())
		f, err := dir.open(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
}

// keepAttrs gives tmp the owner, group, permission bits and extended
// attributes of the file cur, whose status is st, and checks that it took
// them. Changing the owner needs root (CAP_CHOWN); an ordinary user may only
// change the group to one of their own. The mode is set after the owner,
// which clears set-user-ID and set-group-ID bits.
func keepAttrs(tmp, cur *os.File, st *syscall.Stat_t) error {
	have, err := statOf(tmp)
	if err != nil {
		return err
	}
	if have.Uid != st.Uid || have.Gid != st.Gid {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("cannot give a new file owner %d:%d: %w", st.Uid, st.Gid, unwrapPathError(err))
		}
	}
	if err := tmp.Chmod(modeOf(st)); err != nil {
		return fmt.Errorf("cannot set mode %v: %w", modeOf(st), unwrapPathError(err))
	}
	if err := copyXattrs(cur, tmp); err != nil {
		return fmt.Errorf("cannot copy extended attributes: %w", err)
	}
	have, err = statOf(tmp)
	if err != nil {
		return err
	}
	if have.Uid != st.Uid || have.Gid != st.Gid || have.Mode&0o7777 != st.Mode&0o7777 {
		return fmt.Errorf("a new file would be %d:%d %o, not %d:%d %o",
			have.Uid, have.Gid, have.Mode&0o7777, st.Uid, st.Gid, st.Mode&0o7777)
	}
	return nil
}

func statOf(f *os.File) (*syscall.Stat_t, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, errors.New("no file status on this system")
	}
	return st, nil
}

// modeOf turns st's permission and special bits into an fs.FileMode.
func modeOf(st *syscall.Stat_t) fs.FileMode {
	m := fs.FileMode(st.Mode & 0o777)
	if st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// copyXattrs copies every extended attribute of src to dst: user
// attributes, POSIX ACLs (system.posix_acl_*), security labels. A file
// system without them has nothing to copy.
func copyXattrs(src, dst *os.File) error {
	return withFd(src, func(sfd int) error {
		names, err := listXattrs(sfd)
		if err != nil || len(names) == 0 {
			return err
		}
		return withFd(dst, func(dfd int) error {
			for _, name := range names {
				val, err := getXattr(sfd, name)
				if errors.Is(err, unix.ENODATA) {
					continue // removed meanwhile
				}
				if err != nil {
					return fmt.Errorf("read %s: %w", name, err)
				}
				if err := unix.Fsetxattr(dfd, name, val, 0); err != nil {
					return fmt.Errorf("set %s: %w", name, err)
				}
			}
			return nil
		})
	})
}

// withFd runs fn on f's descriptor without switching it to blocking mode,
// as File.Fd would.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func listXattrs(fd int) ([]string, error) {
	for {
		n, err := unix.Flistxattr(fd, nil)
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil || n == 0 {
			return nil, err
		}
		buf := make([]byte, n)
		n, err = unix.Flistxattr(fd, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // the list grew meanwhile
		}
		if err != nil {
			return nil, err
		}
		var names []string
		for _, b := range bytes.Split(buf[:n], []byte{0}) {
			if len(b) > 0 {
				names = append(names, string(b))
			}
		}
		return names, nil
	}
}

func getXattr(fd int, name string) ([]byte, error) {
	for {
		n, err := unix.Fgetxattr(fd, name, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		n, err = unix.Fgetxattr(fd, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // the value grew meanwhile
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
