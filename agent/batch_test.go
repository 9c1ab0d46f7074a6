package agent

import (
	"context"
	"fmt"
	"github.com/tactcli/tact/agent/agenttest"
	"strings"
	"sync"
	"testing"

	"github.com/tactcli/tact/llm"
)

// inflight counts a backend's calls running at once; it serves n at a time.
type inflight struct {
	llm.Backend
	n          int
	mu         sync.Mutex
	now, peak  int
	totalCalls int
}

func (b *inflight) Concurrency() int { return b.n }

func (b *inflight) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	b.mu.Lock()
	b.now++
	b.totalCalls++
	b.peak = max(b.peak, b.now)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.now--
		b.mu.Unlock()
	}()
	return b.Backend.Complete(ctx, req)
}

// A batch runs up to --parallel queries at once, but never more than the
// backend serves at once (llm.Concurrent).
func TestRunBatchAsksTheBackendsConcurrency(t *testing.T) {
	const queries = 8
	action := `{"kind":"action","delay_ms":100,"text":"{\"thought\":\"answer right away now\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"done\"}}"}` + "\n"
	for _, tc := range []struct {
		name        string
		parallel    int
		concurrency int
		maxPeak     int
		minPeak     int
	}{
		{"capped by the backend", 8, 2, 2, 1},
		{"unbounded backend: --parallel", 4, llm.Unbounded, 4, 3},
		{"one at a time", 1, llm.Unbounded, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := agenttest.Settings(t, strings.Repeat(action, queries))
			s.NoPlan = true
			rt, err := Open(context.Background(), s, Options{Mode: "batch"})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			b := &inflight{Backend: rt.Backend, n: tc.concurrency}
			rt.Backend = b
			if rt.Concurrency() != tc.concurrency {
				t.Fatalf("Concurrency() = %d", rt.Concurrency())
			}
			var in strings.Builder
			for i := range queries {
				fmt.Fprintf(&in, "question %d\n", i)
			}
			var mu sync.Mutex
			done := 0
			counts, err := rt.RunBatch(context.Background(), strings.NewReader(in.String()), BatchOptions{Parallel: tc.parallel},
				func(r BatchResult) error {
					mu.Lock()
					defer mu.Unlock()
					if !r.Succeeded() {
						t.Errorf("line %d: %+v %v", r.Query.Line, r.Result, r.Err)
					}
					done++
					return nil
				})
			if err != nil || counts.Done != queries || done != queries || b.totalCalls != queries {
				t.Fatalf("counts %+v, reported %d, calls %d, err %v", counts, done, b.totalCalls, err)
			}
			if b.peak > tc.maxPeak || b.peak < tc.minPeak {
				t.Fatalf("%d calls at once; want %d to %d", b.peak, tc.minPeak, tc.maxPeak)
			}
		})
	}
}
