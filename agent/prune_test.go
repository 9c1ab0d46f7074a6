package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/agent/agenttest"
	"github.com/tactcli/tact/history"
)

// TestServersPrunePeriodically: a runtime that stays open (tact serve,
// tact mcp serve) prunes its history again while it runs, not only when it
// opened.
func TestServersPrunePeriodically(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	old := pruneEvery
	pruneEvery = 20 * time.Millisecond
	defer func() { pruneEvery = old }()
	s := agenttest.Settings(t, agenttest.AnswerPlan+"\n")
	s.HistoryMaxSize = 256 << 10
	rt, err := Open(context.Background(), s, Options{Mode: "serve", History: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// Another process records 2 MB of runs while the server runs.
	other, err := history.Open(filepath.Join(state, "tact", "runs.db"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("some observed output ", 500)
	for i := range 200 {
		rec := other.Begin(history.Run{ID: fmt.Sprintf("r%03d", i)})
		rec.Step(history.Step{Index: 0, Observation: fmt.Sprintf("%d %s", i, text)})
		rec.End(history.Final{Reason: "answered"})
	}
	if err := other.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		recs, err := other.List(context.Background(), history.Filter{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) < 200 {
			break // pruned
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs left: the server did not prune while it ran", len(recs))
		}
	}
	other.Close()
}
