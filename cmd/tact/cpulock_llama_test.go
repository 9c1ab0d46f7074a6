package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/cpulock"
	"github.com/tactcli/tact/internal/synth"
)

// Concurrent `tact run` processes share the CPU through the lock in the
// user's runtime directory: while every CPU slot is taken (as another tact
// process would hold them), two runs wait before their model work and report
// the wait as token_usage.cpu_wait_ms; with TACT_CPU_LOCK=false a run does
// not wait. (llm/llamacpp's TestProcessesTakeTurns checks that concurrent
// processes never hold more threads than cores.)
func TestConcurrentRunsShareTheCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the llama backend")
	}
	model := synth.Cached(t, synth.Tiny)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// testscript.Main runs tactMain when the test binary is called "tact".
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "tact")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644)
	runDir := filepath.Join(dir, "run")
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), runtimeEnv(), "XDG_RUNTIME_DIR=" + runDir,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "TACT_NO_INPUT=1"}

	cores := runtime.NumCPU() // the backend's slot count
	lock, err := cpulock.Open(filepath.Join(runDir, "tact"), cores)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := lock.Acquire(context.Background(), cores)
	if err != nil || turn.Threads != cores {
		t.Fatalf("holding every cpu slot: %v", err)
	}
	defer turn.Release()

	type result struct {
		code int
		wait int64
		err  error
	}
	run := func(seed int, extraEnv ...string) result {
		cmd := exec.Command(filepath.Join(bin, "tact"), "run", "--model", model, "--workspace", ws,
			"--no-plan", "--max-iterations", "2", "--seed", strconv.Itoa(seed), "--json", "list the files")
		cmd.Env = append(env, extraEnv...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var r result
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else if err != nil {
			return result{err: err}
		}
		var res struct {
			TokenUsage struct {
				CPUWaitMS int64 `json:"cpu_wait_ms"`
			} `json:"token_usage"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return result{code: r.code, err: errors.New("not JSON: " + string(out) + stderr.String())}
		}
		r.wait = res.TokenUsage.CPUWaitMS
		return r
	}

	// Opted out: runs at once although every slot is held.
	start := time.Now()
	if r := run(1, "TACT_CPU_LOCK=false"); r.err != nil || r.wait != 0 {
		t.Fatalf("TACT_CPU_LOCK=false: %+v, want no wait", r)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("TACT_CPU_LOCK=false run took %v", d)
	}

	const hold = 500 * time.Millisecond
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = run(i + 1)
		}()
	}
	// Both runs wait once their turns are registered beside the test's own
	// (the lock's want/ directory); then the slots stay held for hold, the
	// wait each run must report.
	if !waitFor(2*time.Minute, func() bool {
		entries, _ := os.ReadDir(filepath.Join(runDir, "tact", "want"))
		n := 0
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
		return n == 1+len(results)
	}) {
		t.Fatal("the runs never waited for the cpu lock")
	}
	time.Sleep(hold) // the time the slots are held is what the runs must report
	turn.Release()
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("run %d: %v", i, r.err)
		}
		// 0 success, 3 failure, 4 budget, 5 stalled: random weights.
		if r.code != 0 && (r.code < 3 || r.code > 5) {
			t.Errorf("run %d exited with %d", i, r.code)
		}
		t.Logf("run %d: exit %d, cpu_wait_ms %d", i, r.code, r.wait)
		if r.wait < 200 || r.wait > 60_000 {
			t.Errorf("run %d: cpu_wait_ms = %d, want at least most of the %v the slots were held", i, r.wait, hold)
		}
	}
}
