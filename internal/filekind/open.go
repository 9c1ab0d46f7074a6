package filekind

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// The one rule for every file tact opens by name (docs/cli.md, "Files tact
// reads"): an input must be a regular file. It is checked before the open
// (opening a FIFO waits for a writer, opening some devices acts on them),
// the open is non-blocking (a file swapped for a FIFO in between cannot
// hang it) and the type is checked again on the opened descriptor, which
// is what is read. Inputs have a size cap, checked on the descriptor and
// again while reading (a file may grow, /proc files say size 0). Outputs
// may also be a pipe or FIFO with a reader, a terminal or /dev/null.

var (
	// ErrNotRegular: the path is not a regular file (or, for an output,
	// not one of the kinds an output may be).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than its cap.
	ErrTooLarge = errors.New("larger than its size cap")
	// ErrNoReader: an output FIFO that no process reads.
	ErrNoReader = errors.New("a named pipe (FIFO) with no reader")
	// ErrUntrusted: a file that runs code (Spec.Trusted) is owned by
	// another user, or writable by group or others.
	ErrUntrusted = errors.New("owned or writable by another user")
)

// Spec says what an input or output is and how it may be opened.
type Spec struct {
	// What names it in errors as the user knows it: "policy", "--trace",
	// "MCP servers file".
	What string
	// Max caps an input's size in bytes; 0: no cap (a stream read with a
	// per-line bound, a model file mapped, not read).
	Max int64
	// NoFollow refuses a symbolic link as the last component (O_NOFOLLOW).
	NoFollow bool
	// Trusted marks a file whose contents run programs or approve them (the
	// hooks, policy and MCP servers files): as runs.db and the prompt cache,
	// it is refused when another user (not this one, not root) owns it or
	// group or others may write it, since they could run code as this user.
	// Checked on the opened descriptor, so on what a symlink leads to.
	Trusted bool
}

// Error is a refused or failed open or read: "WHAT PATH: is a named pipe
// (FIFO), not a regular file", "WHAT PATH: larger than the 1 MiB cap", or
// "WHAT: open PATH: reason" for what the system refused. It wraps
// ErrNotRegular, ErrTooLarge, ErrNoReader or the system's error (so
// errors.Is(err, fs.ErrNotExist) works).
type Error struct {
	What string
	Path string
	Mode fs.FileMode // the file's type (ErrNotRegular)
	Max  int64       // the cap (ErrTooLarge)
	Uid  uint32      // the owner (ErrUntrusted)
	Err  error
}

func (e *Error) Error() string {
	if why := e.Why(); why != "" {
		return e.What + " " + e.Path + ": " + why
	}
	return e.What + ": " + e.Err.Error()
}

// Why is what is wrong with the file when tact refused it ("is a named
// pipe (FIFO), not a regular file"), "" when the system refused the open
// or read.
func (e *Error) Why() string {
	switch e.Err {
	case ErrNotRegular:
		return "is " + Name(e.Mode) + ", not a regular file"
	case ErrTooLarge:
		return "larger than the " + Size(e.Max) + " cap"
	case ErrNoReader:
		return "is " + ErrNoReader.Error()
	case ErrUntrusted:
		if perm := e.Mode.Perm(); perm&0o022 != 0 {
			return fmt.Sprintf("is writable by group or others (mode %04o), so another user could make tact run anything; refused (chmod go-w %s)", perm, e.Path)
		}
		return fmt.Sprintf("is owned by uid %d, not by this user (uid %d) or root, so another user could make tact run anything; refused", e.Uid, os.Geteuid())
	}
	return ""
}

func (e *Error) Unwrap() error { return e.Err }

// Size is n bytes as a cap is written: "1 MiB", "64 KiB", "1000 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Open opens the input at path for reading; it never blocks and returns
// only a regular file within s.Max (see the rule above). Reading it past
// s.Max is the caller's bound (ReadFile does it).
func Open(s Spec, path string) (*os.File, error) {
	stat := os.Stat
	if s.NoFollow {
		stat = os.Lstat
	}
	// A failed stat is left to the open, whose error says it the usual way.
	if st, err := stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, &Error{What: s.What, Path: path, Mode: st.Mode(), Err: ErrNotRegular}
	}
	flag := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if s.NoFollow {
		flag |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		if s.NoFollow && errors.Is(err, syscall.ELOOP) {
			return nil, &Error{What: s.What, Path: path, Mode: fs.ModeSymlink, Err: ErrNotRegular}
		}
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	st, err := regularOpened(s, path, f)
	if err != nil {
		return nil, err
	}
	if s.Max > 0 && st.Size() > s.Max {
		f.Close()
		return nil, &Error{What: s.What, Path: path, Max: s.Max, Err: ErrTooLarge}
	}
	// O_NONBLOCK means nothing to a regular file's reads; cleared so the
	// descriptor is what a plain open gives.
	if err := setBlocking(f); err != nil {
		f.Close()
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	return f, nil
}

// ReadFile reads the whole input at path, opened as Open does, and refuses
// it once it turns out larger than s.Max (which must be set: every input
// read whole is capped).
func ReadFile(s Spec, path string) ([]byte, error) {
	if s.Max <= 0 {
		return nil, fmt.Errorf("%s %s: no size cap given", s.What, path)
	}
	f, err := Open(s, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.Max+1))
	if err != nil {
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	if int64(len(data)) > s.Max {
		return nil, &Error{What: s.What, Path: path, Max: s.Max, Err: ErrTooLarge}
	}
	return data, nil
}

// OpenOutput opens the output at path for writing (flag: O_WRONLY plus
// O_CREATE, O_APPEND, O_TRUNC as wanted) without ever blocking. It may be
// a regular file (created with perm), a pipe or FIFO that a process
// reads, a terminal or /dev/null; a FIFO with no reader is ErrNoReader
// (waiting for one could take for ever), anything else ErrNotRegular. The
// kind is checked before the open (opening a device can act on it) and
// again on the descriptor.
func OpenOutput(s Spec, path string, flag int, perm fs.FileMode) (*os.File, error) {
	if st, err := os.Stat(path); err == nil && !outputKind(st) {
		return nil, &Error{What: s.What, Path: path, Mode: st.Mode(), Err: ErrNotRegular}
	}
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			// A FIFO with no reader, or a socket (which open cannot open).
			if st, serr := os.Stat(path); serr == nil {
				if st.Mode()&fs.ModeNamedPipe != 0 {
					return nil, &Error{What: s.What, Path: path, Mode: st.Mode(), Err: ErrNoReader}
				}
				return nil, &Error{What: s.What, Path: path, Mode: st.Mode(), Err: ErrNotRegular}
			}
		}
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	switch {
	case !outputKind(st), st.Mode()&fs.ModeCharDevice != 0 && !isNull(st) && !isTerminal(f):
		f.Close()
		return nil, &Error{What: s.What, Path: path, Mode: st.Mode(), Err: ErrNotRegular}
	case st.Mode().IsRegular():
		if err := setBlocking(f); err != nil {
			f.Close()
			return nil, &Error{What: s.What, Path: path, Err: err}
		}
	}
	// A pipe or terminal stays non-blocking: the runtime's poller waits
	// for it, so a reader that stops reading parks a goroutine, not a
	// thread, and closing the file ends the wait.
	return f, nil
}

// OpenLock opens the lock file at path for flock, creating it 0600: never
// blocking, never through a symbolic link, a regular file only (a FIFO or
// device planted there is refused, not opened for writing).
func OpenLock(s Spec, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &Error{What: s.What, Path: path, Mode: fs.ModeSymlink, Err: ErrNotRegular}
		}
		if errors.Is(err, syscall.ENXIO) { // a socket
			if st, serr := os.Lstat(path); serr == nil {
				return nil, &Error{What: s.What, Path: path, Mode: st.Mode(), Err: ErrNotRegular}
			}
		}
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	if _, err := regularOpened(s, path, f); err != nil {
		return nil, err
	}
	if err := setBlocking(f); err != nil {
		f.Close()
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	return f, nil
}

// outputKind: a regular file, a pipe or FIFO, or a character device that
// is /dev/null or a terminal's (judged by its device number before the
// open; the opened descriptor is asked too).
func outputKind(st fs.FileInfo) bool {
	m := st.Mode()
	switch {
	case m.IsRegular(), m&fs.ModeNamedPipe != 0:
		return true
	case m&fs.ModeCharDevice != 0:
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		major, minor := unix.Major(sys.Rdev), unix.Minor(sys.Rdev)
		// 4: virtual consoles and serial lines, 5: /dev/tty, /dev/console
		// and /dev/ptmx, 136-143: pseudo-terminals (Documentation/admin-
		// guide/devices.txt).
		return (major == 1 && minor == 3) || major == 4 || major == 5 || (major >= 136 && major <= 143)
	}
	return false
}

// isNull: the character device 1:3, /dev/null.
func isNull(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return unix.Major(sys.Rdev) == 1 && unix.Minor(sys.Rdev) == 3
}

// isTerminal asks f's descriptor, without f.Fd's side effects.
func isTerminal(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	_ = rc.Control(func(fd uintptr) { tty = term.IsTerminal(int(fd)) })
	return tty
}

// setBlocking clears O_NONBLOCK on f's descriptor without f.Fd's side
// effects.
func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

// regularOpened checks, on the descriptor, that what was opened is a
// regular file (a path can be swapped between a check and the open); it
// closes f when not.
func regularOpened(s Spec, path string, f *os.File) (fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{What: s.What, Path: path, Err: err}
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &Error{What: s.What, Path: path, Mode: st.Mode(), Err: ErrNotRegular}
	}
	if s.Trusted {
		if err := trusted(s, path, st); err != nil {
			f.Close()
			return nil, err
		}
	}
	return st, nil
}

// trusted refuses a file that runs code when another user could have
// written it: owned by neither this user nor root, or writable by group or
// others (git's safe.directory and ssh's StrictModes judge alike).
func trusted(s Spec, path string, st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := sys.Uid; (uid != 0 && int(uid) != os.Geteuid()) || st.Mode().Perm()&0o022 != 0 {
		return &Error{What: s.What, Path: path, Mode: st.Mode(), Uid: uid, Err: ErrUntrusted}
	}
	return nil
}
