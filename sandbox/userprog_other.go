//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// programProcAttr starts a user's program in a session of its own: no
// controlling terminal, and its own process group, killed whole.
func programProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// startProgramHelper is never called: the helper needs Linux.
func startProgramHelper(Program, [3]*os.File) (*startedProgram, error) {
	return nil, errors.New("the sandbox helper needs Linux")
}
