package main

import (
	"bufio"
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
	"time"
)

// The long-run figure: one free ReAct run of longRunSteps steps on the
// bench model with a small window, so compaction keeps it alive; measured
// from its trace. A second run with a window large enough that nothing is
// compacted for as long as it fits is the baseline of the same machine.

const longRunSteps = 30

type longRunResult struct {
	window      int
	steps       int
	reason      string
	wall        time.Duration
	compactions int
	// per action step: prompt tokens evaluated (including the compaction
	// summary calls before it) and reused from the cache
	evaluated, cached []int
	stepTimes         []time.Duration
	pinned            int
}

func longRun(model string, threads int, window int) (longRunResult, error) {
	c, cleanup, err := newConcBench(model, threads)
	if err != nil {
		return longRunResult{}, err
	}
	defer cleanup()
	ws := filepath.Join(c.work, "ws")
	for i := 1; i <= 12; i++ {
		var b strings.Builder
		for j := 1; j <= 60; j++ {
			fmt.Fprintf(&b, "file %d line %d: some text to read, with numbers %d\n", i, j, i*j)
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(b.String()), 0o644); err != nil {
			return longRunResult{}, err
		}
	}
	trace := filepath.Join(c.work, "trace.jsonl")
	args := []string{"run", "--model", c.model, "--workspace", ws, "--ctx-size", strconv.Itoa(window),
		"--no-plan", "--max-iterations", strconv.Itoa(longRunSteps), "--seed", "1", "--temperature", "0.5",
		"--stall-threshold", "100", "--allow-tools", "read_file,list_files,search_files", "--json", "--trace", trace}
	if threads > 0 {
		args = append(args, "--threads", strconv.Itoa(threads))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tact, append(args, "read every file")...)
	cmd.Env = c.env(false)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	r := longRunResult{window: window, wall: time.Since(start)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return r, fmt.Errorf("tact: %w", err)
	}
	var res struct {
		TerminationReason string `json:"termination_reason"`
		Iterations        int    `json:"iterations"`
		State             struct {
			Compactions int `json:"compactions"`
		} `json:"state"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return r, fmt.Errorf("tact --json output: %w (%s)", err, strings.TrimSpace(stderr.String()))
	}
	if res.TerminationReason == "error" {
		return r, fmt.Errorf("the long run ended in error: %s", strings.TrimSpace(stderr.String()))
	}
	r.reason, r.steps, r.compactions = res.TerminationReason, res.Iterations, res.State.Compactions
	return r, r.readTrace(trace)
}

// readTrace takes each model step's evaluated and cached prompt tokens and
// time from the trace; a compaction's summary call counts toward the step
// after it.
func (r *longRunResult) readTrace(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	type usage struct {
		Prompt int `json:"prompt_tokens"`
		Cached int `json:"cached_tokens"`
	}
	var ev struct {
		Event   string    `json:"event"`
		Time    time.Time `json:"time"`
		Usage   usage     `json:"token_usage"`
		Context struct {
			Pinned int `json:"pinned_tokens"`
		} `json:"context"`
		Step struct {
			Source string `json:"source"`
			Usage  usage  `json:"token_usage"`
		} `json:"step"`
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	extra := 0
	var last time.Time
	for sc.Scan() {
		ev.Step.Source, ev.Usage, ev.Step.Usage = "", usage{}, usage{}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return err
		}
		switch ev.Event {
		case "execute_start":
			r.pinned, last = ev.Context.Pinned, ev.Time
		case "compaction":
			extra += ev.Usage.Prompt
		case "step":
			if ev.Step.Source != "model" {
				continue
			}
			r.evaluated = append(r.evaluated, ev.Step.Usage.Prompt+extra)
			r.cached = append(r.cached, ev.Step.Usage.Cached)
			r.stepTimes = append(r.stepTimes, ev.Time.Sub(last))
			extra, last = 0, ev.Time
		}
	}
	return sc.Err()
}

func meanInt(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(len(xs))
}

func reportLongRun(small, large longRunResult) {
	fmt.Printf("\n## Long run: %d free ReAct steps, compaction\n\n", longRunSteps)
	fmt.Printf("One `tact run --no-plan --max-iterations %d` over a dozen 3 KB files (random weights at temperature 0.5 and seed 1, which reach all 30 steps), measured from its trace. Prompt tokens evaluated per step include the compaction summary calls before the step.\n\n", longRunSteps)
	fmt.Println("| context | steps | end | compactions | time per step | prompt tokens evaluated per step | cached per step | pinned prefix |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range []longRunResult{small, large} {
		ts := slices.Clone(r.stepTimes)
		fmt.Printf("| %d | %d | %s | %d | %.2f s (median %.2f s) | %.0f | %.0f | %d |\n", r.window, r.steps, r.reason, r.compactions,
			r.wall.Seconds()/float64(max(r.steps, 1)), median(ts).Seconds(), meanInt(r.evaluated), meanInt(r.cached), r.pinned)
	}
	if e := meanInt(large.evaluated); e > 0 {
		fmt.Printf("\nWith compaction a step evaluated %.2fx the prompt tokens of the run that never compacted, and took %.2fx its time.\n",
			meanInt(small.evaluated)/e, (small.wall.Seconds()/float64(max(small.steps, 1)))/(large.wall.Seconds()/float64(max(large.steps, 1))))
	}
}
