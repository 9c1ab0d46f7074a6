package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/schema"
)

// issue26Schema is the --schema of issue 26's "Done when".
const issue26Schema = `{"type":"object","properties":{"count":{"type":"integer"},"files":{"type":"array","items":{"type":"string"}}},"required":["count","files"]}`

// validateLines checks that every line of out is one JSON value that
// validates against sch (with the schema package's validator) and returns
// how many there were.
func validateLines(t *testing.T, sch, out string) int {
	t.Helper()
	v, err := schema.Compile(json.RawMessage(sch))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
		if _, err := v.ValidateJSON(sc.Bytes()); err != nil {
			t.Errorf("stdout line %d %q: %v", n, sc.Text(), err)
		}
	}
	return n
}

// The llama backend on the tiny random-weight model, 20 seeds: the
// grammar holds the final answer to the schema, so whatever the run does
// (answer, fail, run out of steps), every stdout line is one JSON value
// that validates; runs with a step budget of one or two end at the
// budget and their fallback answer validates too (or the run says exit
// 11 with nothing on stdout).
func TestSchemaTinyModelSeeds(t *testing.T) {
	c := newE2E(t)
	model := synth.Cached(t, synth.Tiny)
	os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(c.ws, "b.go"), []byte("package b\n"), 0o644)
	answers, budgetEnds := 0, 0
	for seed := 1; seed <= 20; seed++ {
		trace := filepath.Join(c.dir, fmt.Sprintf("t%d.jsonl", seed))
		args := []string{"run", "--model", model, "--workspace", c.ws, "--seed", fmt.Sprint(seed), "--temperature", "0.8",
			"--max-tokens", "256", "--trace", trace, "--schema", issue26Schema}
		if seed%2 == 0 {
			// Free ReAct with a budget of one or two actions: many runs end
			// at the budget, with the fallback answer.
			args = append(args, "--no-plan", "--max-iterations", fmt.Sprint(1+seed%4/2))
		}
		p := c.run(append(args, "count the files")...)
		code := p.wait(5 * time.Minute)
		switch code {
		case 0, 3, 4, 5, 6, 11:
		default:
			t.Fatalf("seed %d: exit %d\nstderr: %s", seed, code, p.stderr.String())
		}
		n := validateLines(t, issue26Schema, p.stdout.String())
		if n > 1 {
			t.Errorf("seed %d: %d lines on stdout, want at most one", seed, n)
		}
		if code == 11 && n != 0 {
			t.Errorf("seed %d: exit 11 with an answer on stdout", seed)
		}
		if code != 11 && n != 1 {
			t.Errorf("seed %d: exit %d with %d answer lines\nstderr: %s", seed, code, n, p.stderr.String())
		}
		answers += n
		if code == 4 || code == 6 {
			budgetEnds++
		}
		// The grammar made every answer the model wrote valid: none was
		// refused as an invalid action.
		tb, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(tb)), "\n") {
			var ev struct {
				Event string `json:"event"`
				Error string `json:"error"`
			}
			json.Unmarshal([]byte(line), &ev)
			if ev.Event == "invalid_action" && strings.Contains(ev.Error, "answer") {
				t.Errorf("seed %d: an answer the grammar should have held was invalid: %s", seed, ev.Error)
			}
		}
	}
	if answers == 0 || budgetEnds == 0 {
		t.Errorf("%d answers, %d budget ends over 20 seeds: want some of each", answers, budgetEnds)
	}
	t.Logf("%d answers, %d budget ends", answers, budgetEnds)
}
