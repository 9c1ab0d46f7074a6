//go:build unix

package atomicfile

import (
	"io/fs"
	"syscall"
)

// owner is fi's owner's uid.
func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
