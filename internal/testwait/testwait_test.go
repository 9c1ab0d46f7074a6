package testwait

import (
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	n := 0
	if !Until(time.Minute, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("a condition met on the third call: Until stopped after %d calls", n)
	}
	if Until(time.Millisecond, func() bool { return false }) {
		t.Error("a condition never met: Until reported it held")
	}
}
