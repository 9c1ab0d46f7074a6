package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The history file: queries of several lines kept whole, a leading space
// or a repeat not kept, the newest 1000, mode 0600 in a 0700 directory.
func TestChatHistory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	path := historyPath()
	if path != filepath.Join(dir, "tact", "history") {
		t.Fatalf("path %q", path)
	}
	h := loadHistory(path)
	for _, q := range []string{"first", "two\nlines with a \\ backslash", "two\nlines with a \\ backslash", " secret one", "  ", "last"} {
		h.record(q)
	}
	if h.err != nil {
		t.Fatal(h.err)
	}
	data, _ := os.ReadFile(path)
	if want := "first\ntwo\\nlines with a \\\\ backslash\nlast\n"; string(data) != want {
		t.Errorf("file %q, want %q", data, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", fi.Mode().Perm())
	}
	h2 := loadHistory(path)
	if h2.Len() != 3 || h2.At(0) != "last" || h2.At(1) != "two lines with a \\ backslash" || h2.At(2) != "first" {
		t.Errorf("loaded %q", h2.entries)
	}
	for i := range historyLimit + 5 {
		h2.record(fmt.Sprint("q", i))
	}
	if h3 := loadHistory(path); h3.Len() != historyLimit || h3.At(0) != fmt.Sprint("q", historyLimit+4) {
		t.Errorf("after %d more: %d entries, newest %q", historyLimit+5, h3.Len(), h3.At(0))
	}
	// A history that cannot be saved says so once.
	bad := &chatHistory{path: filepath.Join(path, "not-a-dir", "history")}
	bad.record("x")
	if bad.err == nil {
		t.Error("no error saving under a file")
	}
}

// Two sessions at once, as two terminals: each loaded the history before
// the other wrote, then both record queries interleaved. Every query of
// both ends up in the file, each on a line of its own.
func TestChatHistoryConcurrentSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tact", "history")
	a, b := loadHistory(path), loadHistory(path)
	const n = 200
	var wg sync.WaitGroup
	for name, h := range map[string]*chatHistory{"a": a, "b": b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				h.record(fmt.Sprintf("%s-%d\nsecond line", name, i))
			}
		}()
	}
	wg.Wait()
	if a.err != nil || b.err != nil {
		t.Fatal(a.err, b.err)
	}
	got := loadHistory(path).entries
	if len(got) != 2*n {
		t.Fatalf("%d queries in the file, want %d", len(got), 2*n)
	}
	seen := map[string]bool{}
	for _, e := range got {
		seen[e] = true
	}
	for _, name := range []string{"a", "b"} {
		for i := range n {
			if q := fmt.Sprintf("%s-%d\nsecond line", name, i); !seen[q] {
				t.Fatalf("lost %q", q)
			}
		}
	}
	// Past historyCompactAt, once the file holds twice historyLimit
	// queries, an append trims it to the newest historyLimit, still under
	// the lock.
	long := strings.Repeat("x", 300)
	for i := range 2*historyLimit + 50 {
		a.record(fmt.Sprint(i, long))
	}
	b2, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b2), "\n"); lines > 2*historyLimit || lines < historyLimit {
		t.Errorf("%d queries in the file after trimming", lines)
	}
	if h := loadHistory(path); h.Len() != historyLimit || h.At(0) != fmt.Sprint(2*historyLimit+49, long) {
		t.Errorf("after trimming: %d queries, newest %.20q", h.Len(), h.At(0))
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("trimmed file: %v, %v", st, err)
	}
}

func FuzzHistoryEscape(f *testing.F) {
	f.Add("plain")
	f.Add("two\nlines \\n not a newline \\")
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ReplaceAll(s, "\r", "")
		esc := escapeHistory(s)
		if strings.Contains(esc, "\n") {
			t.Fatalf("escaped %q has a newline", esc)
		}
		if got := unescapeHistory(esc); got != s {
			t.Fatalf("round trip of %q: %q", s, got)
		}
		_ = unescapeHistory(s) // any line of a file parses
	})
}

// The terminal's input is shared: an approval answer takes one line and
// leaves the rest, a read its context ended takes nothing, and the line
// editor's reads turn Ctrl-C into Enter with a mark.
func TestTTYInputShared(t *testing.T) {
	r, w := io.Pipe()
	in := newTTYInput(r)
	ctx := context.Background()
	go w.Write([]byte("y\nnext query\r"))
	if got, err := in.ReadLine(ctx); got != "y" || err != nil {
		t.Fatalf("answer %q, %v", got, err)
	}
	eio := &editorIO{in: in, out: io.Discard, ctx: ctx}
	buf := make([]byte, 64)
	if n, _ := eio.Read(buf); string(buf[:n]) != "next query\r" {
		t.Fatalf("editor read %q", buf[:n])
	}

	// A cancelled answer leaves what is typed later to the editor.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := in.ReadLine(cctx); err == nil {
		t.Fatal("ReadLine with nothing typed returned")
	}
	go w.Write([]byte("ab\x03cd"))
	n, _ := eio.Read(buf)
	if string(buf[:n]) != "ab\r" || !eio.interrupted {
		t.Fatalf("Ctrl-C read %q (interrupted %v)", buf[:n], eio.interrupted)
	}
	n, _ = eio.Read(buf)
	if string(buf[:n]) != "cd" {
		t.Fatalf("after Ctrl-C %q", buf[:n])
	}
	// The end of input is one read's answer, not the end of the terminal.
	w.Close()
	if _, err := in.ReadLine(ctx); err != io.EOF {
		t.Fatalf("closed input: %v", err)
	}
}
