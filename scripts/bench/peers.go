package main

// -only peers: tact's backend, node-llama-cpp and ollama on the same model,
// threads and workload, one after the other in one run: prompt evaluation,
// generation, and an 8-step ReAct-like loop with prefix reuse (and, where
// the engine can clear its cache, without). node-llama-cpp comes from npm
// into a cache directory once (as the MCP tests install their servers);
// ollama is the one make bench builds for the tests.

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/models"
)

// nodeLlamaVersion is the node-llama-cpp the peers part installs.
const nodeLlamaVersion = "3.22.1"

var nodeFlag = flag.String("node", "node", "Node.js binary for -only peers (node-llama-cpp "+nodeLlamaVersion+" needs 20 or later)")

//go:embed peers.mjs
var peersJS []byte

// peerWorkload is what every engine runs; peers.mjs reads it as JSON.
type peerWorkload struct {
	Model       string   `json:"model"`
	Threads     int      `json:"threads"`
	Ctx         int      `json:"ctx"`
	Batch       int      `json:"batch"`
	Repeat      int      `json:"repeat"`
	Prompt      string   `json:"prompt"` // chat-formatted, for prompt and generation rates
	Gen         int      `json:"gen"`
	Steps       []string `json:"steps"` // the ReAct loop's prompts, each holding the last
	StepGen     int      `json:"stepGen"`
	ReactRepeat int      `json:"reactRepeat"`
	// The same as messages, for tact's other provider (-tact-peer).
	Msgs     []llm.Message   `json:"msgs"`
	StepMsgs [][]llm.Message `json:"stepMsgs"`
}

type peerReact struct {
	WallS     float64 `json:"wall_s"`
	Evaluated int     `json:"evaluated"`
	Reused    int     `json:"reused"`
	Generated int     `json:"generated"`
}

// peerResult is one engine's row.
type peerResult struct {
	name         string
	PromptTokens int        `json:"prompt_tokens"`
	PromptRate   float64    `json:"prompt_rate"`
	GenRate      float64    `json:"gen_rate"`
	GenTokens    int        `json:"gen_tokens"`
	ReactReuse   *peerReact `json:"react_reuse"`
	ReactCold    *peerReact `json:"react_cold"`
	Version      string     `json:"version"`
	err          error
}

// peersBench is -only peers: every engine on each model (one per -quant),
// in one table.
func peersBench(paths []string, threads int) error {
	var groups []peerGroup
	for _, path := range paths {
		g, err := peerRows(path, threads)
		if err != nil {
			return err
		}
		groups = append(groups, g)
	}
	reportPeers(groups)
	return nil
}

// peerGroup is the rows of one model; ratios are to its first row.
type peerGroup struct {
	model string // the quantization, as models.Inspect names it
	w     *peerWorkload
	rows  []*peerResult
}

// peerRows measures every engine on one model. With -rounds above 1 the
// whole line-up runs again and each row keeps its best figures: this VM's
// speed drifts by 10-20% over minutes, and engines measured one after the
// other would otherwise each get a different slice of that drift.
func peerRows(path string, threads int) (peerGroup, error) {
	g := peerGroup{model: filepath.Base(path)}
	if info, err := models.Inspect(path); err == nil {
		g.model = cmp.Or(info.Quantization, g.model)
	}
	for round := range max(*roundsFlag, 1) {
		if *roundsFlag > 1 {
			progress("peers: round %d of %d", round+1, *roundsFlag)
		}
		rows, w, err := peerRound(path, threads, g.w)
		if err != nil {
			return g, err
		}
		g.w = w
		g.rows = bestRows(g.rows, rows)
	}
	return g, nil
}

// peerRound runs each engine once, in a fixed order; w is nil on the first
// round (the workload is drawn with the first backend's tokenizer).
func peerRound(path string, threads int, w *peerWorkload) ([]*peerResult, *peerWorkload, error) {
	progress("peers: model %s", path)
	lockDir, err := os.MkdirTemp("", "tact-bench-lock-")
	if err != nil {
		return nil, w, err
	}
	defer os.RemoveAll(lockDir)
	be, err := newBackend(llamacpp.Options{ModelPath: path, Threads: threads, CtxSize: ctxSize, BatchSize: batchSize, Verbose: *verboseFlag, CPULockDir: lockDir})
	if err != nil {
		return nil, w, err
	}
	if w == nil {
		w = newPeerWorkload(be, path, threads)
	}

	progress("peers: tact, %s provider", llamacpp.ProviderName)
	tact := tactPeer(be, w)
	tact.name = tactRowName(llamacpp.ProviderName, be.Describe())
	be.Close() // the model's memory goes before the next engine loads its own

	other := otherProvider()
	progress("peers: tact, %s provider (go run -tags %q)", other.name, other.tags)
	tactOther := otherTactPeer(w, other, "")
	if tactOther.name == "" {
		tactOther.name = "tact, " + other.name + " provider"
	}
	rows := []*peerResult{tact, tactOther}
	for _, dir := range otherRuntimes() {
		progress("peers: tact, runtime provider on %s", dir)
		r := otherTactPeer(w, providerBuild{name: "runtime", cgo: "0"}, dir)
		if r.name == "" {
			r.name = "tact, runtime provider (" + filepath.Base(dir) + ")"
		}
		rows = append(rows, r)
	}

	progress("peers: node-llama-cpp %s", nodeLlamaVersion)
	node := nodePeer(w)
	node.name = "node-llama-cpp " + node.Version

	progress("peers: ollama")
	ollama := ollamaPeer(w)
	ollama.name = "ollama " + ollama.Version + " /api/generate"

	return append(rows, node, ollama), w, nil
}

// bestRows folds one round into the rows so far: the higher rates and the
// shorter ReAct times; a row that failed in any round shows the failure.
func bestRows(sofar, round []*peerResult) []*peerResult {
	if sofar == nil {
		return round
	}
	for i, r := range round {
		b := sofar[i]
		switch {
		case b.err != nil:
			continue
		case r.err != nil:
			sofar[i] = r
			continue
		}
		b.PromptRate = max(b.PromptRate, r.PromptRate)
		b.GenRate = max(b.GenRate, r.GenRate)
		b.ReactReuse = fasterReact(b.ReactReuse, r.ReactReuse)
		b.ReactCold = fasterReact(b.ReactCold, r.ReactCold)
	}
	return sofar
}

func fasterReact(a, b *peerReact) *peerReact {
	if a == nil || (b != nil && b.WallS < a.WallS) {
		return b
	}
	return a
}

func newPeerWorkload(be *llamacpp.Backend, path string, threads int) *peerWorkload {
	f := newFiller()
	w := &peerWorkload{Model: path, Threads: threads, Ctx: ctxSize, Batch: batchSize, Repeat: *repeatFlag,
		Gen: *genFlag, StepGen: 32, ReactRepeat: *reactRepeatFlag}
	system := "You are tact, a careful agent. Reply with one JSON action.\n" + f.text(be, *promptFlag-40)
	w.Msgs = []llm.Message{{Role: llm.RoleSystem, Content: system},
		{Role: llm.RoleUser, Content: "Query: find where the configuration file is parsed and summarize the error handling."}}
	w.Prompt = chatML(w.Msgs)
	// The loop's replies are fixed, so that every engine sees the same
	// prompts whatever it draws.
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are tact. Tools: read_file(path), run_command(argv). Reply with one JSON action per turn.\n" + f.text(be, *systemFlag-30)},
		{Role: llm.RoleUser, Content: "Query: which function parses the configuration, and what does it do on errors?"},
	}
	for step := range *stepsFlag {
		w.StepMsgs = append(w.StepMsgs, append([]llm.Message(nil), msgs...))
		w.Steps = append(w.Steps, chatML(msgs))
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf(`{"thought":"step %d: read the next file that may parse it","tool":"read_file","args":{"path":"internal/config/load%d.go"}}`, step+1, step+1)},
			llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Observation %d: ", step+1) + f.text(be, 100)})
	}
	return w
}

// tactPeer measures the backend as the backend part does, on the workload.
func tactPeer(be *llamacpp.Backend, w *peerWorkload) *peerResult {
	res := &peerResult{}
	sp := llm.Sampling{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42}
	for i := range w.Repeat + 1 {
		be.Reset()
		start := time.Now()
		r, err := be.Complete(context.Background(), llm.Request{Messages: w.Msgs, Sampling: sp, MaxTokens: 1})
		if err != nil {
			res.err = err
			return res
		}
		pr := rate(r.Usage.PromptTokens, time.Since(start))
		be.Reset()
		var stamps []time.Time
		r, err = be.Complete(context.Background(), llm.Request{Messages: w.Msgs, Sampling: sp, MaxTokens: w.Gen,
			OnToken: func(string) { stamps = append(stamps, time.Now()) }})
		if err != nil {
			res.err = err
			return res
		}
		if i == 0 {
			continue
		}
		res.PromptTokens = r.Usage.PromptTokens
		res.PromptRate = max(res.PromptRate, pr)
		res.GenRate = max(res.GenRate, stampRate(stamps))
		res.GenTokens = r.Usage.CompletionTokens
	}
	loop := func(reuse bool) (*peerReact, error) {
		be.Reset()
		var pr peerReact
		start := time.Now()
		for i, msgs := range w.StepMsgs {
			if !reuse {
				be.Reset()
			}
			r, err := be.Complete(context.Background(), llm.Request{Kind: llm.KindAction, Messages: msgs,
				Sampling: llm.Sampling{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: i}, MaxTokens: w.StepGen})
			if err != nil {
				return nil, err
			}
			pr.Evaluated += r.Usage.PromptTokens
			pr.Reused += r.Usage.CachedTokens
			pr.Generated += r.Usage.CompletionTokens
		}
		pr.WallS = time.Since(start).Seconds()
		return &pr, nil
	}
	for range w.ReactRepeat {
		for _, reuse := range []bool{true, false} {
			r, err := loop(reuse)
			if err != nil {
				res.err = err
				return res
			}
			best := &res.ReactReuse
			if !reuse {
				best = &res.ReactCold
			}
			if *best == nil || r.WallS < (*best).WallS {
				*best = r
			}
		}
	}
	return res
}

// nodePeer installs node-llama-cpp once and runs peers.mjs on the workload.
func nodePeer(w *peerWorkload) *peerResult {
	res := &peerResult{}
	dir, err := installNodeLlama()
	if err != nil {
		res.err = err
		return res
	}
	script := filepath.Join(dir, "peers.mjs")
	if err := os.WriteFile(script, peersJS, 0o644); err != nil {
		res.err = err
		return res
	}
	wf := filepath.Join(dir, "workload.json")
	data, _ := json.Marshal(w)
	if err := os.WriteFile(wf, data, 0o644); err != nil {
		res.err = err
		return res
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(*nodeFlag, script, wf)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		res.err = fmt.Errorf("node peers.mjs: %v: %s", err, oneLine(lastLines(stderr.String(), 5)))
		return res
	}
	if err := json.Unmarshal(stdout.Bytes(), res); err != nil {
		res.err = fmt.Errorf("node peers.mjs: %v: %q", err, oneLine(lastLines(stdout.String(), 3)))
	}
	return res
}

// installNodeLlama puts node-llama-cpp and its prebuilt linux-x64 binaries
// (nothing for GPUs: --omit=optional, the CPU package named) into
// synth's cache directory's sibling, once.
func installNodeLlama() (string, error) {
	dir := filepath.Join(filepath.Dir(synth.CacheDir()), "tact-bench-peers", "node-llama-cpp-"+nodeLlamaVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "package.json")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	progress("peers: npm install node-llama-cpp@%s into %s (once)", nodeLlamaVersion, dir)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--omit=optional", "--prefix", dir,
		"node-llama-cpp@"+nodeLlamaVersion, "@node-llama-cpp/linux-x64@"+nodeLlamaVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install node-llama-cpp: %v: %s", err, oneLine(lastLines(string(out), 5)))
	}
	return dir, nil
}

// ollamaPeer runs the workload through ollama's native API: raw prompts
// (the same chat-formatted text), its own timings for the rates.
func ollamaPeer(w *peerWorkload) *peerResult {
	res := &peerResult{}
	if *ollamaFlag == "" {
		res.err = errors.New("no ollama: run through make bench (which builds it), or give -ollama PATH")
		return res
	}
	baseURL, stop, err := startOllama(*ollamaFlag, w.Model, w.Threads)
	if err != nil {
		res.err = err
		return res
	}
	defer stop()
	host := strings.TrimSuffix(baseURL, "/v1")
	res.Version = "v0.17.4 (built from the module)" // go install leaves its version at 0.0.0
	if v, err := ollamaVersion(host); err == nil && v != "0.0.0" {
		res.Version = v
	}
	type genReply struct {
		PromptEvalCount    int   `json:"prompt_eval_count"`
		PromptEvalDuration int64 `json:"prompt_eval_duration"`
		EvalCount          int   `json:"eval_count"`
		EvalDuration       int64 `json:"eval_duration"`
	}
	generate := func(prompt string, n, seed int) (genReply, error) {
		body, _ := json.Marshal(map[string]any{"model": "bench", "prompt": prompt, "raw": true, "stream": false,
			"options": map[string]any{"num_predict": n, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "seed": seed}})
		resp, err := http.Post(host+"/api/generate", "application/json", bytes.NewReader(body))
		if err != nil {
			return genReply{}, err
		}
		defer resp.Body.Close()
		var g genReply
		if resp.StatusCode != http.StatusOK {
			return g, fmt.Errorf("ollama /api/generate: %s", resp.Status)
		}
		return g, json.NewDecoder(resp.Body).Decode(&g)
	}
	// ollama keeps the last prompt's KV cache and gives no way to clear
	// it: every throughput call gets a text of its own, differing from the
	// second word on, so each is evaluated whole.
	variant := func(k int) string {
		return strings.Replace(w.Prompt, "You are tact", fmt.Sprintf("Run %d: you are tact", k), 1)
	}
	for i := range w.Repeat + 1 {
		g, err := generate(variant(2*i), 1, 42)
		if err != nil {
			res.err = err
			return res
		}
		pr := float64(g.PromptEvalCount) / (float64(g.PromptEvalDuration) / 1e9)
		g2, err := generate(variant(2*i+1), w.Gen, 42)
		if err != nil {
			res.err = err
			return res
		}
		if i == 0 {
			continue
		}
		res.PromptTokens = g.PromptEvalCount
		res.PromptRate = max(res.PromptRate, pr)
		if g2.EvalCount > 1 {
			res.GenRate = max(res.GenRate, float64(g2.EvalCount)/(float64(g2.EvalDuration)/1e9))
		}
		res.GenTokens = g2.EvalCount
	}
	for k := range w.ReactRepeat {
		// A different first prompt, so the loop's first step starts cold.
		if _, err := generate(variant(-1-k), 1, 0); err != nil {
			res.err = err
			return res
		}
		var pr peerReact
		start := time.Now()
		for i, p := range w.Steps {
			g, err := generate(p, w.StepGen, i)
			if err != nil {
				res.err = err
				return res
			}
			// ollama's prompt_eval_count is the whole prompt, cached
			// part included: what it evaluated is not reported.
			pr.Evaluated += g.PromptEvalCount
			pr.Generated += g.EvalCount
		}
		pr.WallS = time.Since(start).Seconds()
		if res.ReactReuse == nil || pr.WallS < res.ReactReuse.WallS {
			res.ReactReuse = &pr
		}
	}
	return res
}

func ollamaVersion(host string) (string, error) {
	resp, err := http.Get(host + "/api/version")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	return v.Version, json.NewDecoder(resp.Body).Decode(&v)
}

func reportPeers(groups []peerGroup) {
	fmt.Printf("| Peers, same model and threads (%d) | prompt tokens/s | ratio to tact | generation tokens/s | ratio to tact | %d-step ReAct with reuse | ratio to tact | same, cache cleared before each call | ratio to tact |\n", groups[0].w.Threads, len(groups[0].w.StepMsgs))
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	ratio := func(a, b float64) string {
		if a == 0 || b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	for _, g := range groups {
		tact := g.rows[0]
		if len(groups) > 1 {
			fmt.Printf("| **%s** | | | | | | | | |\n", g.model)
		}
		for _, r := range g.rows {
			if r.err != nil {
				fmt.Printf("| %s | failed: %s | | | | | | | |\n", r.name, strings.ReplaceAll(r.err.Error(), "\n", " "))
				continue
			}
			reuse, cold := "-", "-"
			var reuseS, coldS float64
			if r.ReactReuse != nil {
				reuseS = r.ReactReuse.WallS
				reuse = fmt.Sprintf("%.1f s (%d evaluated, %d generated)", reuseS, r.ReactReuse.Evaluated, r.ReactReuse.Generated)
			}
			if r.ReactCold != nil {
				coldS = r.ReactCold.WallS
				cold = fmt.Sprintf("%.1f s (%d evaluated)", coldS, r.ReactCold.Evaluated)
			}
			var tReuse, tCold float64
			if tact.ReactReuse != nil {
				tReuse = tact.ReactReuse.WallS
			}
			if tact.ReactCold != nil {
				tCold = tact.ReactCold.WallS
			}
			fmt.Printf("| %s | %.1f (%d tokens) | %s | %.2f (%d tokens) | %s | %s | %s | %s | %s |\n", r.name,
				r.PromptRate, r.PromptTokens, ratio(r.PromptRate, tact.PromptRate), r.GenRate, r.GenTokens, ratio(r.GenRate, tact.GenRate),
				reuse, ratio(reuseS, tReuse), cold, ratio(coldS, tCold))
		}
	}
	fmt.Println()
	fmt.Println("Rates: prompt tokens over the prompt's evaluation (ollama: its own prompt_eval timing), generation from the median time between tokens (ollama: eval_count over eval_duration); best of the repetitions (and of the -rounds: the whole line-up run again, in the same order). ReAct: wall time of the calls, the fastest repetition; every engine gets the same prompts (fixed replies); ollama's \"evaluated\" counts its cached tokens too, as its API reports them. Ratios are to the first tact row of the same model.")
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " | ") }
