//go:build !linux

package hooks

import "syscall"

// procAttr starts a hook in a session of its own: no controlling terminal,
// and its own process group, killed whole at the timeout.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
