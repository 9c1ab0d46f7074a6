package filekind

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test by name when f has not returned in 5 seconds: a
// blocked open must not hang the package.
func within[T any](t *testing.T, name string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still blocked after 5s", name)
		panic("unreachable")
	}
}

// kinds makes one file of each kind in dir and returns their paths.
func kinds(t *testing.T, dir string) map[string]string {
	t.Helper()
	p := map[string]string{
		"regular":   filepath.Join(dir, "regular"),
		"oversize":  filepath.Join(dir, "oversize"),
		"fifo":      filepath.Join(dir, "fifo"),
		"fifo-held": filepath.Join(dir, "fifo-held"),
		"dir":       filepath.Join(dir, "dir"),
		"socket":    filepath.Join(dir, "socket"),
		"link":      filepath.Join(dir, "link"),
		"link-fifo": filepath.Join(dir, "link-fifo"),
		"zero":      "/dev/zero",
		"null":      "/dev/null",
		"missing":   filepath.Join(dir, "missing"),
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(p["regular"], []byte("ok\n"), 0o600))
	must(os.WriteFile(p["oversize"], make([]byte, 2000), 0o600))
	must(syscall.Mkfifo(p["fifo"], 0o600))
	must(syscall.Mkfifo(p["fifo-held"], 0o600))
	must(os.Mkdir(p["dir"], 0o700))
	ln, err := net.Listen("unix", p["socket"])
	must(err)
	t.Cleanup(func() { ln.Close() })
	must(os.Symlink(p["regular"], p["link"]))
	must(os.Symlink(p["fifo"], p["link-fifo"]))
	// fifo-held has a process at its other end: a writer for inputs and a
	// reader for outputs (O_RDWR opens without waiting and is both).
	held, err := os.OpenFile(p["fifo-held"], os.O_RDWR, 0)
	must(err)
	t.Cleanup(func() { held.Close() })
	return p
}

func TestOpenInputKinds(t *testing.T) {
	p := kinds(t, t.TempDir())
	for _, tt := range []struct {
		kind     string
		noFollow bool
		want     string // "" opens; else the error's text after "input PATH: "
		is       error
	}{
		{kind: "regular"},
		{kind: "link"},
		{kind: "link", noFollow: true, want: "is a symbolic link, not a regular file", is: ErrNotRegular},
		{kind: "link-fifo", want: "is a named pipe (FIFO), not a regular file", is: ErrNotRegular},
		{kind: "link-fifo", noFollow: true, want: "is a symbolic link, not a regular file", is: ErrNotRegular},
		{kind: "fifo", want: "is a named pipe (FIFO), not a regular file", is: ErrNotRegular},
		{kind: "fifo-held", want: "is a named pipe (FIFO), not a regular file", is: ErrNotRegular},
		{kind: "dir", want: "is a directory, not a regular file", is: ErrNotRegular},
		{kind: "socket", want: "is a socket, not a regular file", is: ErrNotRegular},
		{kind: "zero", want: "is a character device, not a regular file", is: ErrNotRegular},
		{kind: "null", want: "is a character device, not a regular file", is: ErrNotRegular},
		{kind: "oversize", want: "larger than the 1000 bytes cap", is: ErrTooLarge},
		{kind: "missing", is: fs.ErrNotExist},
	} {
		name := tt.kind
		if tt.noFollow {
			name += "/nofollow"
		}
		t.Run(name, func(t *testing.T) {
			s := Spec{What: "input", Max: 1000, NoFollow: tt.noFollow}
			for _, read := range []bool{false, true} {
				err := within(t, name, func() error {
					if read {
						_, err := ReadFile(s, p[tt.kind])
						return err
					}
					f, err := Open(s, p[tt.kind])
					if err == nil {
						f.Close()
					}
					return err
				})
				if tt.is == nil {
					if err != nil {
						t.Fatalf("read=%v: %v", read, err)
					}
					continue
				}
				if !errors.Is(err, tt.is) {
					t.Fatalf("read=%v: err %v, want %v", read, err, tt.is)
				}
				if tt.want != "" && err.Error() != "input "+p[tt.kind]+": "+tt.want {
					t.Fatalf("read=%v: %q, want %q", read, err, "input "+p[tt.kind]+": "+tt.want)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("read=%v: more than one line: %q", read, err)
				}
			}
		})
	}
}

// A regular file whose size says little (/proc files say 0) is cut at the
// cap while it is read.
func TestReadFileCapsWhileReading(t *testing.T) {
	err := within(t, "proc", func() error {
		_, err := ReadFile(Spec{What: "input", Max: 16}, "/proc/self/maps")
		return err
	})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	if _, err := ReadFile(Spec{What: "input"}, "/proc/self/maps"); err == nil {
		t.Fatal("ReadFile without a cap read a file")
	}
}

// The opened regular file is a plain blocking descriptor.
func TestOpenClearsNonblock(t *testing.T) {
	p := kinds(t, t.TempDir())
	f, err := Open(Spec{What: "input", Max: 10}, p["regular"])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc, _ := f.SyscallConn()
	var fl int
	rc.Control(func(fd uintptr) { fl, _ = fcntlGetfl(fd) })
	if fl&syscall.O_NONBLOCK != 0 {
		t.Fatal("O_NONBLOCK left set")
	}
}

func fcntlGetfl(fd uintptr) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func TestOpenOutputKinds(t *testing.T) {
	p := kinds(t, t.TempDir())
	for _, tt := range []struct {
		kind string
		want string // "" opens
		is   error
	}{
		{kind: "regular"},
		{kind: "missing"}, // created
		{kind: "link"},
		{kind: "null"},
		{kind: "fifo-held"},
		{kind: "fifo", want: "is a named pipe (FIFO) with no reader", is: ErrNoReader},
		{kind: "link-fifo", want: "is a named pipe (FIFO) with no reader", is: ErrNoReader},
		{kind: "dir", want: "is a directory, not a regular file", is: ErrNotRegular},
		{kind: "socket", want: "is a socket, not a regular file", is: ErrNotRegular},
		{kind: "zero", want: "is a character device, not a regular file", is: ErrNotRegular},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			err := within(t, tt.kind, func() error {
				f, err := OpenOutput(Spec{What: "output"}, p[tt.kind], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
				if err == nil {
					_, err = f.Write([]byte("x\n"))
					f.Close()
				}
				return err
			})
			if tt.is == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.is) || err.Error() != "output "+p[tt.kind]+": "+tt.want {
				t.Fatalf("err %q, want %q", err, "output "+p[tt.kind]+": "+tt.want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	_, err := Open(Spec{What: "policy"}, "/nonexistent/p.json")
	if err == nil || err.Error() != "policy: open /nonexistent/p.json: no such file or directory" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v", err)
	}
	for n, want := range map[int64]string{1 << 20: "1 MiB", 64 << 20: "64 MiB", 4096: "4 KiB", 1000: "1000 bytes", 1 << 30: "1 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestOpenLockKinds(t *testing.T) {
	p := kinds(t, t.TempDir())
	for _, tt := range []struct {
		kind string
		want string // "" opens
	}{
		{kind: "regular"},
		{kind: "missing"}, // created
		{kind: "link", want: "is a symbolic link, not a regular file"},
		{kind: "fifo", want: "is a named pipe (FIFO), not a regular file"},
		{kind: "fifo-held", want: "is a named pipe (FIFO), not a regular file"},
		{kind: "dir", want: "open " + p["dir"] + ": is a directory"},
		{kind: "socket", want: "is a socket, not a regular file"},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			err := within(t, tt.kind, func() error {
				f, err := OpenLock(Spec{What: "lock"}, p[tt.kind])
				if err == nil {
					err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
					f.Close()
				}
				return err
			})
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.HasSuffix(err.Error(), tt.want)):
				t.Fatalf("err %v, want ...%q", err, tt.want)
			}
		})
	}
}

// TestTrusted: a file that runs code is refused when another user could
// have written it (owned by neither this user nor root, or writable by
// group or others); the user's own 0600/0644 file reads.
func TestTrusted(t *testing.T) {
	dir := t.TempDir()
	s := Spec{What: "hooks file", Max: 1 << 10, Trusted: true}
	for _, tc := range []struct {
		mode os.FileMode
		uid  int // -1: this user
		want string
	}{
		{0o600, -1, ""},
		{0o644, -1, ""},
		{0o664, -1, "is writable by group or others (mode 0664)"},
		{0o646, -1, "is writable by group or others (mode 0646)"},
		{0o644, 65534, "is owned by uid 65534"},
		{0o644, 0, ""},
	} {
		p := filepath.Join(dir, fmt.Sprintf("f%o-%d", tc.mode, tc.uid))
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		if tc.uid >= 0 {
			if os.Geteuid() != 0 {
				continue // only root can give a file away
			}
			if err := os.Chown(p, tc.uid, -1); err != nil {
				t.Fatal(err)
			}
		}
		_, err := ReadFile(s, p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrUntrusted)):
			t.Errorf("%s: error %v, want %q", p, err, tc.want)
		}
		if _, err := ReadFile(Spec{What: "x", Max: 1 << 10}, p); err != nil {
			t.Errorf("%s without Trusted: %v", p, err)
		}
	}
}
