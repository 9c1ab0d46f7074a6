package exec

import (
	"strings"
	"testing"
	"time"
)

// Regression: the jq tool was bounded in time but not in memory ("x" *
// 1000000000 grew tact to 2 GB), and its input argument had no size cap
// while a file was capped at the read cap.
func TestJqBounds(t *testing.T) {
	env, _ := twLayout(t)
	tests := []struct {
		name    string
		args    m
		wantErr string
	}{
		{"string repetition", m{"filter": `"x" * 1000000000`, "input": "null"}, "jq: evaluation exceeded 256 MiB"},
		{"growing array", m{"filter": `[range(1e9)]`, "input": "null"}, "jq: evaluation exceeded 256 MiB"},
		{"sparse array", m{"filter": `.[500000000] = 1`, "input": "null"}, "jq: evaluation exceeded 256 MiB"},
		{"input over the read cap", m{"filter": ".", "input": `"` + strings.Repeat("a", DefaultReadCap) + `"`}, "jq: input is larger than the read cap of 8388608 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res := twRun(t, Jq{}, env, tc.args)
			if res.Err == nil || res.Err.Error() != tc.wantErr {
				t.Fatalf("Err = %v, want %q", res.Err, tc.wantErr)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
	env.ToolTimeout = 300 * time.Millisecond
	res := twRun(t, Jq{}, env, m{"filter": "def f: f; f", "input": "null"})
	if res.Err == nil || res.Err.Error() != "jq: evaluation exceeded 300ms" {
		t.Fatalf("Err = %v", res.Err)
	}
}
