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

// The agent-level batch figures: 16 queries as `tact batch --parallel P`
// for each P, and as 16 separate `tact run` processes one after another
// (what a shell loop does), on the bench model, for two kinds of run.

const batchQueries = 16

var batchParallel = []int{1, 2, 4, 8, 16}

// batchWorkload is one kind of agent run.
type batchWorkload struct {
	name string
	args []string
}

// batchWorkloads: tact run's default (plan, then execute; the planner's
// and the executor's prompts each have their own system prompt), and a
// free ReAct run of two actions (one system prompt: prompt-bound).
var batchWorkloads = []batchWorkload{
	{"plan, then execute (tact run's default)", []string{"--allow-tools", "list_files", "--retry-buffer", "1",
		"--seed", "7", "--temperature", "0.7", "--ctx-size", "4096", "--max-tokens", "48"}},
	{"free ReAct, two actions", []string{"--no-plan", "--max-iterations", "2", "--allow-tools", "list_files",
		"--seed", "7", "--temperature", "0.7", "--ctx-size", "4096", "--max-tokens", "48"}},
}

type batchResult struct {
	label       string
	parallel    int
	batch       bool // tact batch (not separate processes)
	wall        time.Duration
	runs        int
	firstCall   int // prompt tokens evaluated by each run's first model call, summed
	evaluated   int // all prompt tokens evaluated (the runs' totals)
	generated   int
	finishedAll bool
}

type batchTable struct {
	workload batchWorkload
	rows     []batchResult
}

func batchBench(model string, threads int) ([]batchTable, error) {
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
	base := []string{"--model", c.model, "--workspace", filepath.Join(c.work, "ws")}
	if threads > 0 {
		base = append(base, "--threads", strconv.Itoa(threads))
	}
	var tables []batchTable
	for w, wl := range batchWorkloads {
		t := batchTable{workload: wl}
		// One after another as separate processes.
		progress("batch (%s): %d separate tact run processes", wl.name, batchQueries)
		seq := batchResult{label: "separate `tact run` processes, one after another", parallel: 1}
		start := time.Now()
		for i := range batchQueries {
			trace := filepath.Join(c.work, fmt.Sprintf("seq-%d-%d.jsonl", w, i))
			args := append(append(append([]string{"run"}, base...), wl.args...), "--json", "--trace", trace, fmt.Sprintf("list the files, then say how many there are (%d)", i+1))
			if _, err := c.tactOut(args); err != nil {
				return nil, err
			}
			if err := seq.addTrace(trace); err != nil {
				return nil, err
			}
		}
		seq.wall = time.Since(start)
		seq.finishedAll = seq.runs == batchQueries
		t.rows = append(t.rows, seq)
		for _, p := range batchParallel {
			progress("batch (%s): --parallel %d", wl.name, p)
			trace := filepath.Join(c.work, fmt.Sprintf("batch-%d-%d.jsonl", w, p))
			args := append(append(append([]string{"batch"}, base...), wl.args...), "--parallel", strconv.Itoa(p), "--trace", trace, qfile)
			r := batchResult{label: fmt.Sprintf("`tact batch --parallel %d`", p), parallel: p, batch: true}
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
			t.rows = append(t.rows, r)
		}
		tables = append(tables, t)
	}
	return tables, nil
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

// addTrace adds a trace's runs: each run's first model call's evaluated
// prompt tokens (its plan, or its first model step), and the runs' totals.
func (r *batchResult) addTrace(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	type usage struct {
		Prompt    int `json:"prompt_tokens"`
		Generated int `json:"completion_tokens"`
	}
	for sc.Scan() {
		var ev struct {
			Event string `json:"event"`
			RunID string `json:"run_id"`
			Usage usage  `json:"token_usage"`
			Step  struct {
				Source string `json:"source"`
				Usage  usage  `json:"token_usage"`
			} `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return err
		}
		first := func(n int) {
			if !seen[ev.RunID] {
				seen[ev.RunID] = true
				r.firstCall += n
			}
		}
		switch ev.Event {
		case "plan":
			first(ev.Usage.Prompt)
		case "step":
			if ev.Step.Source == "model" {
				first(ev.Step.Usage.Prompt)
			}
		case "termination":
			r.runs++
			r.evaluated += ev.Usage.Prompt
			r.generated += ev.Usage.Generated
		}
	}
	return sc.Err()
}

func reportBatch(tables []batchTable) {
	fmt.Printf("\n## %d queries on one model: `tact batch --parallel N`\n", batchQueries)
	for _, t := range tables {
		fmt.Printf("\n%s: `%s`. Throughput is against `--parallel 1`. First calls: the prompt tokens the %d runs' first model calls evaluated; all: every call of every run.\n\n",
			t.workload.name, strings.Join(t.workload.args, " "), batchQueries)
		fmt.Println("| how | wall time | queries/min | throughput vs --parallel 1 | first calls' prompt tokens evaluated | all prompt tokens evaluated | generated |")
		fmt.Println("|---|---|---|---|---|---|---|")
		var base time.Duration
		for _, r := range t.rows {
			if r.batch && r.parallel == 1 {
				base = r.wall
			}
		}
		for _, r := range t.rows {
			ratio := "—"
			if base > 0 {
				ratio = fmt.Sprintf("%.2fx", base.Seconds()/r.wall.Seconds())
			}
			note := ""
			if !r.finishedAll {
				note = " (not all finished)"
			}
			fmt.Printf("| %s%s | %.1f s | %.1f | %s | %d | %d | %d |\n", r.label, note, r.wall.Seconds(),
				float64(batchQueries)/r.wall.Minutes(), ratio, r.firstCall, r.evaluated, r.generated)
		}
	}
}
