//go:build unix

package history

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
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
