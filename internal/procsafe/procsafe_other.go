//go:build !linux

package procsafe

import "golang.org/x/sys/unix"

// seal walks the descriptor table up to its soft limit (no close_range).
func seal() error {
	var rl unix.Rlimit
	limit := uint64(1024)
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1<<16 {
		limit = rl.Cur
	}
	for fd := firstSealed; uint64(fd) < limit; fd++ {
		unix.CloseOnExec(fd)
	}
	return nil
}

// notDumpable: no portable equivalent of PR_SET_DUMPABLE.
func notDumpable() error { return nil }

// hideEnviron: other systems have no /proc/PID/environ to hide from.
func hideEnviron(func(name, value string) bool) error { return nil }
