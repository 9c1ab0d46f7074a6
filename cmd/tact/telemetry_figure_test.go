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

// The cost of telemetry per step: a 20-step tact exec with traces sent to
// a loopback collector against the same with telemetry off, alternated in
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
	col := otlptest.New(t, 200)
	on := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL}
	const rounds = 15
	var off, with []time.Duration
	for range rounds {
		for _, env := range [][]string{nil, on} {
			start := time.Now()
			if code, _, stderr := tactWith(t, dir, env, "exec", "--no-history", "--workspace", "ws", "--max-iterations", "25", "plan.jsonl"); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if env == nil {
				off = append(off, time.Since(start))
			} else {
				with = append(with, time.Since(start))
			}
		}
	}
	slices.Sort(off)
	slices.Sort(with)
	mo, mw := off[rounds/2], with[rounds/2]
	t.Logf("20-step tact exec, median of %d: telemetry off %s, on (loopback collector) %s: %+.2f ms a step; %d spans received",
		rounds, mo.Round(10*time.Microsecond), mw.Round(10*time.Microsecond), float64(mw-mo)/float64(time.Millisecond)/20, len(col.Spans()))
}
