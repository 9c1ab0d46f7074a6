package promptcache

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

var testKey = Key{Model: "/m/model.gguf", ModelSize: 1234, ModelMTime: 99, CtxSize: 1024, BatchSize: 64,
	KVType: "f16", Layout: "kv-seq-1", Build: "test"}

func payloadOf(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7)
	}
	return p
}

func newStore(t *testing.T, max int64) *Store {
	t.Helper()
	return &Store{Dir: filepath.Join(t.TempDir(), "cache", "kv"), Max: max}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	s := newStore(t, 1<<20)
	tokens := []int{1, 2, 3, 400000, -1}
	p := payloadOf(5000, 3)
	if err := s.Save(testKey, tokens, p); err != nil {
		t.Fatal(err)
	}
	buf, err := s.Load(testKey, tokens, Frame{Before: 4, After: 12})
	if err != nil {
		t.Fatal(err)
	}
	if len(buf) != 4+len(p)+12 || !bytes.Equal(buf[4:4+len(p)], p) ||
		!bytes.Equal(buf[:4], make([]byte, 4)) || !bytes.Equal(buf[4+len(p):], make([]byte, 12)) {
		t.Fatal("the framed payload differs")
	}
	got, err := Tokens(s.Path(testKey, tokens))
	if err != nil || !slices.Equal(got, tokens) {
		t.Fatalf("Tokens: %v %v", got, err)
	}
	// Modes: the directory 0700, the file 0600.
	if st, _ := os.Stat(s.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", st.Mode())
	}
	if st, _ := os.Stat(s.Path(testKey, tokens)); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", st.Mode())
	}
}

// Another key or other tokens name another file: a miss, never a wrong hit.
func TestMisses(t *testing.T) {
	s := newStore(t, 1<<20)
	tokens := []int{5, 6, 7}
	if err := s.Save(testKey, tokens, payloadOf(100, 1)); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]Key{
		"model":      func() Key { k := testKey; k.Model = "/m/other.gguf"; return k }(),
		"model size": func() Key { k := testKey; k.ModelSize++; return k }(),
		"mtime":      func() Key { k := testKey; k.ModelMTime++; return k }(),
		"ctx size":   func() Key { k := testKey; k.CtxSize = 2048; return k }(),
		"kv type":    func() Key { k := testKey; k.KVType = "q8_0"; return k }(),
		"flash":      func() Key { k := testKey; k.FlashAttn = true; return k }(),
		"batch":      func() Key { k := testKey; k.BatchSize = 512; return k }(),
		"build":      func() Key { k := testKey; k.Build = "other"; return k }(),
	} {
		if _, err := s.Load(k, tokens, Frame{}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want a miss", name, err)
		}
	}
	if _, err := s.Load(testKey, []int{5, 6}, Frame{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("other tokens: %v, want a miss", err)
	}
}

// Truncated, corrupt, foreign and misplaced files are bad entries, never
// loaded; saving again replaces them.
func TestBadEntries(t *testing.T) {
	tokens := []int{10, 20, 30, 40}
	p := payloadOf(4096, 9)
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, s *Store, path string)
	}{
		{"truncated", func(t *testing.T, s *Store, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)-100], 0o600)
		}},
		{"truncated header", func(t *testing.T, s *Store, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:20], 0o600)
		}},
		{"empty", func(t *testing.T, s *Store, path string) { os.WriteFile(path, nil, 0o600) }},
		{"flipped payload byte", func(t *testing.T, s *Store, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)-10] ^= 1
			os.WriteFile(path, b, 0o600)
		}},
		{"extra bytes", func(t *testing.T, s *Store, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, append(b, 0), 0o600)
		}},
		{"garbage", func(t *testing.T, s *Store, path string) {
			os.WriteFile(path, bytes.Repeat([]byte("x"), 5000), 0o600)
		}},
		{"another key's entry under this name", func(t *testing.T, s *Store, path string) {
			k := testKey
			k.CtxSize = 4096
			if err := s.Save(k, tokens, p); err != nil {
				t.Fatal(err)
			}
			os.Rename(s.Path(k, tokens), path)
		}},
		{"other tokens under this name", func(t *testing.T, s *Store, path string) {
			other := []int{10, 20, 30, 41}
			if err := s.Save(testKey, other, p); err != nil {
				t.Fatal(err)
			}
			os.Rename(s.Path(testKey, other), path)
		}},
		{"symlink", func(t *testing.T, s *Store, path string) {
			good := filepath.Join(t.TempDir(), "elsewhere")
			b, _ := os.ReadFile(path)
			os.WriteFile(good, b, 0o600)
			os.Remove(path)
			os.Symlink(good, path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, 1<<20)
			if err := s.Save(testKey, tokens, p); err != nil {
				t.Fatal(err)
			}
			path := s.Path(testKey, tokens)
			c.spoil(t, s, path)
			_, err := s.Load(testKey, tokens, Frame{})
			var bad *BadEntryError
			if !errors.As(err, &bad) {
				t.Fatalf("Load: %v, want a *BadEntryError", err)
			}
			if err := s.Save(testKey, tokens, p); err != nil {
				t.Fatal(err)
			}
			if buf, err := s.Load(testKey, tokens, Frame{}); err != nil || !bytes.Equal(buf, p) {
				t.Fatalf("after saving again: %v", err)
			}
		})
	}
}

// Eviction keeps the most recently used entries within the cap; a load
// counts as a use; an entry larger than the cap is not saved.
func TestEvictionAtCap(t *testing.T) {
	const size = 10000
	probe := newStore(t, 1<<30)
	if err := probe.Save(testKey, []int{0}, payloadOf(size, 0)); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(probe.Path(testKey, []int{0}))
	entry := st.Size() // one entry's bytes on disk

	s := newStore(t, 3*entry)
	base := time.Now().Add(-time.Hour)
	for i := range 3 {
		if err := s.Save(testKey, []int{i}, payloadOf(size, byte(i))); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(s.Path(testKey, []int{i}), base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute))
	}
	// Entry 0 is the oldest; using it makes 1 the least recently used.
	if _, err := s.Load(testKey, []int{0}, Frame{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(testKey, []int{3}, payloadOf(size, 3)); err != nil {
		t.Fatal(err)
	}
	var left []int
	for i := range 4 {
		if _, err := os.Stat(s.Path(testKey, []int{i})); err == nil {
			left = append(left, i)
		}
	}
	if !slices.Equal(left, []int{0, 2, 3}) {
		t.Fatalf("left after eviction: %v, want [0 2 3]", left)
	}
	if err := s.Save(testKey, []int{9}, payloadOf(4*size, 9)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an entry over the cap: %v", err)
	}
	if _, err := os.Stat(s.Path(testKey, []int{9})); err == nil {
		t.Fatal("an entry over the cap was written")
	}
	off := &Store{Dir: s.Dir, Max: 0}
	if err := off.Save(testKey, []int{8}, payloadOf(10, 8)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a zero cap saved: %v", err)
	}
}

// Many writers of the same entry, with readers meanwhile: every load that
// succeeds returns one writer's payload whole, and the entry ends valid.
func TestConcurrentWriters(t *testing.T) {
	s := newStore(t, 1<<30)
	tokens := []int{42, 43, 44}
	payloads := make([][]byte, 8)
	for i := range payloads {
		payloads[i] = payloadOf(200000+i*1000, byte(i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range payloads {
		wg.Go(func() {
			for range 5 {
				if err := s.Save(testKey, tokens, payloads[i]); err != nil {
					errs <- err
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				buf, err := s.Load(testKey, tokens, Frame{})
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					errs <- err
					continue
				}
				if !slices.ContainsFunc(payloads, func(p []byte) bool { return bytes.Equal(p, buf) }) {
					errs <- errors.New("a load returned a mix of payloads")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := s.Load(testKey, tokens, Frame{}); err != nil {
		t.Fatal(err)
	}
	des, _ := os.ReadDir(s.Dir)
	if len(des) != 1 {
		t.Fatalf("%d files left, want the one entry (no temporary files)", len(des))
	}
}

func TestDirectorySafety(t *testing.T) {
	s := newStore(t, 1<<20)
	os.MkdirAll(s.Dir, 0o755)
	if err := s.Save(testKey, []int{1}, payloadOf(10, 1)); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(s.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("a looser directory stays %v", st.Mode())
	}
	notDir := &Store{Dir: filepath.Join(t.TempDir(), "file"), Max: 1 << 20}
	os.WriteFile(notDir.Dir, nil, 0o600)
	if err := notDir.Save(testKey, []int{1}, payloadOf(10, 1)); err == nil {
		t.Error("saved into a file")
	}
	// An abandoned temporary file goes at the next eviction; a fresh one stays.
	old := filepath.Join(s.Dir, tmpPrefix+"old"+Ext)
	fresh := filepath.Join(s.Dir, tmpPrefix+"fresh"+Ext)
	os.WriteFile(old, []byte("x"), 0o600)
	os.WriteFile(fresh, []byte("x"), 0o600)
	past := time.Now().Add(-2 * staleTemp)
	os.Chtimes(old, past, past)
	if err := s.Evict(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("an abandoned temporary file stayed")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh temporary file (a write in progress) went")
	}
}

func TestListAndClear(t *testing.T) {
	s := newStore(t, 1<<20)
	if es, err := List(s.Dir); err != nil || len(es) != 0 {
		t.Fatalf("a missing directory: %v %v", es, err)
	}
	for i := range 3 {
		if err := s.Save(testKey, []int{i, i}, payloadOf(100*(i+1), 1)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(s.Dir, "junk"+Ext), []byte("junk"), 0o600)
	os.WriteFile(filepath.Join(s.Dir, "README"), []byte("not ours"), 0o600)
	es, err := List(s.Dir)
	if err != nil || len(es) != 4 {
		t.Fatalf("List: %d entries, %v", len(es), err)
	}
	bad := 0
	for _, e := range es {
		switch {
		case e.Error != "":
			bad++
		case e.Tokens != 2 || e.Key == nil || *e.Key != testKey || e.Size <= 0:
			t.Errorf("entry %+v", e)
		}
	}
	if bad != 1 {
		t.Errorf("%d unreadable entries, want 1", bad)
	}
	n, size, err := Clear(s.Dir)
	if err != nil || n != 4 || size <= 0 {
		t.Fatalf("Clear: %d %d %v", n, size, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "README")); err != nil {
		t.Error("Clear removed a file that is not an entry")
	}
	if n, _, err := Clear(filepath.Join(t.TempDir(), "none")); n != 0 || err != nil {
		t.Errorf("Clear of a missing directory: %d %v", n, err)
	}
}

// FuzzLoad: whatever bytes an entry file holds, Load returns an error or
// exactly what was saved, and never panics.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	s := &Store{Dir: dir, Max: 1 << 20}
	tokens := []int{1, 2, 3}
	p := payloadOf(64, 5)
	if err := s.Save(testKey, tokens, p); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(s.Path(testKey, tokens))
	f.Add(good)
	f.Add(good[:30])
	f.Add([]byte(magic + "\x05\x00\x00\x00{}abc"))
	f.Add([]byte(magic + "\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := s.Path(testKey, tokens)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		buf, err := s.Load(testKey, tokens, Frame{Before: 1})
		if err == nil && !bytes.Equal(buf[1:], p) {
			t.Fatalf("loaded %d bytes that were never saved", len(buf))
		}
		Tokens(path)
		if _, err := List(dir); err != nil {
			t.Fatal(fmt.Errorf("List: %w", err))
		}
	})
}

// Regression (issue 23, item 8): an entry that is a FIFO blocked the load
// in open(2) for ever. Every kind but a regular file is a bad entry at
// once, and the entry is saved again over it where a rename can replace it.
func TestEntryKinds(t *testing.T) {
	tokens := []int{7, 8, 9}
	p := payloadOf(3000, 5)
	for _, c := range []struct {
		name  string
		make  func(t *testing.T, path string)
		resav bool // a save replaces it
	}{
		{"fifo", func(t *testing.T, path string) { mustDo(t, syscall.Mkfifo(path, 0o600)) }, true},
		{"fifo with a writer", func(t *testing.T, path string) {
			mustDo(t, syscall.Mkfifo(path, 0o600))
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			mustDo(t, err)
			t.Cleanup(func() { f.Close() })
			f.Write(bytes.Repeat([]byte("x"), 100))
		}, true},
		{"symlink to a fifo", func(t *testing.T, path string) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			mustDo(t, syscall.Mkfifo(fifo, 0o600))
			mustDo(t, os.Symlink(fifo, path))
		}, true},
		{"symlink to /dev/zero", func(t *testing.T, path string) { mustDo(t, os.Symlink("/dev/zero", path)) }, true},
		{"directory", func(t *testing.T, path string) { mustDo(t, os.Mkdir(path, 0o700)) }, false},
		{"larger than the cap", func(t *testing.T, path string) {
			mustDo(t, os.WriteFile(path, bytes.Repeat([]byte("x"), 2<<20), 0o600))
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, 1<<20)
			mustDo(t, os.MkdirAll(s.Dir, 0o700))
			path := s.Path(testKey, tokens)
			c.make(t, path)
			err := boundedCall(t, c.name, func() error { _, err := s.Load(testKey, tokens, Frame{}); return err })
			var bad *BadEntryError
			if !errors.As(err, &bad) {
				t.Fatalf("Load: %v, want a *BadEntryError", err)
			}
			if err := boundedCall(t, c.name, func() error { _, err := Tokens(path); return err }); err == nil {
				t.Fatal("Tokens read it")
			}
			if es, err := List(s.Dir); err != nil || len(es) > 1 || (len(es) == 1 && es[0].Error == "") {
				t.Fatalf("List: %+v %v", es, err)
			}
			if !c.resav {
				return
			}
			mustDo(t, s.Save(testKey, tokens, p))
			if buf, err := s.Load(testKey, tokens, Frame{}); err != nil || !bytes.Equal(buf, p) {
				t.Fatalf("after saving again: %v", err)
			}
		})
	}
}

// Regression (issue 23, item 15): a directory others could write to was
// still read from; only saving refused it. Load refuses it, and CheckDir
// (which the backend asks once, to warn and go on without the cache) says
// why.
func TestLoadRefusesUnsafeDirectory(t *testing.T) {
	tokens := []int{1, 2, 3}
	p := payloadOf(500, 2)
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, s *Store) string // the directory Load is given
		why   string
	}{
		{"world-writable", func(t *testing.T, s *Store) string { mustDo(t, os.Chmod(s.Dir, 0o777)); return s.Dir },
			"is writable by other users (mode 0777)"},
		{"group-writable", func(t *testing.T, s *Store) string { mustDo(t, os.Chmod(s.Dir, 0o770)); return s.Dir },
			"is writable by other users (mode 0770)"},
		{"sticky world-writable", func(t *testing.T, s *Store) string {
			mustDo(t, os.Chmod(s.Dir, 0o777|fs.ModeSticky))
			return s.Dir
		}, "is writable by other users (mode 0777)"},
		{"symbolic link", func(t *testing.T, s *Store) string {
			link := filepath.Join(t.TempDir(), "link")
			mustDo(t, os.Symlink(s.Dir, link))
			return link
		}, "is a symbolic link"},
		{"another user's", func(t *testing.T, s *Store) string {
			if os.Getuid() != 0 {
				t.Skip("needs root to give the directory away")
			}
			mustDo(t, os.Chown(s.Dir, 65534, 65534))
			return s.Dir
		}, "belongs to another user (uid 65534)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, 1<<20)
			mustDo(t, s.Save(testKey, tokens, p))
			dir := c.spoil(t, s)
			want := "prompt cache directory " + dir + ": " + c.why
			if err := CheckDir(dir); err == nil || err.Error() != want {
				t.Fatalf("CheckDir: %v, want %q", err, want)
			}
			_, err := (&Store{Dir: dir, Max: s.Max}).Load(testKey, tokens, Frame{})
			var de *DirError
			if !errors.As(err, &de) || err.Error() != want {
				t.Fatalf("Load: %v, want %q", err, want)
			}
		})
	}
	// Missing is fine (a save makes it 0700), and so is a 0755 directory
	// of this user's: others may read it, not write it.
	if err := CheckDir(filepath.Join(t.TempDir(), "none")); err != nil {
		t.Fatalf("missing: %v", err)
	}
	s := newStore(t, 1<<20)
	mustDo(t, s.Save(testKey, tokens, p))
	mustDo(t, os.Chmod(s.Dir, 0o755))
	if _, err := s.Load(testKey, tokens, Frame{}); err != nil {
		t.Fatalf("0755: %v", err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// boundedCall fails the test by name when f is still blocked after 5 s.
func boundedCall(t *testing.T, name string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still blocked after 5s", name)
		return nil
	}
}
