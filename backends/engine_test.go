package backends_test

import (
	"context"
	"fmt"
	"github.com/tactcli/tact/agent/agenttest"
	"os"
	"sync"
	"testing"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/backends"
	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/internal/testlock"
	"github.com/tactcli/tact/react"
)

// The engine's tests on the backends it opens through All (moved from
// agent, which no longer builds them).

func TestMain(m *testing.M) {
	// The tiny-model test loads llama.cpp: take turns with the other test
	// binaries that do.
	release := testlock.Hold()
	code := m.Run()
	release()
	os.Exit(code)
}

// The same on the generated tiny model: concurrent jobs on one loaded
// model end with proper termination reasons.
func TestConcurrentJobsOnTinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a model")
	}
	s := agenttest.Settings(t, "")
	s.Model = synth.Cached(t, synth.Tiny)
	s.CtxSize, s.NoPlan, s.MaxIterations, s.Seed = 6144, true, 3, 1
	rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "batch", Backends: backends.All})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := rt.Run(context.Background(), agent.Job{Query: fmt.Sprintf("list the files %d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			switch res.TerminationReason {
			case react.ReasonSuccess, react.ReasonFailure, react.ReasonMaxIterations, react.ReasonStalled:
			default:
				t.Errorf("job %d: %s: %s", i, res.TerminationReason, res.Message)
			}
		}()
	}
	wg.Wait()
}
