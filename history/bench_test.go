package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The List benchmarks share one database of benchRuns runs with 5 steps
// each, built once per test binary.
const benchRuns = 10000

var bench struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func cleanupBench() {
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
}

func benchStore(b *testing.B) *Store {
	b.Helper()
	bench.once.Do(func() {
		if bench.dir, bench.err = os.MkdirTemp("", "history-bench"); bench.err != nil {
			return
		}
		bench.path = filepath.Join(bench.dir, "runs.db")
		s, err := Open(bench.path, Options{Buffer: 1 << 17})
		if err != nil {
			bench.err = err
			return
		}
		obs := strings.Repeat("output line of a command ", 20)
		for i := range benchRuns {
			rec := s.Begin(Run{ID: fmt.Sprintf("run-%05d", i), Command: "run", Workspace: fmt.Sprintf("/w%d", i%10),
				Query: fmt.Sprintf("task number %d", i), StartedAt: at(time.Duration(i) * time.Minute)})
			for j := range 5 {
				o := obs
				if i%100 == 0 && j == 3 {
					o += " rareword"
				}
				rec.Step(Step{Index: j, Thought: "I should look at the files", Tool: "run", Args: `{"cmd":"ls -l"}`, Observation: o})
			}
			reason := "answered"
			if i%7 == 0 {
				reason = "timeout"
			}
			rec.End(Final{Answer: "done", Reason: reason})
			if i%1000 == 999 {
				if bench.err = s.Flush(context.Background()); bench.err != nil {
					return
				}
			}
		}
		if bench.err = s.Flush(context.Background()); bench.err == nil {
			bench.err = s.Close()
		}
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	s, err := Open(bench.path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkList: tact log's listing of the newest 20 runs among 10,000.
func BenchmarkList(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	tests := []struct {
		name   string
		filter Filter
	}{
		{"newest20", Filter{}},
		{"workspace+reason", Filter{Workspace: "/w3", Reason: "timeout"}},
		{"since", Filter{Since: at(benchRuns * time.Minute / 2)}},
		{"query-rare", Filter{Query: "rareword"}},     // in 1% of runs' observations
		{"query-common", Filter{Query: "look files"}}, // in every run
		{"query-absent", Filter{Query: "nosuchword"}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				runs, err := s.List(ctx, tt.filter)
				if err != nil {
					b.Fatal(err)
				}
				n = len(runs)
			}
			b.ReportMetric(float64(n), "runs")
		})
	}
}

// BenchmarkRecorderStep: what Recorder.Step costs its caller (the write
// itself happens on the writer goroutine).
func BenchmarkRecorderStep(b *testing.B) {
	s := openTest(b, Options{Buffer: 1 << 20})
	rec := s.Begin(Run{ID: "bench"})
	step := Step{Thought: "think", Tool: "run", Args: `{"cmd":"ls"}`, Observation: strings.Repeat("x", 500)}
	i := 0
	for b.Loop() {
		step.Index = i
		i++
		rec.Step(step)
	}
	b.StopTimer()
	b.ReportMetric(float64(s.Dropped().Steps), "dropped")
}

// BenchmarkWriterThroughput: steps written and committed per second.
func BenchmarkWriterThroughput(b *testing.B) {
	s := openTest(b, Options{Buffer: 1 << 20})
	rec := s.Begin(Run{ID: "bench"})
	step := Step{Thought: "think", Tool: "run", Args: `{"cmd":"ls"}`, Observation: strings.Repeat("observed ", 50)}
	i := 0
	start := time.Now()
	for b.Loop() {
		step.Index = i
		i++
		rec.Step(step)
	}
	if err := s.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(i)/time.Since(start).Seconds(), "steps/s")
	b.ReportMetric(float64(s.Dropped().Steps), "dropped")
}
