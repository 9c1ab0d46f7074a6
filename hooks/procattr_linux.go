package hooks

import "syscall"

// procAttr starts a hook in a session of its own: no controlling terminal
// (it cannot read the user's keyboard or stop the run with SIGTTIN), and
// its own process group, killed whole at the timeout. It also dies with
// tact.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
