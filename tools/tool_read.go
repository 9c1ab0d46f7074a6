package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/redact"
)

// binarySniff is how many leading bytes are checked for NUL to call a file
// binary (the same heuristic git and grep use).
const binarySniff = 8000

func looksBinary(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 }

// ---- read_file ----

// ReadFile is the read_file tool.
type ReadFile struct{}

var readFileSchema = schemaObject(map[string]any{
	"path":   schemaNonEmpty("File to read, relative to the workspace root."),
	"offset": schemaInt("Number of lines to skip from the start of the file (default 0).", 0),
	"limit":  schemaInt("Maximum number of lines to return (default: all, up to the read cap).", 1),
}, "path")

func (ReadFile) Name() string { return "read_file" }
func (ReadFile) Description() string {
	return "Read a text file in the workspace; offset skips lines, limit caps how many lines are returned."
}
func (ReadFile) Class() Class            { return ClassRead }
func (ReadFile) Schema() json.RawMessage { return readFileSchema }
func (ReadFile) Declare() Decl {
	return Decl{Paths: []string{"path"}, FilePath: true, HookNames: []string{"Read"}}
}

func (t ReadFile) Run(ctx context.Context, env *Env, raw json.RawMessage) Result {
	var path string
	var offset, limit int
	if err := decodeArgs(t.Name(), raw,
		argSpec{name: "path", required: true, dst: &path},
		argSpec{name: "offset", dst: &offset},
		argSpec{name: "limit", dst: &limit},
	); err != nil {
		return toolFail(err)
	}
	if offset < 0 {
		return toolFail(fmt.Errorf("read_file: offset %d is negative", offset))
	}
	if limit < 0 {
		return toolFail(fmt.Errorf("read_file: limit %d is negative", limit))
	}
	f, fi, _, err := env.openRegular(path)
	if err != nil {
		return toolFail(fmt.Errorf("read_file: %w", err))
	}
	defer f.Close()
	out, err := readLines(f, fi.Size(), path, offset, limit, env.readCap(), env.Redactor)
	if err != nil {
		return toolFail(fmt.Errorf("read_file: %s: %w", path, unwrapPathError(err)))
	}
	return Result{Output: out}
}

// readLines skips offset lines, then returns up to limit lines (0: all)
// holding at most readCap bytes, with a bracketed note at the end when the
// text was cut. Memory stays within readCap plus the reader's buffer however
// long the file or its lines are.
func readLines(r io.Reader, size int64, name string, offset, limit int, readCap int64, red *redact.Redactor) (string, error) {
	br := bufio.NewReaderSize(r, 64*1024)
	head, err := br.Peek(binarySniff)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", err
	}
	if looksBinary(head) {
		return "", fmt.Errorf("file looks binary (NUL byte in the first %d bytes); not shown", binarySniff)
	}
	skipped := 0
	for skipped < offset {
		_, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // same long line
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		skipped++
	}
	var out bytes.Buffer
	lines := 0
	capped := false
	partial := false // inside a line that ReadSlice returned in pieces
	for limit == 0 || lines < limit {
		chunk, err := br.ReadSlice('\n')
		if int64(out.Len()+len(chunk)) > readCap {
			n := int(readCap) - out.Len()
			out.Write(chunk[:n])
			out.Truncate(safeCapEnd(red, out.Bytes(), chunk[n:], br)) // never end inside a secret
			capped = true
			break
		}
		out.Write(chunk)
		if errors.Is(err, bufio.ErrBufferFull) {
			partial = true
			continue
		}
		if len(chunk) > 0 || partial {
			lines++
		}
		partial = false
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	text := out.String()
	if capped {
		text = strings.ToValidUTF8(trimPartialRune(text), "")
		return text + fmt.Sprintf("\n[read_file: output cut at the read cap of %d bytes (file is %d bytes); use offset=%d to read on]", readCap, size, offset+lines), nil
	}
	if offset > 0 && text == "" {
		return fmt.Sprintf("[read_file: %s has only %d lines; nothing after offset %d]", name, skipped, offset), nil
	}
	if limit > 0 && lines == limit {
		if _, err := br.Peek(1); err == nil {
			if text != "" && !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			text += fmt.Sprintf("[read_file: showed lines %d-%d; more follow, use offset=%d to read on]", offset+1, offset+lines, offset+lines)
		}
	}
	return text, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of s, left
// by cutting at a byte count.
func trimPartialRune(s string) string {
	for i := 1; i <= utf8.UTFMax && i <= len(s); i++ {
		if utf8.RuneStart(s[len(s)-i]) {
			if !utf8.FullRuneInString(s[len(s)-i:]) {
				return s[:len(s)-i]
			}
			break
		}
	}
	return s
}

// ---- list_files ----

// ListFiles is the list_files tool.
type ListFiles struct{}

// maxListEntries bounds list_files output for huge directories.
const maxListEntries = 2000

var listFilesSchema = schemaObject(map[string]any{
	"path": schemaStr(`Directory to list, relative to the workspace root (default ".", the root).`),
})

func (ListFiles) Name() string { return "list_files" }
func (ListFiles) Description() string {
	return "List a workspace directory: one entry per line, sorted, directories end with /."
}
func (ListFiles) Class() Class            { return ClassRead }
func (ListFiles) Schema() json.RawMessage { return listFilesSchema }
func (ListFiles) Declare() Decl {
	return Decl{Paths: []string{"path"}, HookNames: []string{"LS", "Glob"}}
}

func (t ListFiles) Run(ctx context.Context, env *Env, raw json.RawMessage) Result {
	path := "."
	if err := decodeArgs(t.Name(), raw, argSpec{name: "path", dst: &path}); err != nil {
		return toolFail(err)
	}
	if path == "" {
		path = "."
	}
	p, err := env.locate(path)
	if err != nil {
		return toolFail(fmt.Errorf("list_files: %w", err))
	}
	defer p.Close()
	entries, err := p.readDir()
	if err != nil {
		return toolFail(fmt.Errorf("list_files: %w", err))
	}
	if len(entries) == 0 {
		return Result{Output: fmt.Sprintf("[list_files: %s is empty]", path)}
	}
	var b strings.Builder
	for i, de := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&b, "[list_files: %d more entries not shown]\n", len(entries)-i)
			break
		}
		name := de.Name()
		isDir := de.IsDir()
		if de.Type()&fs.ModeSymlink != 0 {
			// A symlink to a directory inside the workspace lists like one:
			// it can be listed too. One leading out cannot, and does not.
			if st, err := p.root.Stat(relJoin(p.rel, name)); err == nil && st.IsDir() {
				isDir = true
			}
		}
		b.WriteString(name)
		if isDir {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	return Result{Output: b.String()}
}

// ---- search_files ----

// SearchFiles is the search_files tool.
type SearchFiles struct{}

const (
	maxSearchMatches = 500
	maxSearchLineLen = 400 // bytes of a matching line shown
	maxScanLine      = 1 << 20
)

var searchFilesSchema = schemaObject(map[string]any{
	"pattern": schemaNonEmpty("Go (RE2) regular expression matched against each line."),
	"path":    schemaStr(`File or directory to search, relative to the workspace root (default ".", the whole workspace). .git and binary files are skipped.`),
}, "pattern")

func (SearchFiles) Name() string { return "search_files" }
func (SearchFiles) Description() string {
	return "Search workspace files for a regular expression; prints file:line: text for each matching line."
}
func (SearchFiles) Class() Class            { return ClassRead }
func (SearchFiles) Schema() json.RawMessage { return searchFilesSchema }
func (SearchFiles) Declare() Decl {
	return Decl{Paths: []string{"path"}, HookNames: []string{"Grep"}}
}

func (t SearchFiles) Run(ctx context.Context, env *Env, raw json.RawMessage) Result {
	var pattern string
	path := "."
	if err := decodeArgs(t.Name(), raw,
		argSpec{name: "pattern", required: true, dst: &pattern},
		argSpec{name: "path", dst: &path},
	); err != nil {
		return toolFail(err)
	}
	if path == "" {
		path = "."
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return toolFail(fmt.Errorf("search_files: bad pattern %q: %w", pattern, err))
	}
	p, err := env.locate(path)
	if err != nil {
		return toolFail(fmt.Errorf("search_files: %w", err))
	}
	defer p.Close()
	fi, err := p.root.Stat(p.rel)
	if err != nil {
		return toolFail(fmt.Errorf("search_files: %w", p.fail(err)))
	}
	s := &searcher{env: env, re: re, readCap: env.readCap()}
	if fi.Mode().IsRegular() {
		var f *os.File
		if f, err = p.root.OpenFile(p.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0); err != nil {
			return toolFail(fmt.Errorf("search_files: %w", p.fail(err)))
		}
		err = s.file(ctx, f, p.rel)
	} else if fi.IsDir() {
		var top *dirHandle
		if top, err = openDirIn(p.root, p.rel); err != nil {
			return toolFail(fmt.Errorf("search_files: %w", p.fail(err)))
		}
		err = s.walk(ctx, top, p.rel)
		top.Close()
	} else {
		return toolFail(fmt.Errorf("search_files: %s is %s; want a file or directory", path, filekind.Name(fi.Mode())))
	}
	if errors.Is(err, errEnough) {
		err = nil
	}
	if err != nil {
		return toolFail(fmt.Errorf("search_files: %w", err))
	}
	if s.n == 0 {
		return Result{Output: fmt.Sprintf("no matches for %q in %s", pattern, path)}
	}
	if s.capped {
		fmt.Fprintf(&s.out, "[search_files: stopped after %d matches; narrow the pattern or path]\n", maxSearchMatches)
	}
	return Result{Output: s.out.String()}
}

var errEnough = errors.New("enough matches")

type searcher struct {
	env     *Env
	re      *regexp.Regexp
	readCap int64
	out     strings.Builder
	n       int
	capped  bool
}

// walk searches every regular file below the directory dir, whose
// workspace-relative path is rel, in name order, skipping .git directories
// below it. Each directory is held open and its entries are opened relative
// to it without following symlinks, so a swap anywhere cannot redirect the
// walk; special files are skipped, which keeps the search off FIFOs.
func (s *searcher) walk(ctx context.Context, dir *dirHandle, rel string) error {
	entries, _ := dir.readDir() // on an error, search what was read
	for _, de := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := de.Name()
		switch {
		case de.IsDir():
			if name == ".git" {
				continue
			}
			sub, err := dir.sub(name)
			if err != nil {
				continue // vanished, unreadable or swapped
			}
			err = s.walk(ctx, sub, relJoin(rel, name))
			sub.Close()
			if err != nil {
				return err
			}
		case de.Type().IsRegular():
			f, err := dir.open(name, os.O_RDONLY, 0)
			if err != nil {
				continue // vanished, unreadable or swapped
			}
			if err := s.file(ctx, f, relJoin(rel, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// file searches the open file f, whose workspace-relative path is rel, and
// closes it.
func (s *searcher) file(ctx context.Context, f *os.File, rel string) error {
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	br := bufio.NewReaderSize(io.LimitReader(f, s.readCap), 64*1024)
	head, _ := br.Peek(binarySniff)
	if looksBinary(head) {
		return nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64*1024), maxScanLine)
	for line := 1; sc.Scan(); line++ {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		text := sc.Bytes()
		if !s.re.Match(text) {
			continue
		}
		shown := string(text)
		if len(shown) > maxSearchLineLen {
			shown = strings.ToValidUTF8(trimPartialRune(shown[:s.env.Redactor.CutBefore(shown, maxSearchLineLen)]), "") + "…"
		}
		fmt.Fprintf(&s.out, "%s:%d: %s\n", rel, line, shown)
		s.n++
		if s.n >= maxSearchMatches {
			s.capped = true
			return errEnough
		}
	}
	// A line over maxScanLine ends the file's scan; the matches so far stand.
	return nil
}

// safeCapEnd returns how many bytes of kept, a text cut at a cap, may stay
// so that no secret straddling the cap is split. rest is what the reader
// returned past the cap and br has what follows; up to CutMargin bytes of
// both are looked at (rest is copied first: peeking may reuse its memory).
func safeCapEnd(red *redact.Redactor, kept, rest []byte, br *bufio.Reader) int {
	m := red.CutMargin()
	if m == 0 {
		return len(kept)
	}
	more := append([]byte(nil), rest[:min(len(rest), m)]...)
	if len(more) < m {
		p, _ := br.Peek(min(m-len(more), br.Size()))
		more = append(more, p...)
	}
	start := max(0, len(kept)-m)
	window := string(kept[start:]) + string(more)
	return start + red.CutBefore(window, len(kept)-start)
}
