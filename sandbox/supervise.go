package sandbox

import (
	"errors"
	"syscall"
	"time"
)

// ProcessGroup supervises a process group tact started in a group (or
// session) of its own: its id is the leader's pid. Tool commands
// (tools.runProcess), the user's programs (RunProgram: hooks, approval
// commands) and MCP servers (mcp) are all ended through it.
type ProcessGroup int

// Alive reports whether any process is in the group. Once the leader is
// reaped a group id is not reused while the group has members, so a
// signal-0 probe is reliable.
func (g ProcessGroup) Alive() bool { return syscall.Kill(-int(g), 0) == nil }

// Kill sends SIGKILL to every process in the group.
func (g ProcessGroup) Kill() { _ = syscall.Kill(-int(g), syscall.SIGKILL) }

// Ending is how Stop ends a group.
type Ending struct {
	// Signal is sent first (SIGTERM; SIGUSR1 asks a sandbox helper to
	// SIGKILL its command's tree at once).
	Signal syscall.Signal
	// Leader sends Signal to the leader alone: a sandbox helper ends its
	// command's whole tree itself (escaped processes included).
	Leader bool
	// Grace is how long the group may take before SIGKILL.
	Grace time.Duration
	// Gone closes when the leader has been reaped; nil: wait for the whole
	// group to empty.
	Gone <-chan struct{}
}

// pollEvery is how often Stop looks whether a group without a Gone
// channel has emptied.
const pollEvery = 10 * time.Millisecond

// Stop ends the group: e.Signal, then up to e.Grace for it to end (Gone
// closed, else the group empty), then SIGKILL to whatever is left of the
// group. It returns once the SIGKILL, if any, is sent.
func (g ProcessGroup) Stop(e Ending) {
	target := -int(g)
	if e.Leader {
		target = int(g)
	}
	if err := syscall.Kill(target, e.Signal); errors.Is(err, syscall.ESRCH) && !e.Leader {
		return // nothing left in the group
	}
	if e.Gone != nil {
		select {
		case <-e.Gone:
			return
		case <-time.After(e.Grace):
		}
		g.Kill()
		return
	}
	deadline := time.Now().Add(e.Grace)
	for time.Now().Before(deadline) {
		if !g.Alive() {
			return
		}
		time.Sleep(pollEvery)
	}
	g.Kill()
}
