package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/otlptest"
)

// The cost of telemetry per step: a 20-step tact exec with traces and
// metrics sent to a real OpenTelemetry Collector on loopback (the test
// collector, file exporter), and to the loopback fake receiver
// (internal/otlptest), against the same with telemetry off, alternated in
// one run, the medians compared. A figure, not a check: it runs only with
// TACT_TELEMETRY_FIGURE=1 (docs/telemetry.md quotes it).
//
//	TACT_TELEMETRY_FIGURE=1 go test ./cmd/tact -run TestTelemetryCostFigure -v
func TestTelemetryCostFigure(t *testing.T) {
	if os.Getenv("TACT_TELEMETRY_FIGURE") == "" {
		t.Skip("a figure: set TACT_TELEMETRY_FIGURE=1")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	var plan strings.Builder
	plan.WriteString(`{"type":"plan","query":"read nineteen files"}` + "\n")
	for i := 1; i < 20; i++ {
		os.WriteFile(filepath.Join(dir, "ws", fmt.Sprintf("f%d.txt", i)), []byte("a line\n"), 0o644)
		fmt.Fprintf(&plan, `{"type":"step","step":%d,"thought":"read the next file","tool":"read_file","args":{"path":"f%d.txt"}}`+"\n", i, i)
	}
	plan.WriteString(`{"type":"step","step":20,"thought":"answer from the reads","tool":"final_answer","args":{"answer":"read"}}` + "\n")
	os.WriteFile(filepath.Join(dir, "plan.jsonl"), []byte(plan.String()), 0o644)
	real := startCollector(t, dir)
	fake := otlptest.New(t, 200)
	variants := []struct {
		name string
		env  []string
		took []time.Duration
	}{
		{"off", nil, nil},
		{"real collector", real.env, nil},
		{"fake receiver", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + fake.URL}, nil},
	}
	const rounds = 15
	for range rounds {
		for i := range variants {
			v := &variants[i]
			start := time.Now()
			if code, _, stderr := tactWith(t, dir, v.env, "exec", "--no-history", "--workspace", "ws", "--max-iterations", "25", "plan.jsonl"); code != 0 || strings.Contains(stderr, "telemetry") {
				t.Fatalf("%s: exit %d: %s", v.name, code, stderr)
			}
			v.took = append(v.took, time.Since(start))
		}
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	off := median(variants[0].took)
	spans, metrics := real.stop(t)
	t.Logf("20-step tact exec, median of %d alternated runs: telemetry off %s", rounds, off.Round(10*time.Microsecond))
	for _, v := range variants[1:] {
		on := median(v.took)
		t.Logf("  on, %s: %s: %+.2f ms a step", v.name, on.Round(10*time.Microsecond), float64(on-off)/float64(time.Millisecond)/20)
	}
	// A saved plan calls no model: no metric values, only the spans.
	t.Logf("the real collector exported %d spans (%d metric values), the fake receiver got %d", len(spans),
		metrics["gen_ai.client.operation.duration"], len(fake.Spans()))
	if len(spans) != rounds*20 {
		t.Errorf("the real collector exported %d spans, want %d (a run and its 19 reads a round)", len(spans), rounds*20)
	}
}
