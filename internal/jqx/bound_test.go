package jqx

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/jqx/jqxtest"
)

// compileCost compiles expr in this process on a fresh goroutine and
// returns the heap it allocated and the stack it grew (read before the
// goroutine ends, while its stack is still grown).
func compileCost(expr string, vars ...string) (heap, stack uint64, err error) {
	type result struct {
		heap, stack uint64
		err         error
	}
	done := make(chan result)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() {
		_, err := compile(expr, vars)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		var stack uint64
		if after.StackInuse > before.StackInuse {
			stack = after.StackInuse - before.StackInuse
		}
		done <- result{after.TotalAlloc - before.TotalAlloc, stack, err}
	}()
	r := <-done
	return r.heap, r.stack, r.err
}

// Budgets of one in-process compile (the package doc's figures, with room).
const (
	maxCompileHeap  = 16 << 20
	maxCompileStack = 16 << 20
)

// Regression: a plan's `$jq` nesting 500,000 "[" crashed tact serve
// ("fatal error: stack overflow"), and 200,000 parentheses grew tact by
// 590 MB, because the parse ran in tact. Every shape that makes gojq's
// syntax tree deep is now refused above MaxFilterBytes with one line,
// compiles in tact within a small budget up to inProcessBytes, and in the
// child between the two.
func TestCheckBoundsEveryShape(t *testing.T) {
	// A stack overflow past this is a crash of the test binary: the bound
	// the test asserts, enforced.
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	for _, sh := range jqxtest.Shapes {
		t.Run(sh.Name, func(t *testing.T) {
			small := sh.OfLength(inProcessBytes)
			start := time.Now()
			heap, stack, err := compileCost(small, "$state")
			if err != nil {
				t.Fatalf("%d bytes: %v", len(small), err)
			}
			if heap > maxCompileHeap || stack > maxCompileStack {
				t.Fatalf("%d bytes in process: heap %d KiB, stack %d KiB", len(small), heap>>10, stack>>10)
			}
			t.Logf("%d bytes in process: heap %d KiB, stack %d KiB, %v", len(small), heap>>10, stack>>10, time.Since(start).Round(time.Millisecond))

			for _, n := range []int{MaxFilterBytes + 1, 200_000, 500_000} {
				huge := sh.OfLength(n)
				err := Check(huge, "$state")
				var ce *CompileError
				if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "filter is ") || !strings.HasSuffix(err.Error(), "bytes, over the 32768-byte limit") {
					t.Fatalf("%d bytes: %v", len(huge), err)
				}
				if _, err := Eval(context.Background(), Request{Expr: huge, Input: []byte("null")}); !errors.As(err, &ce) {
					t.Fatalf("Eval of %d bytes: %v", len(huge), err)
				}
			}
		})
	}
}

// Every shape up to MaxFilterBytes compiles in the child within the
// default bounds, as the package doc says (the figure MaxFilterBytes was
// chosen by).
func TestCheckInChildEveryShape(t *testing.T) {
	if testing.Short() {
		t.Skip("one child process per shape")
	}
	for _, sh := range jqxtest.Shapes {
		expr := sh.OfLength(MaxFilterBytes)
		start := time.Now()
		out, err := run(context.Background(), Request{Expr: expr, Vars: []string{"$state"}}, true)
		if err != nil {
			t.Errorf("%s, %d bytes: %v", sh.Name, len(expr), err)
			continue
		}
		t.Logf("%s, %d bytes: compiled in the child in %v, its peak %d MiB", sh.Name, len(expr), time.Since(start).Round(time.Millisecond), out.PeakRSS>>20)
	}
}

func TestCheckLongFilters(t *testing.T) {
	pad := func(s string) string { return s + strings.Repeat(" ", inProcessBytes+1-len(s)) }
	ctx := context.Background()

	// Compile errors come back from the child as one line.
	err := Check(pad(".a | nosuchfunction"))
	if err == nil || err.Error() != "function not defined: nosuchfunction/0" {
		t.Fatalf("got %v", err)
	}
	if err := Check(pad("$state | .a"), "$state"); err != nil {
		t.Fatal(err)
	}
	if err := Check(pad("$state")); err == nil || !strings.Contains(err.Error(), "variable not defined") {
		t.Fatalf("got %v", err)
	}

	// A long filter evaluates; one failing to compile is a *CompileError.
	out, err := Eval(ctx, Request{Expr: pad("1+1"), Input: []byte("null")})
	if err != nil || len(out.Results) != 1 || string(out.Results[0]) != "2" {
		t.Fatalf("got %v %v", out, err)
	}
	var ce *CompileError
	if _, err := Eval(ctx, Request{Expr: pad(".["), Input: []byte("null")}); !errors.As(err, &ce) {
		t.Fatalf("got %v", err)
	}
	// A bound hit while evaluating is the evaluation's, not the compile's.
	var le *LimitError
	if _, err := Eval(ctx, Request{Expr: pad(`"x" * 1000000000`), Input: []byte("null")}); !errors.As(err, &le) || err.Error() != "jq: evaluation exceeded 256 MiB" {
		t.Fatalf("got %v", err)
	}

	// A compile that outgrows the child's bound says so (here a bound far
	// below the default, which every filter under MaxFilterBytes fits).
	deep := strings.Repeat("[", 16000) + strings.Repeat("]", 16000)
	_, err = run(ctx, Request{Expr: deep, Memory: 4 << 20}, true)
	if !errors.As(err, &ce) || err.Error() != "compiling the filter exceeded 4 MiB" {
		t.Fatalf("got %v", err)
	}
	_, err = run(ctx, Request{Expr: deep, Timeout: time.Millisecond}, true)
	if !errors.As(err, &ce) || err.Error() != "compiling the filter exceeded 1ms" {
		t.Fatalf("got %v", err)
	}
}

// gojq quotes the offending token, which may be long or hold a newline
// ("invalid escape sequence" quotes the source bytes): the message stays
// one short line.
func TestCompileErrorOneLine(t *testing.T) {
	for _, expr := range []string{
		`"\` + "\n" + `"`,
		"1 " + `"` + strings.Repeat("x", 3000) + `"`,
		strings.Repeat("a", 3000),
		"$" + strings.Repeat("v", 3000),
		".[",
		"",
		"\x00",
		`"\u12"`,
	} {
		err := Check(expr)
		if err == nil {
			t.Fatalf("%q compiled", expr)
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || len(msg) > maxMessage+3 {
			t.Fatalf("%q: %q", expr, msg)
		}
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt(".a"); got != `".a"` {
		t.Fatal(got)
	}
	got := Excerpt(strings.Repeat("é", 100))
	if !strings.HasSuffix(got, `"... (200 bytes)`) || strings.Contains(got, `\x`) {
		t.Fatal(got)
	}
}

func FuzzCompile(f *testing.F) {
	for _, sh := range jqxtest.Shapes {
		f.Add(sh.Make(3))
	}
	for _, s := range []string{".a", `.[] | select(.ok) | .name`, `"\(1)"`, "def f: f; f", "$__loc__", "@base64d", `. as {a:$x} ?// [$x] | $x`, "reduce .[] as $x (0; .+$x)", "label $f | break $f", "import \"a\" as a; .", "include \"x\"; ."} {
		f.Add(s)
	}
	// A stack past this crashes the fuzzer's worker: a failure it reports.
	debug.SetMaxStack(64 << 20)
	f.Fuzz(func(t *testing.T, expr string) {
		if len(expr) > inProcessBytes {
			// Long inputs are rare from the mutator, and each costs a child:
			// the size check is what is in tact's process.
			if err := checkSize(expr); err != nil && len(expr) <= MaxFilterBytes {
				t.Fatalf("%d bytes refused: %v", len(expr), err)
			}
			return
		}
		// Heap only (no GC per input, which would cost most of the time);
		// the stack is bounded by SetMaxStack above.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := compile(expr, []string{"$state"})
		runtime.ReadMemStats(&after)
		if heap := after.TotalAlloc - before.TotalAlloc; heap > maxCompileHeap {
			t.Fatalf("%q: compiling allocated %d KiB", expr, heap>>10)
		}
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) || strings.ContainsAny(err.Error(), "\n\r") || len(err.Error()) > maxMessage+3 {
				t.Fatalf("%q: %q", expr, err)
			}
		}
	})
}
