package exec

import (
	"sync"
	"syscall"
)

// liveGroups holds the process groups of running commands, so that an
// immediate exit (a second Ctrl-C) can still leave no child behind.
var liveGroups sync.Map // pgid -> bool: the group's leader is a sandbox helper

func trackGroup(pgid int, helper bool) { liveGroups.Store(pgid, helper) }
func untrackGroup(pgid int)            { liveGroups.Delete(pgid) }

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
	trackGroup(pgid, false)
	return func() { untrackGroup(pgid) }
}
