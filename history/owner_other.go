//go:build !unix

package history

import (
	"io/fs"
	"os"
	"time"
)

const noFollow = 0

// checkOwner has no owner to compare on this platform.
func checkOwner(string, fs.FileInfo) error { return nil }

// lockDir has no flock here: processes opening a new database at once rely
// on SQLite's locking alone.
func lockDir(string, time.Duration) (release func()) { return func() {} }

// tryLock has no flock here: an answer's claim always succeeds, and the
// run history's check that nobody answered the run is all there is.
func tryLock(*os.File) error { return nil }
