package mcp

import "syscall"

// procAttr puts a stdio server in its own process group (so it and its
// children can be ended together) and has the kernel kill it if tact dies
// without closing it (SIGKILL, a crash).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
