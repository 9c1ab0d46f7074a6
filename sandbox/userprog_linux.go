package sandbox

import "syscall"

// programProcAttr starts a user's program in a session of its own (no
// controlling terminal; its own process group, killed whole) that dies
// with tact.
func programProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
