package history

import (
	"errors"
	"testing"
)

// TestClaimAnswer: one claim on a run at a time, even within one process
// (two descriptors: tact serve answering twice at once); other runs are
// free; a released claim can be taken again.
func TestClaimAnswer(t *testing.T) {
	s := openTest(t, Options{})
	release, err := s.ClaimAnswer("run-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimAnswer("run-a"); !errors.Is(err, ErrClaimed) {
		t.Fatalf("second claim: %v, want ErrClaimed", err)
	}
	other, err := s.ClaimAnswer("run-b")
	if err != nil {
		t.Fatalf("another run's claim: %v", err)
	}
	other()
	release()
	release() // twice is fine
	again, err := s.ClaimAnswer("run-a")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	again()
}
