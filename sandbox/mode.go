package sandbox

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
)

// Mode is run_command's kernel sandbox (see docs/safety.md, "Sandbox").
type Mode string

const (
	// WorkspaceWrite lets commands write only inside the workspace
	// and a private temporary directory; they read and execute anywhere.
	// The zero value of tools.Env.Sandbox means this mode.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly lets commands write nowhere but /dev/null, /dev/zero
	// and /dev/full.
	ReadOnly Mode = "read-only"
	// Off applies no Landlock ruleset. Commands still run under the
	// helper that ends every process they leave behind.
	Off Mode = "off"
)

// ParseMode checks a --sandbox value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case WorkspaceWrite, ReadOnly, Off:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want workspace-write, read-only or off)", s)
}

// Minimum Landlock ABI versions for what the sandbox uses.
const (
	ABINet    = 4 // TCP bind/connect rules
	ABIScoped = 6 // signal and abstract unix socket scoping
)

// Exit codes of a command that did not run, as a shell reports them.
const (
	ExitNotFound      = 127 // command not found
	ExitCannotExecute = 126 // found but could not be started
)

// DefaultKillGrace is how long a terminated command's tree gets between
// SIGTERM and SIGKILL when the spec does not say.
const DefaultKillGrace = 500 * time.Millisecond

// helperEnabled is set by ServeHelper: this program can re-execute itself as
// the sandbox helper.
var helperEnabled atomic.Bool

// HelperEnabled reports whether ServeHelper ran in this program, so commands
// can start under the helper.
func HelperEnabled() bool { return helperEnabled.Load() }

// WaitStatusCode is the shell's exit code for a wait status: the exit
// status, or 128+N when killed by signal N.
func WaitStatusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
