//go:build unix

package history

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

const noFollow = syscall.O_NOFOLLOW

// checkOwner refuses a file or directory another user owns: they could read
// or replace the history.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d)", ErrUnsafePath, path, st.Uid, uid)
	}
	return nil
}

// lockDir takes an exclusive flock on dir, waiting up to wait, and returns
// its release. Open holds it while it creates, converts to WAL and migrates
// a database: a new database is in rollback-journal mode until then, where
// SQLite answers some lock conflicts with SQLITE_BUSY without waiting, so
// processes opening a new database at once take turns instead. (The
// directory, not the database: closing any descriptor of the database file
// would drop this process's SQLite locks on it.) When the lock cannot be
// had, Open goes on without it.
func lockDir(dir string, wait time.Duration) (release func()) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	deadline := time.Now().Add(wait)
	backoff := time.Millisecond
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() } // closing releases the flock
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR || time.Now().After(deadline) {
			f.Close()
			return func() {}
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// tryLock takes an exclusive flock on f without waiting: ErrClaimed when
// another descriptor holds it.
func tryLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case err == syscall.EWOULDBLOCK:
			return ErrClaimed
		case err != syscall.EINTR:
			return fmt.Errorf("run history: answer lock: %v", err)
		}
	}
}
