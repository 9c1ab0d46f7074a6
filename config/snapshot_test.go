package config

import (
	"testing"
	"time"
)

func TestSnapshotRestore(t *testing.T) {
	s := Defaults()
	s.MaxIterations, s.Timeout, s.AllowTools, s.PromptCacheMax, s.Temperature = 7, 90*time.Second, []string{"read_file", "jq"}, 1<<20, 0.5
	fields := []string{"MaxIterations", "Timeout", "AllowTools", "PromptCacheMax", "Temperature", "NoSuchField"}
	snap := s.Snapshot(fields)

	got := Defaults()
	got.Temperature = 0.9 // given on the command line: kept
	if err := got.Restore(snap, fields, func(f string) bool { return f == "Temperature" }); err != nil {
		t.Fatal(err)
	}
	if got.MaxIterations != 7 || got.Timeout != 90*time.Second || len(got.AllowTools) != 2 || got.PromptCacheMax != 1<<20 || got.Temperature != 0.9 {
		t.Errorf("restored %+v", got)
	}
	// Only allowed fields are restored, whatever the snapshot holds.
	other := Defaults()
	if err := other.Restore(snap, []string{"Timeout"}, nil); err != nil || other.MaxIterations == 7 || other.Timeout != 90*time.Second {
		t.Errorf("allowed list ignored: %+v, %v", other, err)
	}
	for _, bad := range []string{`[1]`, `{"MaxIterations":"x"}`} {
		if err := Defaults().Restore([]byte(bad), fields, nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
