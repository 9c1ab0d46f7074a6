// Package promptcache keeps the KV state of prompt prefixes in files, so a
// later process that starts with the same prefix loads it instead of
// evaluating it again (the llama backend's warm starts; see
// docs/inference.md#prompt-cache). It knows nothing of llama.cpp: an entry
// is a Key, a token sequence and an opaque payload.
//
// Safety:
//   - The directory is made 0700 and must belong to the user; one that is
//     a symbolic link, another user's or writable by others is neither
//     read nor written (CheckDir; Load refuses it too). Files are 0600, written to a unique temporary file and renamed into place, so
//     a reader sees a whole entry or none, and two processes writing the
//     same entry never mix their bytes (the last rename wins).
//   - An entry is opened without blocking and only if it is a regular file
//     of this user's within the cap (a FIFO or device is a bad entry, never
//     waited on), not through a symbolic link.
//   - An entry is trusted only whole: its header must name exactly the
//     expected key and tokens, its size must add up, and a SHA-256 over
//     the tokens and payload must match. Anything else is a *BadEntryError
//     the caller ignores (and replaces by saving again).
//   - The directory's size is capped: after each save the least recently
//     used entries (modification time, which a load refreshes) go first.
package promptcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tactcli/tact/internal/filekind"
)

// magic opens every entry; its last byte is the format's version.
const magic = "TACTKV\x00\x01"

// Ext is the file name extension of entries; temporary files start with
// tmpPrefix.
const (
	Ext       = ".kv"
	tmpPrefix = ".tmp-"
	// maxHeader bounds the JSON header a reader accepts.
	maxHeader = 1 << 20
	// staleTemp is the age after which a temporary file is an abandoned
	// write (a killed process) and eviction removes it.
	staleTemp = time.Hour
)

// Key is everything besides the tokens that changes a prefix's KV state.
// Two processes share an entry only when their keys are equal.
type Key struct {
	Model      string `json:"model"` // absolute path of the model file
	ModelSize  int64  `json:"model_size"`
	ModelMTime int64  `json:"model_mtime_ns"`
	CtxSize    int    `json:"ctx_size"`
	BatchSize  int    `json:"batch_size"`
	KVType     string `json:"kv_cache_type"`
	FlashAttn  bool   `json:"flash_attention"`
	GPU        string `json:"gpu,omitempty"` // offloaded layers and devices
	Layout     string `json:"layout"`        // how the backend lays out the payload
	Build      string `json:"build"`         // tact's and llama.cpp's build
}

// header is an entry's JSON header.
type header struct {
	Key     Key       `json:"key"`
	Tokens  int       `json:"tokens"`
	Payload int64     `json:"payload_bytes"`
	SHA256  string    `json:"sha256"` // of the tokens (int32 little-endian) and the payload
	Created time.Time `json:"created"`
}

// Name is the file name of the entry for key and tokens: a hash of both.
func Name(key Key, tokens []int) string {
	h := sha256.New()
	k, _ := json.Marshal(key)
	h.Write(k)
	h.Write([]byte{0})
	h.Write(tokenBytes(tokens))
	return hex.EncodeToString(h.Sum(nil)[:16]) + Ext
}

func tokenBytes(tokens []int) []byte {
	b := make([]byte, 4*len(tokens))
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(t)))
	}
	return b
}

// ErrTooLarge is an entry larger than the store's cap: it is not saved.
var ErrTooLarge = errors.New("larger than the prompt cache's size cap")

// BadEntryError is an entry that exists but cannot be trusted: truncated,
// corrupt, another key's or another format's.
type BadEntryError struct {
	Path, Why string
}

func (e *BadEntryError) Error() string { return "prompt cache entry " + e.Path + ": " + e.Why }

// DirError is a prompt cache directory that cannot be trusted: nothing is
// read from it.
type DirError struct {
	Dir, Why string
}

func (e *DirError) Error() string { return "prompt cache directory " + e.Dir + ": " + e.Why }

// CheckDir says whether dir may be read from: nil when it is missing (a
// save makes it, safe) or a directory of this user's that no other user
// may write; else a *DirError. Anyone who can write there could plant or
// swap entries, and a symbolic link may lead anywhere.
func CheckDir(dir string) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &DirError{dir, err.Error()}
	}
	switch m := st.Mode(); {
	case m&fs.ModeSymlink != 0:
		return &DirError{dir, "is a symbolic link"}
	case !m.IsDir():
		return &DirError{dir, "is " + filekind.Name(m) + ", not a directory"}
	case m.Perm()&0o022 != 0:
		return &DirError{dir, fmt.Sprintf("is writable by other users (mode %04o)", m.Perm())}
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return &DirError{dir, fmt.Sprintf("belongs to another user (uid %d)", sys.Uid)}
	}
	return nil
}

// openEntry opens an entry file for reading: never blocking, a regular
// file (not a symbolic link) within the store's cap, or a *BadEntryError;
// a missing one is an error wrapping fs.ErrNotExist.
func (s *Store) openEntry(path string) (*os.File, error) {
	f, err := filekind.Open(filekind.Spec{What: "prompt cache entry", Max: max(s.Max, 0), NoFollow: true}, path)
	var fe *filekind.Error
	if errors.As(err, &fe) && fe.Why() != "" {
		return nil, &BadEntryError{path, fe.Why()}
	}
	return f, err
}

// Store is a prompt cache directory with a size cap.
type Store struct {
	Dir string
	Max int64 // bytes; 0 or less: nothing is saved
}

// Path is the file of the entry for key and tokens.
func (s *Store) Path(key Key, tokens []int) string {
	return filepath.Join(s.Dir, Name(key, tokens))
}

// Frame is room a caller wants around a loaded payload: Load returns a
// buffer of Before+len(payload)+After bytes, the padding zeroed, so the
// caller can add its own framing without copying the payload again.
type Frame struct{ Before, After int }

// Load reads the entry for key and tokens into a buffer framed by f and
// marks it used. A missing entry is an error wrapping fs.ErrNotExist; one
// that cannot be trusted a *BadEntryError; a directory that cannot be
// (CheckDir) a *DirError.
func (s *Store) Load(key Key, tokens []int, f Frame) ([]byte, error) {
	if err := CheckDir(s.Dir); err != nil {
		return nil, err
	}
	path := s.Path(key, tokens)
	file, err := s.openEntry(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return nil, &BadEntryError{path, "belongs to another user"}
	}
	bad := func(format string, a ...any) ([]byte, error) {
		return nil, &BadEntryError{path, fmt.Sprintf(format, a...)}
	}
	h, hlen, err := readHeader(file)
	if err != nil {
		return bad("%v", err)
	}
	if h.Key != key {
		return bad("made for another model or settings")
	}
	if h.Tokens != len(tokens) {
		return bad("holds %d tokens, not %d", h.Tokens, len(tokens))
	}
	if want := int64(len(magic)+4+hlen) + 4*int64(h.Tokens) + h.Payload; st.Size() != want {
		return bad("%d bytes, its header says %d (truncated or overwritten)", st.Size(), want)
	}
	sum := sha256.New()
	tb := make([]byte, 4*h.Tokens)
	if _, err := io.ReadFull(file, tb); err != nil {
		return bad("reading its tokens: %v", err)
	}
	if !bytes.Equal(tb, tokenBytes(tokens)) {
		return bad("holds other tokens")
	}
	sum.Write(tb)
	buf := make([]byte, int64(f.Before)+h.Payload+int64(f.After))
	payload := buf[f.Before : int64(f.Before)+h.Payload]
	if _, err := io.ReadFull(file, payload); err != nil {
		return bad("reading its payload: %v", err)
	}
	sum.Write(payload)
	if hex.EncodeToString(sum.Sum(nil)) != h.SHA256 {
		return bad("checksum mismatch (corrupt)")
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // least recently used goes first
	return buf, nil
}

// readHeader reads the magic and the JSON header; hlen is the header's
// length in bytes.
func readHeader(r io.Reader) (h header, hlen int, err error) {
	var pre [len(magic) + 4]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return h, 0, errors.New("too short for a header (truncated)")
	}
	if string(pre[:len(magic)]) != magic {
		return h, 0, errors.New("not a prompt cache entry of this version")
	}
	n := binary.LittleEndian.Uint32(pre[len(magic):])
	if n > maxHeader {
		return h, 0, fmt.Errorf("header of %d bytes, more than %d", n, maxHeader)
	}
	hb := make([]byte, n)
	if _, err := io.ReadFull(r, hb); err != nil {
		return h, 0, errors.New("header cut short (truncated)")
	}
	dec := json.NewDecoder(bytes.NewReader(hb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, 0, fmt.Errorf("header: %v", err)
	}
	if h.Tokens < 0 || h.Payload < 0 || len(h.SHA256) != 64 {
		return h, 0, errors.New("header out of range")
	}
	return h, int(n), nil
}

// Save writes the entry for key and tokens (through a temporary file and a
// rename), then evicts least recently used entries beyond the cap. An
// entry larger than the cap is not written: ErrTooLarge.
func (s *Store) Save(key Key, tokens []int, payload []byte) error {
	tb := tokenBytes(tokens)
	sum := sha256.New()
	sum.Write(tb)
	sum.Write(payload)
	hb, err := json.Marshal(header{Key: key, Tokens: len(tokens), Payload: int64(len(payload)),
		SHA256: hex.EncodeToString(sum.Sum(nil)), Created: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	size := int64(len(magic)+4+len(hb)+len(tb)) + int64(len(payload))
	if size > s.Max {
		return ErrTooLarge
	}
	if err := s.ensureDir(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, tmpPrefix+"*"+Ext) // mode 0600
	if err != nil {
		return fmt.Errorf("prompt cache: %w", err)
	}
	pre := make([]byte, len(magic)+4)
	copy(pre, magic)
	binary.LittleEndian.PutUint32(pre[len(magic):], uint32(len(hb)))
	for _, part := range [][]byte{pre, hb, tb, payload} {
		if _, err = tmp.Write(part); err != nil {
			break
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.Path(key, tokens))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("prompt cache: %w", err)
	}
	return s.Evict()
}

// ensureDir makes the directory (0700, parents too) and refuses one that
// is not a directory of this user's; it tightens a looser mode.
func (s *Store) ensureDir() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("prompt cache: %w", err)
	}
	st, err := os.Lstat(s.Dir)
	if err != nil {
		return fmt.Errorf("prompt cache: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("prompt cache: %s is not a directory", s.Dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("prompt cache: %s belongs to another user", s.Dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(s.Dir, 0o700); err != nil {
			return fmt.Errorf("prompt cache: %w", err)
		}
	}
	return nil
}

// file is one regular file of the directory.
type file struct {
	name string
	size int64
	mod  time.Time
}

func (s *Store) files() ([]file, error) {
	des, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, err
	}
	var out []file
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, file{de.Name(), info.Size(), info.ModTime()})
	}
	return out, nil
}

// Evict removes the least recently used entries until the directory holds
// at most Max bytes, and temporary files abandoned for an hour.
func (s *Store) Evict() error {
	all, err := s.files()
	if err != nil {
		return fmt.Errorf("prompt cache: %w", err)
	}
	var entries []file
	for _, f := range all {
		switch {
		case strings.HasPrefix(f.name, tmpPrefix):
			if time.Since(f.mod) > staleTemp {
				os.Remove(filepath.Join(s.Dir, f.name))
			}
		case strings.HasSuffix(f.name, Ext):
			entries = append(entries, f)
		}
	}
	// Newest first; the entries past the cap go.
	slices.SortFunc(entries, func(a, b file) int { return b.mod.Compare(a.mod) })
	var total int64
	for _, f := range entries {
		total += f.size
		if total > s.Max {
			if err := os.Remove(filepath.Join(s.Dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("prompt cache: %w", err)
			}
		}
	}
	return nil
}

// Entry describes one file of a prompt cache directory (List).
type Entry struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	LastUsed time.Time `json:"last_used"`
	Created  time.Time `json:"created,omitzero"`
	Tokens   int       `json:"tokens"`
	Key      *Key      `json:"key,omitempty"`
	Error    string    `json:"error,omitempty"` // the file is not a readable entry
}

// List describes the entries of dir, most recently used first, from their
// headers (payloads are not checked). A missing directory has none.
func List(dir string) ([]Entry, error) {
	s := &Store{Dir: dir}
	all, err := s.files()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, f := range all {
		if !strings.HasSuffix(f.name, Ext) || strings.HasPrefix(f.name, tmpPrefix) {
			continue
		}
		e := Entry{Path: filepath.Join(dir, f.name), Size: f.size, LastUsed: f.mod}
		if h, err := readHeaderFile(e.Path); err != nil {
			e.Error = err.Error()
		} else {
			e.Created, e.Tokens, e.Key = h.Created, h.Tokens, &h.Key
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

func readHeaderFile(path string) (header, error) {
	f, err := (&Store{}).openEntry(path)
	if err != nil {
		return header{}, err
	}
	defer f.Close()
	h, _, err := readHeader(f)
	return h, err
}

// Tokens reads the token list an entry file holds (tests check what was
// persisted).
func Tokens(path string) ([]int, error) {
	f, err := (&Store{}).openEntry(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, _, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || 4*int64(h.Tokens) > st.Size() {
		return nil, errors.New("more tokens than the file holds")
	}
	tb := make([]byte, 4*h.Tokens)
	if _, err := io.ReadFull(f, tb); err != nil {
		return nil, err
	}
	out := make([]int, h.Tokens)
	for i := range out {
		out[i] = int(int32(binary.LittleEndian.Uint32(tb[4*i:])))
	}
	return out, nil
}

// Clear removes every entry and temporary file of dir and says how many
// files and bytes went. A missing directory is empty.
func Clear(dir string) (n int, size int64, err error) {
	s := &Store{Dir: dir}
	all, err := s.files()
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	for _, f := range all {
		if !strings.HasSuffix(f.name, Ext) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, f.name)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return n, size, err
		}
		n++
		size += f.size
	}
	return n, size, nil
}
