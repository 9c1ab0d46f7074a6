package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/synth"
)

// A 10-case suite, 5 trials each, live on the tiny random model with 4
// trials at once on one loaded model: it completes; each case reports 5
// trials with pass@1 and pass@5 that follow from its passes; its tokens
// are the sum of its runs' --json totals (each run looked up in the
// history by the report's run id); and a case that deletes a file of its
// fixture passes in all 5 trials, since each trial's copy is fresh.
func TestTestSuiteTinyModel(t *testing.T) {
	c := newE2E(t)
	model := synth.Cached(t, synth.Tiny)
	suite := filepath.Join(c.dir, "suite")
	var cases strings.Builder
	// Free ReAct on read tools: a random model's runs end any which way;
	// the first assertion holds for every run, the second rarely.
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&cases, `{"name":"free-%d","query":"list the files and count them","fixture":"fixtures/ws",`+
			`"flags":{"no_plan":true,"max_iterations":2,"max_tokens":48,"allow_tools":["list_files","read_file","final_answer"]},`+
			`"assert":[{"jq":".run_id | length > 0","name":"ran"},{"jq":".termination_reason == \"success\"","name":"answered"}]}`+"\n", i)
	}
	// A saved plan whose answer the model fills in.
	cases.WriteString(`{"name":"fill","plan":"plans/fill.jsonl","fixture":"fixtures/ws","flags":{"max_tokens":48},` +
		`"assert":[{"jq":"[.trace.steps[].action.tool] | .[0] == \"read_file\"","name":"reads first"}]}` + "\n")
	// A saved plan that deletes a fixture file: no model call.
	cases.WriteString(`{"name":"delete","plan":"plans/delete.jsonl","fixture":"fixtures/ws",` +
		`"assert":[{"jq":".termination_reason == \"success\""}],"files":[{"path":"old.log","absent":true},{"path":"notes.txt","unchanged":true}]}` + "\n")
	files := map[string]string{
		"cases.jsonl":           cases.String(),
		"fixtures/ws/old.log":   "2026-01-01 ERROR disk full\n",
		"fixtures/ws/notes.txt": "keep me\n",
		"plans/fill.jsonl": `{"tool":"read_file","args":{"path":"notes.txt"}}` + "\n" +
			`{"tool":"final_answer","args":{"answer":""}}` + "\n",
		"plans/delete.jsonl": `{"tool":"run_command","args":{"command":"rm old.log"}}` + "\n" +
			`{"tool":"final_answer","args":{"answer":"removed old.log"}}` + "\n",
	}
	for name, body := range files {
		p := filepath.Join(suite, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	junit := filepath.Join(c.dir, "report.xml")
	p := c.run("test", "run", suite, "--model", model, "--trials", "5", "--parallel", "4", "--seed", "1",
		"--temperature", "0.8", "--yes", "--timeout", "2m", "--json", "--junit", junit)
	code := p.wait(10 * time.Minute)
	if code != 0 && code != exitTestsFailed {
		t.Fatalf("exit %d\nstderr: %s", code, p.stderr.String())
	}
	var rep struct {
		OK     bool   `json:"ok"`
		K      int    `json:"k"`
		Mode   string `json:"mode"`
		Model  string `json:"model"`
		Totals struct {
			Trials     int            `json:"trials"`
			TokenUsage map[string]int `json:"token_usage"`
		} `json:"totals"`
		Cases []struct {
			Name       string         `json:"name"`
			Status     string         `json:"status"`
			Trials     int            `json:"trials"`
			Passed     int            `json:"passed"`
			PassAt1    *float64       `json:"pass_at_1"`
			PassAtK    *float64       `json:"pass_at_k"`
			TokenUsage map[string]int `json:"token_usage"`
			Results    []struct {
				Trial      int            `json:"trial"`
				RunID      string         `json:"run_id"`
				Passed     bool           `json:"passed"`
				Error      string         `json:"error"`
				TokenUsage map[string]int `json:"token_usage"`
			} `json:"results"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, p.stdout.String())
	}
	if len(rep.Cases) != 10 || rep.K != 5 || rep.Totals.Trials != 50 {
		t.Fatalf("%d cases, k=%d, %d trials; want 10, 5, 50\nstderr: %s", len(rep.Cases), rep.K, rep.Totals.Trials, p.stderr.String())
	}
	if rep.Mode != "live" || rep.Model != model {
		t.Errorf("mode %q, model %q; want live, %s", rep.Mode, rep.Model, model)
	}
	if (code == 0) != rep.OK {
		t.Errorf("exit %d with ok=%v", code, rep.OK)
	}
	keys := []string{"prompt_tokens", "completion_tokens", "cached_tokens"}
	total := map[string]int{}
	for _, cs := range rep.Cases {
		if cs.Trials != 5 || len(cs.Results) != 5 || cs.PassAt1 == nil || cs.PassAtK == nil {
			t.Fatalf("case %s: %d trials (%d results)", cs.Name, cs.Trials, len(cs.Results))
		}
		if want := float64(cs.Passed) / 5; *cs.PassAt1 != want {
			t.Errorf("case %s: pass@1 %v with %d of 5 passed", cs.Name, *cs.PassAt1, cs.Passed)
		}
		if want := map[bool]float64{true: 1, false: 0}[cs.Passed > 0]; *cs.PassAtK != want {
			t.Errorf("case %s: pass@5 %v with %d of 5 passed", cs.Name, *cs.PassAtK, cs.Passed)
		}
		sum := map[string]int{}
		for _, r := range cs.Results {
			if r.Error != "" || r.RunID == "" {
				t.Fatalf("case %s trial %d did not run: %s", cs.Name, r.Trial, r.Error)
			}
			// The run's own --json document, as the history keeps it.
			show := c.run("log", "show", r.RunID)
			if code := show.wait(time.Minute); code != 0 {
				t.Fatalf("log show %s: exit %d: %s", r.RunID, code, show.stderr.String())
			}
			var doc struct {
				TokenUsage map[string]int `json:"token_usage"`
			}
			if err := json.Unmarshal(show.stdout.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if doc.TokenUsage[k] != r.TokenUsage[k] {
					t.Errorf("case %s trial %d: %s %d in the report, %d in the run's --json", cs.Name, r.Trial, k, r.TokenUsage[k], doc.TokenUsage[k])
				}
				sum[k] += doc.TokenUsage[k]
			}
		}
		for _, k := range keys {
			if cs.TokenUsage[k] != sum[k] {
				t.Errorf("case %s: %s %d, the runs' sum %d", cs.Name, k, cs.TokenUsage[k], sum[k])
			}
			total[k] += sum[k]
		}
		switch {
		case cs.Name == "delete" && (cs.Passed != 5 || cs.Status != "passed"):
			t.Errorf("delete: %d of 5 trials passed (%s): a trial's fixture was not fresh\nstderr: %s", cs.Passed, cs.Status, p.stderr.String())
		case strings.HasPrefix(cs.Name, "free-") && cs.TokenUsage["completion_tokens"] == 0:
			t.Errorf("case %s spent no completion tokens: did it run on the model?", cs.Name)
		}
	}
	for _, k := range keys {
		if rep.Totals.TokenUsage[k] != total[k] {
			t.Errorf("totals: %s %d, the runs' sum %d", k, rep.Totals.TokenUsage[k], total[k])
		}
	}
	if total["completion_tokens"] == 0 {
		t.Error("no tokens spent")
	}
	if _, err := os.Stat(filepath.Join(suite, "fixtures", "ws", "old.log")); err != nil {
		t.Errorf("the fixture itself changed: %v", err)
	}
	x, err := os.ReadFile(junit)
	if err != nil || strings.Count(string(x), "<testcase ") != 50 {
		t.Errorf("--junit: %d testcases (%v), want 50", strings.Count(string(x), "<testcase "), err)
	}
	t.Logf("tokens %v; stderr:\n%s", total, p.stderr.String())
}

// Runs on the tiny model (--no-ask, planned and free), recorded as cases,
// replay offline with no model and no cassette mismatch: the replies and
// prompt digests a llama run records are what a replay asks with.
func TestTestRecordTinyModel(t *testing.T) {
	c := newE2E(t)
	model := synth.Cached(t, synth.Tiny)
	if err := os.WriteFile(filepath.Join(c.ws, "app.log"), []byte("2026-01-01 ERROR no space left on device\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(c.dir, "suite")
	for _, r := range []struct {
		name string
		args []string
	}{
		{"planned", []string{"--ctx-size", "16384"}},
		{"free", []string{"--no-plan"}},
	} {
		args := append([]string{"run", "--model", model, "--workspace", c.ws, "--seed", "3", "--max-tokens", "64", "--no-ask",
			"--max-iterations", "3"}, r.args...)
		p := c.run(append(args, "why is the disk full?")...)
		if code := p.wait(5 * time.Minute); code == 1 || code == 2 {
			t.Fatalf("%s: exit %d\nstderr: %s", r.name, code, p.stderr.String())
		}
		rec := c.run("test", "record", "last", "--suite", suite, "--name", r.name)
		if code := rec.wait(time.Minute); code != 0 {
			t.Fatalf("record %s: exit %d\nstderr: %s", r.name, code, rec.stderr.String())
		}
	}
	p := c.run("test", "run", suite, "--json")
	if code := p.wait(2 * time.Minute); code != 0 {
		t.Fatalf("replay: exit %d\nstdout: %s\nstderr: %s", code, p.stdout.String(), p.stderr.String())
	}
	if !strings.Contains(p.stdout.String(), `"mode":"replay"`) || strings.Contains(p.stdout.String(), "prompt differs") {
		t.Fatalf("replay: %s", p.stdout.String())
	}
}
