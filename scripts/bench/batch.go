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
	"strconv"
	"strings"
	"time"
)

// The agent-level batch figure: 16 queries as `tact batch --parallel P`
// for each P, and as 16 separate `tact run` processes one after another
// (what a shell loop does), on the bench model.

const batchQueries = 16

var batchParallel = []int{1, 2, 4, 8, 16}

// batchRunArgs are the run settings shared by both ways: a couple of model
// calls over a ~1000-token system prompt each.
var batchRunArgs = []string{"--no-plan", "--max-iterations", "2", "--allow-tools", "list_files",
	"--seed", "7", "--temperature", "0.7", "--ctx-size", "4096", "--max-tokens", "48"}

type batchResult struct {
	label       string
	parallel    int
	wall        time.Duration
	runs        int
	firstCall   int // prompt tokens evaluated by each run's first model call, summed
	evaluated   int // all prompt tokens evaluated
	pinned      int // one run's pinned prefix
	finishedAll bool
}

func batchBench(model string, threads int) ([]batchResult, error) {
	c, cleanup, err := newConcBench(model, threads)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var queries strings.Builder
	for i := range batchQueries {
		fmt.Fprintf(&queries, "list the files, then say how many there are (%d)\n", i+1)
	}
	qfile := filepath.Join(c.work, "queries.txt")
	if err := os.WriteFile(qfile, []byte(queries.String()), 0o644); err != nil {
		return nil, err
	}
	var out []batchResult
	base := []string{"--model", c.model, "--workspace", filepath.Join(c.work, "ws")}
	if threads > 0 {
		base = append(base, "--threads", strconv.Itoa(threads))
	}
	// One after another as separate processes.
	progress("batch: %d separate tact run processes", batchQueries)
	seq := batchResult{label: "separate `tact run` processes, one after another", parallel: 1}
	start := time.Now()
	for i := range batchQueries {
		trace := filepath.Join(c.work, fmt.Sprintf("seq-%d.jsonl", i))
		args := append(append(append([]string{"run"}, base...), batchRunArgs...), "--json", "--trace", trace, fmt.Sprintf("list the files, then say how many there are (%d)", i+1))
		if _, err := c.tactOut(args); err != nil {
			return nil, err
		}
		if err := seq.addTrace(trace); err != nil {
			return nil, err
		}
	}
	seq.wall = time.Since(start)
	seq.finishedAll = seq.runs == batchQueries
	out = append(out, seq)
	for _, p := range batchParallel {
		progress("batch: --parallel %d", p)
		trace := filepath.Join(c.work, fmt.Sprintf("batch-%d.jsonl", p))
		args := append(append(append([]string{"batch"}, base...), batchRunArgs...), "--parallel", strconv.Itoa(p), "--trace", trace, qfile)
		r := batchResult{label: fmt.Sprintf("`tact batch --parallel %d`", p), parallel: p}
		start := time.Now()
		lines, err := c.tactOut(args)
		r.wall = time.Since(start)
		if err != nil {
			return nil, err
		}
		if err := r.addTrace(trace); err != nil {
			return nil, err
		}
		r.finishedAll = strings.Count(lines, "\n") == batchQueries && r.runs == batchQueries
		out = append(out, r)
	}
	return out, nil
}

// tactOut runs tact and returns its stdout; exit 0, 3, 4, 5 (random
// weights end runs in any of these) and 9 (a batch with such runs) are fine.
func (c *concBench) tactOut(args []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tact, args...)
	cmd.Env = c.env(true)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil {
		if !errors.As(err, &ee) {
			return "", err
		}
		switch ee.ExitCode() {
		case 3, 4, 5, 9:
		default:
			return "", fmt.Errorf("tact %s: exit %d: %s", args[0], ee.ExitCode(), strings.TrimSpace(stderr.String()))
		}
	}
	return string(out), nil
}

// addTrace adds a trace's runs: each run's first model step's evaluated
// prompt tokens, all steps' evaluated tokens, and the pinned prefix.
func (r *batchResult) addTrace(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			Event   string `json:"event"`
			RunID   string `json:"run_id"`
			Context struct {
				Pinned int `json:"pinned_tokens"`
			} `json:"context"`
			Step struct {
				Source string `json:"source"`
				Usage  struct {
					Prompt int `json:"prompt_tokens"`
				} `json:"token_usage"`
			} `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return err
		}
		switch ev.Event {
		case "execute_start":
			r.pinned = ev.Context.Pinned
		case "termination":
			r.runs++
		case "step":
			if ev.Step.Source != "model" {
				continue
			}
			r.evaluated += ev.Step.Usage.Prompt
			if !seen[ev.RunID] {
				seen[ev.RunID] = true
				r.firstCall += ev.Step.Usage.Prompt
			}
		}
	}
	return sc.Err()
}

func reportBatch(rs []batchResult) {
	fmt.Printf("\n## %d queries on one model: `tact batch --parallel N`\n\n", batchQueries)
	fmt.Printf("Each query is a free ReAct run (`%s`). Throughput is against `--parallel 1`; the first calls' prompt tokens are what the %d runs' first model calls evaluated (the pinned prefix, system prompt and tools, is %d tokens a run).\n\n",
		strings.Join(batchRunArgs, " "), batchQueries, rs[len(rs)-1].pinned)
	fmt.Println("| how | wall time | queries/min | throughput vs --parallel 1 | first calls' prompt tokens evaluated | all prompt tokens evaluated |")
	fmt.Println("|---|---|---|---|---|---|")
	var base time.Duration
	for _, r := range rs {
		if r.label != "" && r.parallel == 1 && strings.HasPrefix(r.label, "`tact batch") {
			base = r.wall
		}
	}
	for _, r := range rs {
		ratio := "—"
		if base > 0 {
			ratio = fmt.Sprintf("%.2fx", base.Seconds()/r.wall.Seconds())
		}
		note := ""
		if !r.finishedAll {
			note = " (not all finished)"
		}
		fmt.Printf("| %s%s | %.1f s | %.1f | %s | %d | %d |\n", r.label, note, r.wall.Seconds(),
			float64(batchQueries)/r.wall.Minutes(), ratio, r.firstCall, r.evaluated)
	}
}
