package history

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors; the errors Open and the queries return wrap them with the
// path and what is wrong, so errors.Is works and the message is one line.
var (
	// ErrNewerSchema: the database was written by a newer tact. It is left
	// untouched.
	ErrNewerSchema = errors.New("run history database has a newer schema")
	// ErrUnsafePath: the database or its directory is a symlink, is owned by
	// another user, or is readable or writable by others.
	ErrUnsafePath = errors.New("unsafe run history path")
	// ErrCorrupt: the file is not a SQLite database or is damaged.
	ErrCorrupt = errors.New("run history database is corrupt")
	// ErrNotFound: no run matches.
	ErrNotFound = errors.New("no such run")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("run history store is closed")
)

// AmbiguousError is returned by Get when a prefix matches several runs.
type AmbiguousError struct {
	Prefix string
	Count  int
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("run id prefix %q is ambiguous: %d runs match", e.Prefix, e.Count)
}

// sqliteCode is the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

func isCorrupt(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}

// classify wraps err with the path, and with ErrCorrupt when SQLite says the
// file is damaged or not a database.
func classify(path, doing string, err error) error {
	if err == nil {
		return nil
	}
	if isCorrupt(err) {
		return fmt.Errorf("%w: %s: %s: %v (move it aside to start a new history)", ErrCorrupt, path, doing, err)
	}
	switch sqliteCode(err) {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return fmt.Errorf("run history %s: %s: %w (are the file and its directory writable?)", path, doing, err)
	}
	return fmt.Errorf("run history %s: %s: %w", path, doing, err)
}
