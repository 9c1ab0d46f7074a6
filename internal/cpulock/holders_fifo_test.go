package cpulock

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// A FIFO where a slot file should be (planted in the lock directory) is
// skipped when the holders are listed, not waited on in open(2).
func TestHoldersSkipAFIFOSlot(t *testing.T) {
	l := open(t, 2)
	path := l.slotPath(1)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []int, 1)
	go func() { done <- l.holders() }()
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Fatalf("holders %v, want none", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("holders blocked on a FIFO slot")
	}
}
