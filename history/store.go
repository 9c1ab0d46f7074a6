// Package history is tact's run store: every run (run, exec, a batch query,
// a chat turn, a serve run) is kept as a record in a SQLite database, written
// off the run's critical path by a Recorder and read back by `tact log`.
//
// The store keeps what it is given: callers pass redacted text only. See
// docs/history.md for the schema, retention, concurrency and durability.
package history

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver (FTS5 built in)
)

// Defaults for Options' zero values.
const (
	DefaultFlushTimeout = 2 * time.Second
	DefaultBusyTimeout  = 5 * time.Second
	DefaultBuffer       = 4096
)

// Options tune a Store. The zero value is usable.
type Options struct {
	// Warn receives the first store error met while writing (disk full,
	// read-only, locked beyond the busy timeout, corrupt), once; the store
	// then stops writing. Non-fatal problems (a duplicate run id) are
	// reported too. Nil discards them. Warn is called from the writer
	// goroutine and must not block for long.
	Warn func(error)
	// FlushTimeout bounds how long Close waits for queued records.
	FlushTimeout time.Duration
	// BusyTimeout is how long a statement waits for another process's lock.
	BusyTimeout time.Duration
	// Buffer is how many recorder operations may be queued before the
	// recorder drops trace events (at 3/4 full), then steps.
	Buffer int
	// Now is the clock for MaybePrune, Prune and zero start/end times;
	// default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.FlushTimeout <= 0 {
		o.FlushTimeout = DefaultFlushTimeout
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Store is an open run history database. Its methods are safe for concurrent
// use; a nil *Store records nothing (Begin returns a no-op Recorder) so a
// caller whose store failed to open can carry on.
type Store struct {
	path string
	db   *sql.DB
	opts Options

	ops        chan op
	stopping   chan struct{} // closed by Close: the writer drains and exits
	writerDone chan struct{}
	writeCtx   context.Context
	cancelW    context.CancelFunc

	closed     atomic.Bool
	closeMu    sync.Mutex
	closingErr error                 // set by the writer before it exits, read by Close after
	fatal      atomic.Pointer[error] // the error that stopped writing
	warnOnce   sync.Once
	drops      dropCounters
}

// DefaultPath is $XDG_STATE_HOME/tact/runs.db, else
// ~/.local/state/tact/runs.db. A relative XDG_STATE_HOME is ignored, as the
// XDG Base Directory spec says.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "tact", "runs.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", fmt.Errorf("run history: no state directory: set XDG_STATE_HOME or HOME")
	}
	return filepath.Join(home, ".local", "state", "tact", "runs.db"), nil
}

// Open opens (creating when missing) the run history database at path and
// migrates it to the current schema. The directory is created 0700 and the
// file 0600; either being a symlink, owned by another user or open to others
// is refused with ErrUnsafePath. A database from a newer schema is refused
// with ErrNewerSchema and left untouched; a damaged file with ErrCorrupt.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("run history: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("run history %s: %w", path, err)
	}
	opts = opts.withDefaults()
	if err := prepareDir(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	release := lockDir(filepath.Dir(abs), 2*opts.BusyTimeout)
	defer release()
	if err := prepareFile(abs); err != nil {
		return nil, err
	}
	// Read the schema version read-only first: switching to WAL or
	// migrating would write to a database a newer tact owns.
	if err := probe(abs, opts.BusyTimeout); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(abs, opts.BusyTimeout, false))
	if err != nil {
		return nil, classify(abs, "open", err)
	}
	// A few connections: the writer holds one, readers share the rest.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	ctx, cancel := context.WithTimeout(context.Background(), 4*opts.BusyTimeout)
	defer cancel()
	if err := migrate(ctx, db, len(migrations), opts.BusyTimeout); err != nil {
		db.Close()
		return nil, classify(abs, "migrate", err)
	}
	s := &Store{
		path:       abs,
		db:         db,
		opts:       opts,
		ops:        make(chan op, opts.Buffer),
		stopping:   make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	s.writeCtx, s.cancelW = context.WithCancel(context.Background())
	go s.writer()
	return s, nil
}

// OpenBestEffort is Open for callers that run anyway: when the store cannot
// be opened it reports the error through opts.Warn and returns nil, whose
// Recorders accept every call and record nothing.
func OpenBestEffort(path string, opts Options) *Store {
	s, err := Open(path, opts)
	if err != nil {
		if opts.Warn != nil {
			opts.Warn(err)
		}
		return nil
	}
	return s
}

// Path is the database file's absolute path.
func (s *Store) Path() string {
	if s == nil {
		return ""
	}
	return s.path
}

// Err is the error that stopped the store writing, or nil.
func (s *Store) Err() error {
	if s == nil {
		return nil
	}
	if p := s.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// Close flushes the queued records, waiting at most Options.FlushTimeout,
// and closes the database. What is still queued then is lost (and said so in
// the error). Close is idempotent.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stopping)
	var flushErr error
	timer := time.NewTimer(s.opts.FlushTimeout)
	defer timer.Stop()
	select {
	case <-s.writerDone:
		flushErr = s.closingErr
	case <-timer.C:
		lost := len(s.ops)
		s.cancelW() // interrupts the statement in progress
		select {
		case <-s.writerDone:
		case <-time.After(s.opts.FlushTimeout):
			// Still stuck (in a system call?): close regardless; the
			// writer's next statement fails on the closed database.
		}
		flushErr = fmt.Errorf("run history %s: flush did not finish in %s; about %d queued records lost", s.path, s.opts.FlushTimeout, lost)
	}
	s.cancelW()
	if err := s.db.Close(); err != nil && flushErr == nil {
		flushErr = fmt.Errorf("run history %s: close: %w", s.path, err)
	}
	return flushErr
}

// dsn is the driver's connection string: an escaped file: URI (so any byte
// in the path is literal) with the pragmas every connection needs.
func dsn(path string, busy time.Duration, readOnly bool) string {
	u := url.URL{Scheme: "file", Path: path}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	if readOnly {
		q.Set("mode", "ro")
	} else {
		// auto_vacuum before the first table exists lets Prune give pages
		// back; WAL lets readers run beside the writer; NORMAL sync in WAL
		// is durable against a killed process (not a power cut) at far less
		// fsync cost; immediate transactions take the write lock at BEGIN,
		// where the busy timeout applies, instead of failing at the first
		// write with SQLITE_BUSY.
		q.Set("_auto_vacuum", "INCREMENTAL")
		q.Set("_journal_mode", "WAL")
		q.Set("_synchronous", "NORMAL")
		q.Set("_foreign_keys", "1")
		q.Set("_txlock", "immediate")
	}
	return u.String() + "?" + q.Encode()
}

// probe reads the schema version without writing and refuses a newer one.
// Without a WAL file the version is the file header's: even a read-only
// SQLite connection to a WAL database would create the -wal and -shm files.
// With one (a writer is running, or was killed) the newest version may be in
// the WAL, so SQLite reads it, read-only.
func probe(path string, busy time.Duration) error {
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		v, err := headerVersion(path)
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return newerSchemaError(path, v)
		}
		return nil
	}
	db, err := sql.Open("sqlite", dsn(path, busy, true))
	if err != nil {
		return classify(path, "open", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*busy)
	defer cancel()
	v, err := userVersion(ctx, db)
	if err != nil {
		return classify(path, "read schema version", err)
	}
	if v > len(migrations) {
		return newerSchemaError(path, v)
	}
	return nil
}

// headerVersion is the user_version in the database file's header (0 for
// an empty file): https://www.sqlite.org/fileformat.html#the_database_header
func headerVersion(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("run history %s: %w", path, err)
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return 0, nil // a new, empty database
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return 0, fmt.Errorf("run history %s: %w", path, err)
	case n < len(h) || string(h[:16]) != "SQLite format 3\x00":
		return 0, fmt.Errorf("%w: %s: not a SQLite database (move it aside to start a new history)", ErrCorrupt, path)
	}
	// The fixed fields: a power-of-two page size from 512 to 65536 (1
	// means 65536) and the payload fractions 64, 32, 32.
	ps := int(binary.BigEndian.Uint16(h[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 || h[21] != 64 || h[22] != 32 || h[23] != 32 {
		return 0, fmt.Errorf("%w: %s: damaged database header (move it aside to start a new history)", ErrCorrupt, path)
	}
	return int(binary.BigEndian.Uint32(h[60:64])), nil
}

func newerSchemaError(path string, v int) error {
	return fmt.Errorf("%w: %s has schema %d, this tact knows up to %d (upgrade tact or set another history path)", ErrNewerSchema, path, v, len(migrations))
}

// prepareDir creates dir 0700 when missing and refuses it when it is a
// symlink, not a directory, another user's, or open to group or others.
func prepareDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("run history directory %s: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("run history directory %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: directory %s is a symlink", ErrUnsafePath, dir)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafePath, dir)
	}
	if err := checkOwner(dir, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: directory %s has mode %04o, want 0700 (chmod 700 %s)", ErrUnsafePath, dir, perm, dir)
	}
	return nil
}

// prepareFile creates path 0600 when missing (never through a symlink) and
// refuses an existing one that is a symlink, not a regular file, another
// user's, or open to group or others.
func prepareFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err == nil {
		if err := f.Close(); err != nil {
			return fmt.Errorf("run history %s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("run history %s: create: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("run history %s: %w", path, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink", ErrUnsafePath, path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafePath, path)
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %04o, want 0600 (chmod 600 %s)", ErrUnsafePath, path, perm, path)
	}
	return nil
}
