// Package testwait is the one poll of tact's tests: they wait on a state
// (a file, a process, a server's answer), never for a fixed time, and
// with a generous bound, as a busy 2-core machine is slow.
package testwait

import "time"

// Until calls cond until it holds, and reports whether it did before d
// passed. The pause between calls is the only sleep, and it stands for
// nothing: a state that is reached ends the wait at once.
func Until(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return cond()
		}
	}
	return true
}
