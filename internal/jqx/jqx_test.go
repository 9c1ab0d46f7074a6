package jqx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEval(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		req  Request
		want []string
		err  string
		cut  bool
		halt bool
	}{
		{name: "stream", req: Request{Expr: ".a", Input: []byte(`{"a":1} {"a":"x"}`)}, want: []string{`1`, `"x"`}},
		{name: "big numbers survive", req: Request{Expr: ".", Input: []byte(`123456789012345678901234567890`)}, want: []string{`123456789012345678901234567890`}},
		{name: "variables", req: Request{Expr: "$state.n + .", Vars: []string{"$state"}, VarValues: []json.RawMessage{[]byte(`{"n":2}`)}, Input: []byte(`3`)}, want: []string{`5`}},
		{name: "first result only", req: Request{Expr: "range(10)", Input: []byte(`null`), MaxResults: 1}, want: []string{`0`}},
		{name: "output cap", req: Request{Expr: "range(100000)", Input: []byte(`null`), MaxOutput: 20}, want: strings.Fields("0 1 2 3 4 5 6 7 8 9 10 11 12 13 14"), cut: true},
		{name: "filter error", req: Request{Expr: `1, error("boom")`, Input: []byte(`null`)}, want: []string{`1`}, err: "error: boom"},
		{name: "halt", req: Request{Expr: `1, halt, 2`, Input: []byte(`null`)}, want: []string{`1`}, halt: true},
		{name: "no environment", req: Request{Expr: `$ENV | length`, Input: []byte(`null`)}, want: []string{`0`}},
		{name: "bad input", req: Request{Expr: `.`, Input: []byte(`{`)}, err: "input is not valid JSON: unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Eval(ctx, tc.req)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			var got []string
			for _, r := range out.Results {
				got = append(got, string(r))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") || out.Cut != tc.cut || out.Halted != tc.halt {
				t.Fatalf("got %q cut=%v halt=%v", got, out.Cut, out.Halted)
			}
		})
	}
	if _, err := Eval(ctx, Request{Expr: ".[", Input: []byte(`1`)}); err == nil {
		t.Fatal("syntax error not reported")
	}
}

// Regression: each of these ran forever or grew tact by gigabytes. Every
// one now ends within about the time bound, and the evaluator's peak
// memory stays within the memory bound plus the runtime's own share.
func TestBoundsHold(t *testing.T) {
	tests := []struct {
		name, expr string
		want       string // "" accepts either bound
	}{
		{"endless recursion", "def f: f; f", ""},
		{"endless loop", "last(repeat(1))", "jq: evaluation exceeded 2s"},
		{"growing array", "[range(1e9)]", ""},
		{"string repetition", `"x" * 1000000000`, "jq: evaluation exceeded 256 MiB"},
		{"sparse array", ".[500000000] = 1", "jq: evaluation exceeded 256 MiB"},
		{"deep nesting", "reduce range(1e8) as $i (null; [.]) | tojson", ""},
		{"doubling string", `"x" | until(length > 1e9; . + .)`, "jq: evaluation exceeded 256 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out, err := Eval(context.Background(), Request{Expr: tc.expr, Input: []byte("null")})
			took := time.Since(start)
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("err %v, want a bound", err)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Fatalf("err %q, want %q", err, tc.want)
			}
			if took > DefaultTimeout+2*time.Second {
				t.Fatalf("took %v", took)
			}
			if out.PeakRSS > DefaultMemory+childSlack+64<<20 {
				t.Fatalf("evaluator peak %d MiB", out.PeakRSS>>20)
			}
			t.Logf("%s: %v after %v, evaluator peak %d MiB", tc.expr, err, took.Round(time.Millisecond), out.PeakRSS>>20)
		})
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	_, err := Eval(context.Background(), Request{Expr: "def f: f; f", Input: []byte("null"), Timeout: 300 * time.Millisecond})
	if err == nil || err.Error() != "jq: evaluation exceeded 300ms" {
		t.Fatalf("got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := Eval(ctx, Request{Expr: "last(repeat(1))", Input: []byte("null")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// The evaluating process (tact) itself stays small whatever the filter
// does: measured in a fresh process, whose VmHWM is its own peak.
func TestCallerPeakMemory(t *testing.T) {
	if os.Getenv("JQX_PEAK_PROGRAM") == "1" {
		for _, expr := range []string{`"x" * 1000000000`, "[range(1e9)]", ".[500000000] = 1"} {
			Eval(context.Background(), Request{Expr: expr, Input: []byte("null")})
		}
		b, _ := os.ReadFile("/proc/self/status")
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				fmt.Println(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "VmHWM:"), "kB")))
			}
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCallerPeakMemory$")
	cmd.Env = append(os.Environ(), "JQX_PEAK_PROGRAM=1")
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	kb, err := strconv.Atoi(lines[0])
	if err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	if kb > 64<<10 {
		t.Fatalf("caller peak %d MiB", kb>>10)
	}
	t.Logf("caller peak %d MiB", kb>>10)
}
