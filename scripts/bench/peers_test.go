package main

import (
	"errors"
	"testing"
)

// -rounds: each row keeps its best figures over the rounds, and a row that
// failed in any round shows the failure.
func TestBestRows(t *testing.T) {
	round := func(prompt, gen, reuse float64, err error) []*peerResult {
		return []*peerResult{{name: "a", PromptRate: prompt, GenRate: gen, ReactReuse: &peerReact{WallS: reuse}, err: err}}
	}
	rows := bestRows(nil, round(400, 70, 18, nil))
	rows = bestRows(rows, round(450, 65, 17, nil))
	rows = bestRows(rows, round(420, 72, 19, nil))
	if r := rows[0]; r.PromptRate != 450 || r.GenRate != 72 || r.ReactReuse.WallS != 17 || r.err != nil {
		t.Fatalf("best of three rounds: prompt %v, gen %v, reuse %v s, err %v", r.PromptRate, r.GenRate, r.ReactReuse.WallS, r.err)
	}
	failed := errors.New("engine failed")
	rows = bestRows(rows, round(0, 0, 0, failed))
	rows = bestRows(rows, round(500, 80, 10, nil))
	if rows[0].err != failed {
		t.Fatalf("a failed round: err %v, want the failure kept", rows[0].err)
	}
}
