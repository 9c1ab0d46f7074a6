package sandbox

import "testing"

// MCP process groups registered with TrackProcessGroup are ended by
// KillRunning (tact's second Ctrl-C) and can be forgotten again.
func TestTrackProcessGroup(t *testing.T) {
	untrack := TrackProcessGroup(424242)
	if v, ok := liveGroups.Load(424242); !ok || v.(bool) {
		t.Fatalf("group not tracked as a plain group: %v %v", v, ok)
	}
	untrack()
	if _, ok := liveGroups.Load(424242); ok {
		t.Fatal("group still tracked")
	}
}
