package sandbox

import (
	"sync"
	"syscall"
)

// liveGroups holds the process groups of running commands, so that an
// immediate exit (a second Ctrl-C) can still leave no child behind.
var liveGroups sync.Map // pgid -> bool: the group's leader is a sandbox helper

// TrackGroup registers the process group of a running command (helper: its
// leader is a sandbox helper) so that KillRunning ends it; untrack forgets
// it once the command is over.
func TrackGroup(pgid int, helper bool) (untrack func()) {
	liveGroups.Store(pgid, helper)
	return func() { liveGroups.Delete(pgid) }
}

// KillRunning ends every command still running at once: a sandbox helper
// gets SIGUSR1, on which it SIGKILLs the command's whole tree (escaped
// processes included) without the grace period and exits; a command started
// without the helper gets SIGKILL for its process group. It does not wait,
// so call it just before exiting without the normal cancellation path.
func KillRunning() {
	liveGroups.Range(func(k, v any) bool {
		if v.(bool) {
			_ = syscall.Kill(k.(int), syscall.SIGUSR1)
		} else {
			_ = syscall.Kill(-k.(int), syscall.SIGKILL)
		}
		return true
	})
}

// TrackProcessGroup registers a process group started outside this package
// (an MCP server) so that KillRunning ends it too; untrack forgets it.
func TrackProcessGroup(pgid int) (untrack func()) {
	return TrackGroup(pgid, false)
}
