package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/filekind"
	"golang.org/x/term"
)

// tact chat's terminal: one reader of the terminal's input shared by the
// line editor (golang.org/x/term's Terminal, in raw mode) and the approval
// prompts (cooked mode, during a turn), so neither leaves a read pending
// that would take what is typed for the other; the history file.

// ttyInput is the terminal's input, read by one goroutine on demand: a
// consumer asks for a read and waits for its bytes or its context; bytes a
// consumer did not wait for go to the next one.
type ttyInput struct {
	f       io.Reader
	mu      sync.Mutex // one consumer at a time
	want    chan struct{}
	chunks  chan ttyChunk
	asked   bool   // a read is under way for a consumer that may be gone
	pending []byte // bytes read and not yet consumed
	start   sync.Once
}

type ttyChunk struct {
	data []byte
	err  error
}

func newTTYInput(f io.Reader) *ttyInput {
	return &ttyInput{f: f, want: make(chan struct{}), chunks: make(chan ttyChunk)}
}

func (in *ttyInput) pump() {
	for range in.want {
		buf := make([]byte, 4096)
		n, err := in.f.Read(buf)
		in.chunks <- ttyChunk{buf[:n], err}
	}
}

// next returns the next bytes typed (mu held): pending ones, or a fresh
// read. An error (io.EOF: Ctrl-D in cooked mode, or the terminal gone)
// ends that read only; a later call reads again.
func (in *ttyInput) next(ctx context.Context) ([]byte, error) {
	if len(in.pending) > 0 {
		b := in.pending
		in.pending = nil
		return b, nil
	}
	in.start.Do(func() { go in.pump() })
	if !in.asked {
		select {
		case in.want <- struct{}{}:
			in.asked = true
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	select {
	case c := <-in.chunks:
		in.asked = false
		if len(c.data) == 0 && c.err == nil {
			c.err = io.ErrNoProgress
		}
		if len(c.data) > 0 {
			return c.data, nil // an error with data comes again on the next read
		}
		return nil, c.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// unread gives bytes back for the next consumer (mu held).
func (in *ttyInput) unread(b []byte) {
	if len(b) > 0 {
		in.pending = append(append([]byte(nil), b...), in.pending...)
	}
}

// ReadLine reads one line in cooked mode: an approval prompt's answer
// (policy.LineReader). What follows the newline stays for the next reader.
func (in *ttyInput) ReadLine(ctx context.Context) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var line []byte
	for {
		b, err := in.next(ctx)
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return string(line), nil
			}
			in.unread(line)
			return "", err
		}
		if i := strings.IndexAny(string(b), "\r\n"); i >= 0 {
			line = append(line, b[:i]...)
			in.unread(b[i+1:])
			return string(line), nil
		}
		line = append(line, b...)
		if len(line) > 4096 {
			line = line[:4096] // an answer is a word; drop the rest of a runaway line
		}
	}
}

// editorIO is what x/term's Terminal reads and writes while the line
// editor runs: reads come from the shared input with Ctrl-C turned into
// Enter plus a mark (x/term treats Ctrl-C as Ctrl-D, and tact chat must
// tell them apart and know whether the line was empty); writes go to the
// terminal.
type editorIO struct {
	in          *ttyInput
	out         io.Writer
	ctx         context.Context
	interrupted bool // the last line ended with Ctrl-C
}

func (e *editorIO) Read(p []byte) (int, error) {
	e.in.mu.Lock()
	defer e.in.mu.Unlock()
	b, err := e.in.next(e.ctx)
	if err != nil {
		return 0, err
	}
	if i := strings.IndexByte(string(b), 0x03); i >= 0 {
		e.interrupted = true
		e.in.unread(b[i+1:])
		b = append(b[:i:i], '\r')
	}
	n := copy(p, b)
	e.in.unread(b[n:])
	return n, nil
}

func (e *editorIO) Write(p []byte) (int, error) { return e.out.Write(p) }

// lineEditor reads queries at the prompt: line editing and history (up
// and down keys) from x/term, raw mode only while it reads.
type lineEditor struct {
	fd   int
	io   *editorIO
	t    *term.Terminal
	hist *chatHistory
}

// errInterrupt is Ctrl-C at the prompt; the line typed so far comes with it.
var errInterrupt = errors.New("interrupted")

func newLineEditor(ctx context.Context, in *ttyInput, fd int, out io.Writer, hist *chatHistory) *lineEditor {
	eio := &editorIO{in: in, out: out, ctx: ctx}
	t := term.NewTerminal(eio, "")
	t.History = hist
	return &lineEditor{fd: fd, io: eio, t: t, hist: hist}
}

// readQuery reads one query: a line, or several when lines end with a
// backslash or arrive in one paste. io.EOF: Ctrl-D on an empty line;
// errInterrupt: Ctrl-C, with what was typed.
func (le *lineEditor) readQuery(prompt, more string) (string, error) {
	old, err := term.MakeRaw(le.fd)
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	defer term.Restore(le.fd, old)
	if w, h, err := term.GetSize(le.fd); err == nil && w > 0 && h > 0 {
		_ = le.t.SetSize(w, h)
	}
	le.t.SetBracketedPasteMode(true)
	defer le.t.SetBracketedPasteMode(false)
	var lines []string
	p := prompt
	for {
		le.t.SetPrompt(p)
		le.io.interrupted = false
		line, err := le.t.ReadLine()
		pasted := errors.Is(err, term.ErrPasteIndicator)
		if err != nil && !pasted {
			return strings.Join(append(lines, line), "\n"), err
		}
		if le.io.interrupted {
			return strings.Join(append(lines, line), "\n"), errInterrupt
		}
		switch {
		case pasted:
			// A pasted line: the query goes on until Enter is typed.
			lines = append(lines, line)
		case strings.HasSuffix(line, `\`):
			lines = append(lines, strings.TrimSuffix(line, `\`))
		default:
			q := strings.Join(append(lines, line), "\n")
			le.hist.record(q)
			return q, nil
		}
		p = more
	}
}

// chatHistory is the prompt's history: the queries of earlier sessions,
// kept in $XDG_STATE_HOME/tact/history (0600). x/term's Add is ignored:
// a query of several lines is recorded whole by record.
type chatHistory struct {
	path    string
	entries []string // oldest first
	err     error    // the first failure to save, reported once
}

// historyLimit bounds the file: the newest queries are kept.
const historyLimit = 1000

// historyPath is $XDG_STATE_HOME/tact/history (default ~/.local/state).
func historyPath() string { return filepath.Join(config.StateDir(), "history") }

// loadHistory reads the history file; a missing one is empty.
func loadHistory(path string) *chatHistory {
	h := &chatHistory{path: path}
	// A regular file only (a FIFO there must not hang the session), at
	// most 64 MiB (1000 queries; a larger file is not tact's).
	f, err := filekind.Open(filekind.Spec{What: "history", Max: 64 << 20}, path)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if e := unescapeHistory(sc.Text()); e != "" {
			h.entries = append(h.entries, e)
		}
	}
	if len(h.entries) > historyLimit {
		h.entries = h.entries[len(h.entries)-historyLimit:]
	}
	return h
}

func (h *chatHistory) Add(string) {}

func (h *chatHistory) Len() int { return len(h.entries) }

// At is entry idx from the newest; a query of several lines comes back on
// one line.
func (h *chatHistory) At(idx int) string {
	return strings.ReplaceAll(h.entries[len(h.entries)-1-idx], "\n", " ")
}

// record adds a query and appends it to the file. Blank queries, a repeat
// of the last one and queries typed with a leading space (as in shells: a
// way to keep one out) are not recorded.
func (h *chatHistory) record(q string) {
	if strings.TrimSpace(q) == "" || strings.HasPrefix(q, " ") {
		return
	}
	if n := len(h.entries); n > 0 && h.entries[n-1] == q {
		return
	}
	h.entries = append(h.entries, q)
	if len(h.entries) > historyLimit {
		h.entries = h.entries[len(h.entries)-historyLimit:]
	}
	if h.path == "" {
		return // saving failed before; reported once
	}
	if err := appendHistory(h.path, q); err != nil && h.err == nil {
		h.err = err
	}
}

// historyCompactAt is the file size past which an append also counts the
// queries in the file, and trims it to the newest historyLimit once it
// holds twice that many: a trim now and then, not a rewrite every time.
const historyCompactAt = 256 << 10

// appendHistory appends one query to the file, 0600 in a 0700 directory
// (queries may hold what the user would not share). Several sessions may
// run at once: each append happens under an exclusive lock on a lock file
// beside it, as shells do, so no session's queries are lost; the rare
// trim rewrites the file under the same lock.
func appendHistory(path, q string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer unlock()
	f, err := filekind.OpenOutput(filekind.Spec{What: "history"}, path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	_, err = f.WriteString(escapeHistory(q) + "\n")
	var size int64
	if st, serr := f.Stat(); serr == nil {
		size = st.Size()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if size > historyCompactAt {
		return compactHistory(path)
	}
	return nil
}

// lockFile takes an exclusive flock on path (created 0600), waiting for
// other sessions; unlock releases it.
func lockFile(path string) (unlock func(), err error) {
	f, err := filekind.OpenLock(filekind.Spec{What: "history lock"}, path)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// compactHistory rewrites the file with its newest historyLimit queries (a
// temporary file renamed over it) when it holds more than twice that many;
// the caller holds the lock.
func compactHistory(path string) error {
	b, err := filekind.ReadFile(filekind.Spec{What: "history", Max: 64 << 20}, path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if bytes.Count(b, []byte("\n")) <= 2*historyLimit {
		return nil
	}
	entries := loadHistory(path).entries
	tmp, err := os.CreateTemp(filepath.Dir(path), ".history-*")
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	for _, e := range entries {
		w.WriteString(escapeHistory(e))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("history: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("history: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// A history line is one query with its backslashes doubled and newlines
// written as \n.
func escapeHistory(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", "").Replace(s)
}

func unescapeHistory(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
