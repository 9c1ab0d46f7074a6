package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
)

// The run history's cost (-only history): the same saved plan of
// historySteps read-only steps, run in this process with the history on
// and off, alternately, historyRuns times each; the difference per step is
// what recording costs a run (its events, steps and the checkpoint a step
// waits for). No model: the plan's arguments are fixed.

const (
	historyRuns  = 40
	historySteps = 8
)

func historyBench() error {
	dir, err := os.MkdirTemp("", "tact-bench-history-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	var plan strings.Builder
	plan.WriteString(`{"type":"plan","query":"read the notes"}` + "\n")
	for i := range historySteps {
		name := fmt.Sprintf("note%d.txt", i)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(strings.Repeat(fmt.Sprintf("line %d of the note\n", i), 200)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&plan, `{"tool":"read_file","args":{"path":%q}}`+"\n", name)
	}
	plan.WriteString(`{"tool":"final_answer","args":{"answer":{"$jq":".steps | length | tostring"}}}` + "\n")
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))

	open := func(history bool) (*agent.Runtime, error) {
		s := config.Defaults()
		s.Workspace, s.Backend, s.History = ws, "none", history
		return agent.Open(context.Background(), s, agent.Options{Mode: "exec", History: true})
	}
	on, err := open(true)
	if err != nil {
		return err
	}
	defer on.Close()
	off, err := open(false)
	if err != nil {
		return err
	}
	defer off.Close()
	timed := func(rt *agent.Runtime) (time.Duration, error) {
		start := time.Now()
		res, err := rt.Run(context.Background(), agent.Job{PlanName: "bench.jsonl", PlanData: []byte(plan.String())})
		if err == nil && !res.Success {
			err = fmt.Errorf("bench plan: %s: %s", res.TerminationReason, res.Message)
		}
		return time.Since(start), err
	}
	var withStore, without []time.Duration
	progress("history: %d runs of %d steps with the run history, %d without, alternately", historyRuns, historySteps, historyRuns)
	for range historyRuns {
		d, err := timed(on)
		if err != nil {
			return err
		}
		withStore = append(withStore, d)
		if d, err = timed(off); err != nil {
			return err
		}
		without = append(without, d)
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	a, b := median(withStore), median(without)
	perStep := float64(a-b) / float64(historySteps) / float64(time.Millisecond)
	fmt.Printf("\n## Run history\n\n")
	fmt.Printf("A saved plan of %d read_file steps, no model, in one process; median of %d runs each, alternating.\n\n", historySteps, historyRuns)
	fmt.Printf("| history | run | per step |\n|---|---|---|\n")
	fmt.Printf("| off | %.1f ms | %.2f ms |\n", msOf(b), msOf(b)/historySteps)
	fmt.Printf("| on | %.1f ms | %.2f ms |\n", msOf(a), msOf(a)/historySteps)
	fmt.Printf("\nRecording costs %.2f ms a step (ratio on/off %.2f; the bound is 5 ms a step).\n", perStep, float64(a)/float64(b))
	return nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
