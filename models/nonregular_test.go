package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withDeadline fails the test instead of hanging when fn blocks (opening a
// FIFO for reading blocks until a writer comes).
func withDeadline(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("BUG: blocked for 10s on a non-regular file named *.gguf (a FIFO open hangs)")
	}
}

// nonRegularDir makes a models directory holding one good model and
// *.gguf entries that are not regular files: a FIFO, a directory, a
// character device and a socket (through symlinks where tests cannot create
// them), and symlinks to a FIFO and to a directory. It returns the directory
// and the reason each bad name must be refused with.
func nonRegularDir(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	writeGGUF(t, dir, "good.gguf", testModel{arch: "llama", ctx: 64})
	mk := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mk(syscall.Mkfifo(filepath.Join(dir, "fifo.gguf"), 0o644))
	mk(os.Mkdir(filepath.Join(dir, "dir.gguf"), 0o755))
	mk(os.Symlink("/dev/null", filepath.Join(dir, "dev.gguf")))
	mk(os.Symlink("fifo.gguf", filepath.Join(dir, "linkfifo.gguf")))
	mk(os.Symlink("dir.gguf", filepath.Join(dir, "linkdir.gguf")))
	want := map[string]string{
		"fifo":     "is a named pipe (FIFO), not a regular file",
		"dir":      "is a directory, not a regular file",
		"dev":      "is a character device, not a regular file",
		"linkfifo": "is a named pipe (FIFO), not a regular file",
		"linkdir":  "is a directory, not a regular file",
	}
	// A unix socket bound in the directory; paths are limited to ~108 bytes.
	if sock := filepath.Join(dir, "sock.gguf"); len(sock) < 100 {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		mk(err)
		t.Cleanup(func() { syscall.Close(fd) })
		mk(syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}))
		want["sock"] = "is a socket, not a regular file"
	}
	return dir, want
}

func TestNonRegularModelFilesAreRefused(t *testing.T) {
	dir, want := nonRegularDir(t)
	for name, reason := range want {
		p := filepath.Join(dir, name+Ext)
		t.Run("Inspect/"+name, func(t *testing.T) {
			withDeadline(t, func() {
				_, err := Inspect(p)
				if !errors.Is(err, ErrBadModel) || err.Error() != "model "+p+": "+reason+"; refused" {
					t.Errorf("Inspect(%s) = %v, want %q", name, err, reason)
				}
			})
		})
		t.Run("Resolve/"+name, func(t *testing.T) {
			withDeadline(t, func() {
				for _, arg := range []string{p, name, name + Ext} { // a path, then names in the directory
					_, err := Resolve(arg, dir)
					if !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), p+": "+reason) {
						t.Errorf("Resolve(%q) = %v, want an error naming %s", arg, err, p)
					}
				}
			})
		})
	}
}

func TestListNonRegular(t *testing.T) {
	dir, want := nonRegularDir(t)
	withDeadline(t, func() {
		infos, err := List(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != len(want)+1 {
			t.Fatalf("List = %+v, want %d entries", infos, len(want)+1)
		}
		for _, in := range infos {
			if in.Name == "good" {
				if in.Error != "" || in.Architecture != "llama" {
					t.Errorf("good model = %+v", in)
				}
				continue
			}
			if !strings.Contains(in.Error, in.Path+": "+want[in.Name]) || in.Size != 0 {
				t.Errorf("%s: %+v, want refused with %q and no size", in.Name, in, want[in.Name])
			}
		}
	})
}

// TestResolveDefaultSkipsNonRegular: the only regular model is the default
// whatever else is named *.gguf; with none, the error names a refused file
// instead of hanging or saying there is no model.
func TestResolveDefaultSkipsNonRegular(t *testing.T) {
	dir, _ := nonRegularDir(t)
	withDeadline(t, func() {
		if got, err := Resolve("", dir); err != nil || got != filepath.Join(dir, "good.gguf") {
			t.Errorf("Resolve default = %q, %v; want good.gguf", got, err)
		}
		os.Remove(filepath.Join(dir, "good.gguf"))
		_, err := Resolve("", dir)
		if errors.Is(err, ErrNoModel) || !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Resolve default without a model = %v, want a refusal naming the file", err)
		}
	})
}

// TestOpenModelRefusesSwappedFIFO: the check that matters is fstat on the
// descriptor opened with O_NONBLOCK, so a FIFO put in place after the stat
// neither hangs the open nor gets read.
func TestOpenModelRefusesSwappedFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	withDeadline(t, func() {
		f, _, err := openRegular(p, os.O_RDONLY, 0)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, errNotRegular) {
			t.Errorf("openRegular(FIFO) = %v, want a refusal", err)
		}
	})
}

// TestPullRefusesNonRegularPartial: a FIFO where the partial download goes
// must not hang pull (hashing a FIFO "partial" would block forever).
func TestPullRefusesNonRegularPartial(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "tiny.gguf"+PartialExt), 0o644); err != nil {
		t.Fatal(err)
	}
	withDeadline(t, func() {
		_, err := Pull(context.Background(), PullOptions{URL: "http://127.0.0.1:1/tiny.gguf", Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err = %v, want a refusal of the FIFO partial", err)
		}
	})
}
