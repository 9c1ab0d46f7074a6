package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The concurrency section: N `tact run` processes at once against the same N
// one after another, with the CPU lock (the default) and, for the smallest
// N, without it (TACT_CPU_LOCK=false) for comparison.

// tactArgs is one short run: a couple of model calls over a ~1000-token
// system prompt, so one run takes a few seconds on 2 cores.
var tactArgs = []string{"run", "--no-plan", "--max-iterations", "2", "--allow-tools", "list_files",
	"--seed", "7", "--temperature", "0.7", "--ctx-size", "4096", "--max-tokens", "48", "--json", "list the files"}

type procResult struct {
	code    int
	wall    time.Duration
	waitMS  int64 // token_usage.cpu_wait_ms
	calls   int   // model steps
	timeout bool
}

type concResult struct {
	n                int
	lock             bool
	sequential, conc time.Duration
	seqRuns, runs    []procResult
	limited          bool // the concurrent runs hit -unlocked-limit
}

// concBench holds what every process of the section shares.
type concBench struct {
	tact, model, work string
	threads           int
}

// buildTact compiles cmd/tact into dir with the environment make exported
// (the same cgo flags, so llama.cpp's build is cached).
func buildTact(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building tact: %w (or give -tact bin/tact)", err)
	}
	out := filepath.Join(dir, "tact")
	cmd := exec.Command(goBin, "build", "-o", out, "./cmd/tact")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building tact (run from the repository root, or give -tact bin/tact): %w", err)
	}
	return out, nil
}

func newConcBench(model string, threads int) (*concBench, func(), error) {
	work, err := os.MkdirTemp("", "tact-bench-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(work) }
	c := &concBench{model: model, work: work, threads: threads, tact: *tactFlag}
	if c.tact == "" {
		progress("building tact for the concurrency runs")
		if c.tact, err = buildTact(work); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	ws := filepath.Join(work, "ws")
	for _, d := range []string{ws, filepath.Join(work, "run"), filepath.Join(work, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	for name, text := range map[string]string{"notes.txt": "disk check notes\n", "main.go": "package main\n", "README.md": "# demo\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	return c, cleanup, nil
}

// env is the processes' environment: no TACT_* settings from the caller's
// shell, a private runtime directory (so only the bench's own processes
// share the lock), the lock setting under test, and no prompt cache: each
// process evaluates its system prompt, as these parts measure (the
// promptcache part measures the cache).
func (c *concBench) env(lock bool) []string {
	return append(c.baseEnv(), "TACT_CPU_LOCK="+strconv.FormatBool(lock), "TACT_NO_PROMPT_CACHE=1")
}

// baseEnv is env without the lock and cache settings; the cache directory
// is private too.
func (c *concBench) baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TACT_") || strings.HasPrefix(kv, "REACT_") || strings.HasPrefix(kv, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TACT_NO_INPUT=1", "XDG_RUNTIME_DIR="+filepath.Join(c.work, "run"),
		"XDG_CONFIG_HOME="+filepath.Join(c.work, "config"), "XDG_CACHE_HOME="+filepath.Join(c.work, "cache"))
}

// runOne runs one tact process; ctx's end stops it with SIGTERM.
func (c *concBench) runOne(ctx context.Context, lock bool) (procResult, error) {
	args := append([]string{}, tactArgs[:1]...)
	args = append(args, "--model", c.model, "--workspace", filepath.Join(c.work, "ws"))
	if c.threads > 0 {
		args = append(args, "--threads", strconv.Itoa(c.threads))
	}
	args = append(args, tactArgs[1:]...)
	cmd := exec.CommandContext(ctx, c.tact, args...)
	cmd.Env = c.env(lock)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	r := procResult{wall: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		return r, fmt.Errorf("tact: %w", err)
	}
	if ctx.Err() != nil {
		r.timeout = true
		return r, nil
	}
	// 0 success, 3 failure, 4 budget, 5 stalled: random weights answer
	// nonsense, but the run must end properly.
	if !slices.Contains([]int{0, 3, 4, 5}, r.code) {
		return r, fmt.Errorf("tact exited with %d: %s", r.code, strings.TrimSpace(stderr.String()))
	}
	var res struct {
		TokenUsage struct {
			CPUWaitMS int64 `json:"cpu_wait_ms"`
		} `json:"token_usage"`
		Trace struct {
			Steps []json.RawMessage `json:"steps"`
		} `json:"trace"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return r, fmt.Errorf("tact --json output: %w", err)
	}
	r.waitMS, r.calls = res.TokenUsage.CPUWaitMS, len(res.Trace.Steps)
	return r, nil
}

// sequentialRuns runs n processes one after another.
func (c *concBench) sequentialRuns(n int, lock bool) (time.Duration, []procResult, error) {
	start := time.Now()
	var rs []procResult
	for range n {
		r, err := c.runOne(context.Background(), lock)
		if err != nil {
			return 0, nil, err
		}
		rs = append(rs, r)
	}
	return time.Since(start), rs, nil
}

// concurrentRuns starts n processes at once and waits for all; limit > 0
// stops them after that long.
func (c *concBench) concurrentRuns(n int, lock bool, limit time.Duration) (time.Duration, []procResult, bool, error) {
	ctx := context.Background()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	rs := make([]procResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i], errs[i] = c.runOne(ctx, lock)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, nil, false, err
	}
	return wall, rs, ctx.Err() != nil, nil
}

// concurrency measures every N of -concurrent with the lock, and the
// smallest without it.
func concurrency(model string, threads int) ([]concResult, error) {
	var ns []int
	for _, f := range strings.Split(*concurrentFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-concurrent %q: want counts of at least 2, comma-separated", *concurrentFlag)
		}
		ns = append(ns, n)
	}
	c, cleanup, err := newConcBench(model, threads)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// One run first warms the page cache and tells how long a run takes.
	progress("concurrency: warm-up run")
	if _, err := c.runOne(context.Background(), true); err != nil {
		return nil, err
	}
	var out []concResult
	for _, n := range ns {
		r := concResult{n: n, lock: true}
		progress("concurrency: %d runs one after another", n)
		if r.sequential, r.seqRuns, err = c.sequentialRuns(n, true); err != nil {
			return nil, err
		}
		progress("concurrency: %d runs at once", n)
		if r.conc, r.runs, _, err = c.concurrentRuns(n, true, 0); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if *unlockedFlag && len(out) > 0 {
		n := slices.Min(ns)
		base := out[slices.Index(ns, n)]
		progress("concurrency: %d runs at once without the cpu lock (at most %v)", n, *unlockedLimitFlag)
		r := concResult{n: n, sequential: base.sequential, seqRuns: base.seqRuns}
		if r.conc, r.runs, r.limited, err = c.concurrentRuns(n, false, *unlockedLimitFlag); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func reportConcurrency(rs []concResult) {
	if len(rs) == 0 {
		return
	}
	calls := 0
	if len(rs[0].seqRuns) > 0 {
		calls = rs[0].seqRuns[0].calls
	}
	fmt.Printf("| Concurrent `tact run` processes | one after another | all at once | ratio | target |\n|---|---|---|---|---|\n")
	for _, r := range rs {
		ratio := r.conc.Seconds() / r.sequential.Seconds()
		conc := fmt.Sprintf("%.1f s", r.conc.Seconds())
		if r.limited {
			conc = "> " + conc + " (stopped)"
		}
		if r.lock {
			ok := "met"
			if ratio > 1 {
				ok = "MISSED"
			}
			fmt.Printf("| %d runs, cpu lock (default) | %.1f s | %s | %.2f | ≤ 1 %s |\n", r.n, r.sequential.Seconds(), conc, ratio, ok)
		} else {
			fmt.Printf("| %d runs, `TACT_CPU_LOCK=false` | %.1f s | %s | %.2f | (comparison) |\n", r.n, r.sequential.Seconds(), conc, ratio)
		}
	}
	fmt.Printf("\nEach run: `tact %s` with the model above (%d steps); each row runs its processes one after another, then all at once.", strings.Join(quoteArgs(tactArgs), " "), calls)
	fmt.Printf(" Waits for the cpu lock (`token_usage.cpu_wait_ms`) in the concurrent runs:")
	for _, r := range rs {
		if !r.lock {
			continue
		}
		var ws []string
		for _, p := range r.runs {
			ws = append(ws, strconv.FormatInt(p.waitMS, 10))
		}
		fmt.Printf(" %d runs: %s ms;", r.n, strings.Join(ws, ", "))
	}
	fmt.Println()
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " '\"") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}
