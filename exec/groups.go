package exec

import (
	"sync"
	"syscall"
)

// liveGroups holds the process groups of running commands, so that an
// immediate exit (a second Ctrl-C) can still leave no child behind.
var liveGroups sync.Map // pgid -> struct{}

func trackGroup(pgid int)   { liveGroups.Store(pgid, struct{}{}) }
func untrackGroup(pgid int) { liveGroups.Delete(pgid) }

// KillRunning sends SIGKILL to the process group of every command still
// running. Call it before exiting without the normal cancellation path.
func KillRunning() {
	liveGroups.Range(func(k, _ any) bool {
		_ = syscall.Kill(-k.(int), syscall.SIGKILL)
		return true
	})
}
