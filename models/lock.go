package models

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// pullLock is an exclusive flock(2) on NAME.gguf.lock beside the partial
// download. The kernel drops it when the process dies, however it dies, so a
// stale lock file never blocks a later pull.
type pullLock struct {
	f    *os.File
	path string
}

// errLocked: the lock is held by another process.
var errLocked = errors.New("locked")

// lockFile takes the lock at path without waiting.
func lockFile(path string) (*pullLock, error) {
	// A holder that finishes removes the file; if that happened between our
	// open and our flock, we locked an unlinked inode and must try again.
	for range 10 {
		f, _, err := openRegular(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := flock(f); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errLocked
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, err1 := f.Stat()
		onDisk, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, onDisk) {
			return &pullLock{f: f, path: path}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("lock %s: the lock file keeps being replaced", path)
}

func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// release removes the lock file while still holding the lock (so no other
// pull can hold a lock on it), then drops the lock.
func (l *pullLock) release() {
	os.Remove(l.path)
	l.f.Close()
}
