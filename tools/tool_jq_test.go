package tools

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/jqx/jqxtest"
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

// Regression: the filter was parsed and compiled in tact's own process, so
// 200,000 nested parentheses grew tact by 590 MB and 500,000 "[" killed it
// with a stack overflow. Every deep shape is refused above the size limit
// with one line naming the filter by an excerpt; long filters under it
// compile in a child and run.
func TestJqFilterBounds(t *testing.T) {
	env, _ := twLayout(t)
	for _, tc := range []struct {
		name, filter string
	}{
		{"200k parentheses", strings.Repeat("(", 200_000) + "." + strings.Repeat(")", 200_000)},
		{"500k brackets", strings.Repeat("[", 500_000) + strings.Repeat("]", 500_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := twRun(t, Jq{}, env, m{"filter": tc.filter, "input": "null"})
			want := `jq: bad filter "` + tc.filter[:60] + `"... (` + strconv.Itoa(len(tc.filter)) + ` bytes): filter is ` + strconv.Itoa(len(tc.filter)) + ` bytes, over the 32768-byte limit`
			if res.Err == nil || res.Err.Error() != want {
				t.Fatalf("Err = %v\nwant %s", res.Err, want)
			}
		})
	}
	for _, sh := range jqxtest.Shapes {
		filter := sh.OfLength(40_000)
		res := twRun(t, Jq{}, env, m{"filter": filter, "input": "null"})
		if res.Err == nil || !strings.HasSuffix(res.Err.Error(), "bytes, over the 32768-byte limit") || strings.Contains(res.Err.Error(), "\n") {
			t.Fatalf("%s: Err = %v", sh.Name, res.Err)
		}
	}
	// Under the limit a long filter (compiled in the child) still runs.
	res := twRun(t, Jq{}, env, m{"filter": "1" + strings.Repeat("+1", 8000), "input": "null"})
	if res.Err != nil || res.Output != "8001\n" {
		t.Fatalf("got %q, %v", res.Output, res.Err)
	}
	res = twRun(t, Jq{}, env, m{"filter": strings.Repeat(" ", 8000) + ".[", "input": "null"})
	if res.Err == nil || !strings.HasPrefix(res.Err.Error(), `jq: bad filter "      `) || !strings.HasSuffix(res.Err.Error(), "(8002 bytes): unexpected EOF") {
		t.Fatalf("Err = %v", res.Err)
	}
}
