//go:build !linux

package sandbox

import "syscall"

// programProcAttr starts a user's program in a session of its own: no
// controlling terminal, and its own process group, killed whole.
func programProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
