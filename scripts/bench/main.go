// Command bench measures tact's llama.cpp backend on the generated bench
// model (about 250M parameters, Q8_0) and prints a markdown report:
//
//   - prompt and generation tokens/s through Backend.Complete against a bare
//     loop written directly against the binding (same model file, prompt,
//     threads and sampler), in the same run;
//   - an 8-step ReAct-like run with a 1500-token system prompt, with KV
//     prefix reuse and with the cache cleared before every call;
//   - the grammar's cost per generated token (same generation with and
//     without a JSON Schema);
//   - N concurrent `tact run` processes (N = 2 and 4) against the same N one
//     after another, with the CPU lock and, for N = 2, without it
//     (concurrent.go);
//   - parallel sequences (llm/llamacpp/sched.go): a bare-binding probe of N sequences
//     decoded in one batch, and 16 concurrent calls at Parallel 1 to 16;
//   - the prompt cache (promptcache.go): a cron-like pair of identical
//     `tact run` processes, cold and warm: time to the first model reply,
//     the cache file's size, save and load times;
//   - with -only openai (openai.go): the same 8-step ReAct run in-process
//     and through ollama's OpenAI-compatible API (the openai backend);
//   - the run history (history.go): a saved plan run in-process with the
//     history on and off, the cost a step of recording it;
//   - with -only serve (serve.go): tact serve under load on loopback,
//     requests/s and p50/p99 latency at 1, 4 and 16 clients, on the script
//     backend and the tiny model (under 30 s).
//
// -only backend, concurrency, longrun, parallel, batch, promptcache, history, openai or serve runs one part; -model picks another
// model (say the tiny one, to check the mechanics quickly); -quant q4_k_m
// the bench model in Q4_K_M, made by the runtime's quantizer (quant.go).
//
// Run it with `make bench` (the Makefile's cgo flags keep llama.cpp's build
// cached). The model is generated once into synth.CacheDir().
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/models"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

var (
	modelFlag       = flag.String("model", "", "GGUF model (default: the generated bench model)")
	threadsFlag     = flag.Int("threads", 0, "inference threads (default: physical cores)")
	gpuLayersFlag   = flag.Int("gpu-layers", 0, "layers to offload to a GPU backend in the backend part, tact's and the bare loop's alike (scripts/build-cuda.sh; 0: CPU only)")
	repeatFlag      = flag.Int("repeat", 5, "repetitions of each throughput measurement (the best counts)")
	reactRepeatFlag = flag.Int("react-repeat", 2, "repetitions of each ReAct run (the fastest counts)")
	roundsFlag      = flag.Int("rounds", 1, "peers: run the whole line-up this many times, each row keeping its best (evens out the machine's drift between engines)")
	promptFlag      = flag.Int("prompt-tokens", 512, "prompt length for the throughput measurement")
	genFlag         = flag.Int("gen-tokens", 64, "tokens generated per throughput measurement")
	stepsFlag       = flag.Int("steps", 8, "ReAct steps")
	systemFlag      = flag.Int("system-tokens", 1500, "ReAct system prompt length")
	verboseFlag     = flag.Bool("v", false, "show llama.cpp's logs")

	onlyFlag          = flag.String("only", "", "run one part: backend (throughput, ReAct, grammar), concurrency, longrun, parallel, batch, promptcache, history, openai, peers or serve (the last three only when asked)")
	pcRepeatFlag      = flag.Int("pc-repeat", 3, "cold/warm pairs of the promptcache part (the medians count)")
	concurrentFlag    = flag.String("concurrent", "2,4", "counts of concurrent tact processes, comma-separated")
	unlockedFlag      = flag.Bool("unlocked", true, "also run the smallest -concurrent count without the cpu lock")
	unlockedLimitFlag = flag.Duration("unlocked-limit", 150*time.Second, "stop the concurrent runs without the cpu lock after this long")
	tactFlag          = flag.String("tact", "", "tact binary for the concurrency part (default: build ./cmd/tact)")
)

const (
	ctxSize   = 4096
	batchSize = 512
)

// actionSchema is tact's own ReAct action schema over the built-in tools,
// as the executor builds it (a hand-written copy would drift).
var actionSchema = string(schema.Action(tools.SchemaTools(tools.DefaultRegistry().List()), schema.ThoughtOptions{Required: true, MinLength: 10}, false))

func main() {
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}

func run() error {
	if *onlyFlag != "" && !slices.Contains([]string{"backend", "concurrency", "longrun", "parallel", "batch", "promptcache", "openai", "peers", "serve", "history"}, *onlyFlag) {
		return fmt.Errorf("-only %q: want backend, concurrency, longrun, parallel, batch, promptcache, openai, peers, serve or history", *onlyFlag)
	}
	if *tactPeerFlag != "" {
		// A child of -only peers: tact's row on this build's provider.
		return tactPeerChild(*tactPeerFlag)
	}
	if *onlyFlag == "history" {
		// The run history's cost a step: no model, seconds.
		return historyBench()
	}
	if *onlyFlag == "serve" {
		// tact serve under load on its own models (the script backend and
		// the tiny model): under 30 s, only when asked.
		return serveBench(*threadsFlag)
	}
	quants := strings.Split(*quantFlag, ",")
	if len(quants) > 1 && (*onlyFlag != "peers" || *modelFlag != "") {
		return fmt.Errorf("-quant %s: several quantizations only with -only peers and the bench model", *quantFlag)
	}
	path := *modelFlag
	if path == "" {
		var err error
		if path, err = benchModel(quants[0]); err != nil {
			return err
		}
	}
	info, err := models.Inspect(path)
	if err != nil {
		return err
	}
	threads := *threadsFlag
	if threads <= 0 {
		threads = llamacpp.PhysicalCores()
	}
	header(info, threads)
	only := func(part string) bool { return *onlyFlag == "" || *onlyFlag == part }
	if only("backend") {
		if err := backendBench(path, threads); err != nil {
			return err
		}
	}
	if only("concurrency") {
		rs, err := concurrency(path, *threadsFlag)
		if err != nil {
			return err
		}
		reportConcurrency(rs)
	}
	if only("batch") {
		rs, err := batchBench(path, *threadsFlag)
		if err != nil {
			return err
		}
		reportBatch(rs)
	}
	if only("longrun") {
		progress("long run: %d steps with a 6144-token context", longRunSteps)
		small, err := longRun(path, *threadsFlag, 6144)
		if err != nil {
			return err
		}
		progress("long run: the same with a 32768-token context (no compaction)")
		large, err := longRun(path, *threadsFlag, 32768)
		if err != nil {
			return err
		}
		reportLongRun(small, large)
	}
	if only("parallel") {
		if err := parallelBench(path, threads); err != nil {
			return err
		}
	}
	if only("promptcache") {
		r, err := promptCacheBench(path, *threadsFlag)
		if err != nil {
			return err
		}
		reportPromptCache(r)
	}
	if only("history") {
		if err := historyBench(); err != nil {
			return err
		}
	}
	if *onlyFlag == "openai" { // needs ollama: only when asked
		if err := openaiBench(path, threads); err != nil {
			return err
		}
	}
	if *onlyFlag == "peers" { // needs npm and ollama: only when asked
		paths := []string{path}
		for _, q := range quants[1:] {
			p, err := benchModel(q)
			if err != nil {
				return err
			}
			paths = append(paths, p)
		}
		if err := peersBench(paths, threads); err != nil {
			return err
		}
	}
	fmt.Printf("\nLoad average %s before, %s after.\n", loadBefore, loadAvg())
	return nil
}

// backendBench measures the backend in this process: throughput against
// the bare binding, ReAct prefix reuse and the grammar's cost.
func backendBench(path string, threads int) error {
	// A private CPU lock: the backend takes it around every call as tact
	// does (its cost counts), but no other tact process can make it wait.
	lockDir, err := os.MkdirTemp("", "tact-bench-lock-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(lockDir)
	be, err := newBackend(llamacpp.Options{ModelPath: path, Threads: threads, CtxSize: ctxSize, BatchSize: batchSize, GPULayers: *gpuLayersFlag, Verbose: *verboseFlag, CPULockDir: lockDir})
	if err != nil {
		return err
	}
	defer be.Close()
	fmt.Printf("Backend: %s\n\n", be.Describe())
	bare, err := newBare(path, threads)
	if err != nil {
		return err
	}

	filler := newFiller()
	user := "Query: find where the configuration file is parsed and summarize the error handling."
	system := "You are tact, a careful agent. Reply with one JSON action.\n" + filler.text(be, *promptFlag-40)
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}
	text := chatML(msgs)
	sp := llm.Sampling{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42}

	// (a) Throughput. A first round warms up both (page faults on the
	// mmapped weights, graph allocation) and does not count; then backend
	// and bare runs alternate, each going first every other round, and the
	// best of each counts.
	var tp throughput
	for i := range *repeatFlag + 1 {
		if i == 0 {
			progress("warming up")
		} else {
			progress("throughput %d/%d", i, *repeatFlag)
		}
		var promptB, promptBare, genB, genBare float64
		backendRun := func() error {
			be.Reset()
			start := time.Now()
			r, err := be.Complete(context.Background(), llm.Request{Messages: msgs, Sampling: sp, MaxTokens: 1})
			if err != nil {
				return err
			}
			tp.promptTokens = r.Usage.PromptTokens
			promptB = rate(r.Usage.PromptTokens, time.Since(start))
			be.Reset()
			var stamps []time.Time
			r, err = be.Complete(context.Background(), llm.Request{Messages: msgs, Sampling: sp, MaxTokens: *genFlag,
				OnToken: func(string) { stamps = append(stamps, time.Now()) }})
			if err != nil {
				return err
			}
			tp.genTokens = r.Usage.CompletionTokens
			genB = stampRate(stamps)
			return nil
		}
		bareRun := func() error {
			n, d, err := bare.prompt(text, sp)
			if err != nil {
				return err
			}
			promptBare = rate(n, d)
			// As many tokens as the backend generated (it stops at EOG).
			stamps, err := bare.generate(text, sp, cmp.Or(tp.genTokens, *genFlag))
			if err != nil {
				return err
			}
			genBare = stampRate(stamps)
			return nil
		}
		first, second := backendRun, bareRun
		if i%2 == 1 {
			first, second = bareRun, backendRun
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		if i == 0 {
			continue
		}
		tp.promptBackend = max(tp.promptBackend, promptB)
		tp.promptBare = max(tp.promptBare, promptBare)
		tp.genBackend = max(tp.genBackend, genB)
		tp.genBare = max(tp.genBare, genBare)
	}

	// (b) ReAct: with reuse and with the cache cleared before every call,
	// alternating; the fastest run of each counts.
	var withReuse, without reactResult
	for i := range *reactRepeatFlag {
		for _, reuse := range []bool{true, false} {
			progress("ReAct run %d/%d, prefix reuse %v", i+1, *reactRepeatFlag, reuse)
			r, err := react(be, filler.clone(), reuse)
			if err != nil {
				return err
			}
			best := &withReuse
			if !reuse {
				best = &without
			}
			if best.wall == 0 || r.wall < best.wall {
				*best = r
			}
		}
	}

	// (c) Grammar overhead per generated token.
	progress("grammar overhead")
	gr, err := grammarCost(be, msgs)
	if err != nil {
		return err
	}

	report(tp, withReuse, without, gr)
	return nil
}

type throughput struct {
	promptTokens, genTokens   int
	promptBackend, promptBare float64
	genBackend, genBare       float64
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

// stampRate is tokens/s from the median time between consecutive tokens:
// generation alone (the first token closes prompt evaluation), and robust
// to other processes briefly taking the CPU.
func stampRate(stamps []time.Time) float64 {
	d := medianInterval(stamps)
	if d == 0 {
		return 0
	}
	return 1 / d.Seconds()
}

func intervals(stamps []time.Time) []time.Duration {
	var ds []time.Duration
	for i := 1; i < len(stamps); i++ {
		ds = append(ds, stamps[i].Sub(stamps[i-1]))
	}
	return ds
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func medianInterval(stamps []time.Time) time.Duration { return median(intervals(stamps)) }

func chatML(msgs []llm.Message) string {
	var sb strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&sb, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	sb.WriteString("<|im_start|>assistant\n")
	return sb.String()
}

// bare is the baseline: the build's llama.cpp used directly
// (llamacpp.Bare), as a minimal program would, with the same context
// parameters and sampler chain as the backend.
type bare struct{ r *llamacpp.Bare }

func newBare(path string, threads int) (*bare, error) {
	// The same layers as the backend's (its load already found the GPU
	// backend libraries, or warned that none loaded).
	r, err := openBare(llamacpp.BareOptions{ModelPath: path, Threads: threads, CtxSize: ctxSize, BatchSize: batchSize,
		GPULayers: *gpuLayersFlag, Verbose: *verboseFlag})
	if err != nil {
		return nil, err
	}
	return &bare{r}, nil
}

// evalPrompt clears the cache, tokenizes and decodes text, and returns the
// index of the last token's logits.
func (r *bare) evalPrompt(text string) (int, int, error) {
	r.r.Clear()
	toks, err := r.r.Tokenize(text, true, true)
	if err != nil {
		return 0, 0, err
	}
	idx := 0
	for start := 0; start < len(toks); start += batchSize {
		chunk := toks[start:min(start+batchSize, len(toks))]
		batch := make([]llamacpp.BareToken, len(chunk))
		for i, t := range chunk {
			batch[i] = llamacpp.BareToken{Tok: t, Pos: start + i, Logits: start+i == len(toks)-1}
		}
		if err := r.r.Decode(batch); err != nil {
			return 0, 0, err
		}
		idx = len(chunk) - 1
	}
	return len(toks), idx, nil
}

func (r *bare) prompt(text string, s llm.Sampling) (int, time.Duration, error) {
	start := time.Now()
	n, idx, err := r.evalPrompt(text)
	if err != nil {
		return 0, 0, err
	}
	sc, err := r.r.NewSampler(s)
	if err != nil {
		return 0, 0, err
	}
	defer sc.Close()
	tok, err := sc.Sample(idx)
	if err != nil {
		return 0, 0, err
	}
	_ = r.r.Piece(tok)
	return n, time.Since(start), nil
}

func (r *bare) generate(text string, s llm.Sampling, n int) ([]time.Time, error) {
	pos, idx, err := r.evalPrompt(text)
	if err != nil {
		return nil, err
	}
	sc, err := r.r.NewSampler(s)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var stamps []time.Time
	for i := range n {
		tok, err := sc.Sample(idx)
		if err != nil {
			return nil, err
		}
		_ = r.r.Piece(tok)
		stamps = append(stamps, time.Now())
		if i == n-1 {
			break
		}
		if err := r.r.Decode([]llamacpp.BareToken{{Tok: tok, Pos: pos, Logits: true}}); err != nil {
			return nil, err
		}
		pos++
		idx = 0
	}
	return stamps, nil
}

type reactResult struct {
	wall                   time.Duration
	evaluated, cached, gen int
	systemTokens           int
}

// react runs a ReAct-like loop: a long system prompt and the query, then
// per step the model's action (32 tokens) and a ~100-token observation.
func react(be *llamacpp.Backend, f *filler, reuse bool) (reactResult, error) {
	system := "You are tact. Tools: read_file(path), run_command(argv). Reply with one JSON action per turn.\n" + f.text(be, *systemFlag-30)
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: system},
		{Role: llm.RoleUser, Content: "Query: which function parses the configuration, and what does it do on errors?"},
	}
	var res reactResult
	if t, err := be.Tokenize(system); err == nil {
		res.systemTokens = len(t)
	}
	be.Reset()
	start := time.Now()
	for step := range *stepsFlag {
		if !reuse {
			be.Reset()
		}
		r, err := be.Complete(context.Background(), llm.Request{Kind: llm.KindAction, Messages: msgs,
			Sampling: llm.Sampling{Temperature: 0.8, Seed: step}, MaxTokens: 32})
		if err != nil {
			return res, err
		}
		res.evaluated += r.Usage.PromptTokens
		res.cached += r.Usage.CachedTokens
		res.gen += r.Usage.CompletionTokens
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Content: r.Text},
			llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Observation %d: ", step+1) + f.text(be, 100)})
	}
	res.wall = time.Since(start)
	return res, nil
}

type grammarResult struct {
	plain, constrained   float64 // median ms per generated token
	plainN, constrainedN int
	fullPassShare        float64 // tokens for which the grammar ran over the whole vocabulary
}

// grammarCost generates from the same (cached) prompt with and without the
// action schema, alternating, and compares the median time per token.
func grammarCost(be *llamacpp.Backend, msgs []llm.Message) (grammarResult, error) {
	var g grammarResult
	var plain, constrained []time.Duration
	before := be.Stats()
	for seed := range 8 {
		for _, schema := range [][]byte{nil, []byte(actionSchema)} {
			var stamps []time.Time
			_, err := be.Complete(context.Background(), llm.Request{Messages: msgs, Schema: schema, MaxTokens: 48,
				Sampling: llm.Sampling{Temperature: 0.8, Seed: seed},
				OnToken:  func(string) { stamps = append(stamps, time.Now()) }})
			if err != nil {
				return g, err
			}
			if schema == nil {
				plain = append(plain, intervals(stamps)...)
			} else {
				constrained = append(constrained, intervals(stamps)...)
			}
		}
	}
	g.plainN, g.constrainedN = len(plain), len(constrained)
	g.plain = float64(median(plain).Microseconds()) / 1000
	g.constrained = float64(median(constrained).Microseconds()) / 1000

	st := be.Stats()
	g.fullPassShare = float64(st.GrammarFullPasses-before.GrammarFullPasses) / float64(max(st.GrammarTokens-before.GrammarTokens, 1))
	return g, nil
}

// filler makes deterministic English-like text of a given token length.
type filler struct{ i int }

func newFiller() *filler { return &filler{} }

// clone lets repeated runs see the same text.
func (f *filler) clone() *filler { c := *f; return &c }

var words = strings.Fields(`the agent reads files and runs commands inside the workspace only when the
plan allows it; every tool call is checked against the policy before it runs, and its output is
recorded as an observation that later steps can use to decide what to do next until the query is answered`)

func (f *filler) text(be *llamacpp.Backend, tokens int) string {
	var sb strings.Builder
	for {
		for range 12 {
			sb.WriteString(words[f.i%len(words)])
			sb.WriteByte(' ')
			f.i += 7
		}
		sb.WriteString("done.\n")
		if t, err := be.Tokenize(sb.String()); err != nil || len(t) >= tokens {
			return sb.String()
		}
	}
}

func header(info *models.Info, threads int) {
	fmt.Printf("## tact llama.cpp backend benchmark\n\n")
	fmt.Printf("Machine: %s, %d physical cores, %d logical CPUs; %d threads; %s/%s, %s.\n",
		cpuModel(), llamacpp.PhysicalCores(), runtime.NumCPU(), threads, runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Printf("Model: %s (generated: %s, %.0fM parameters, %s, %.0f MB); context %d, batch %d, KV cache f16.\n\n",
		info.Name, info.Architecture, float64(info.ParameterCount)/1e6, info.Quantization, float64(info.Size)/1e6, ctxSize, batchSize)
}

func report(tp throughput, with, without reactResult, g grammarResult) {
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}

	fmt.Printf("| Throughput (best of %d) | tact backend | bare binding loop | ratio | target |\n|---|---|---|---|---|\n", *repeatFlag)
	pr, gr := tp.promptBackend/tp.promptBare, tp.genBackend/tp.genBare
	fmt.Printf("| prompt tokens/s (%d tokens) | %.1f | %.1f | %.3f | ≥ 0.95 %s |\n", tp.promptTokens, tp.promptBackend, tp.promptBare, pr, check(pr >= 0.95))
	fmt.Printf("| generation tokens/s (%d tokens) | %.2f | %.2f | %.3f | ≥ 0.95 %s |\n\n", tp.genTokens, tp.genBackend, tp.genBare, gr, check(gr >= 0.95))

	ratio := without.wall.Seconds() / with.wall.Seconds()
	fmt.Printf("| %d-step ReAct run, %d-token system prompt | wall time | prompt tokens evaluated | reused | generated |\n|---|---|---|---|---|\n", *stepsFlag, with.systemTokens)
	fmt.Printf("| with KV prefix reuse | %.1f s | %d | %d | %d |\n", with.wall.Seconds(), with.evaluated, with.cached, with.gen)
	fmt.Printf("| cache cleared before each call | %.1f s | %d | %d | %d |\n", without.wall.Seconds(), without.evaluated, without.cached, without.gen)
	fmt.Printf("| **speed-up** | **%.2fx** (target ≥ 3x: %s) | | | |\n\n", ratio, check(ratio >= 3))

	fmt.Printf("| Grammar (action schema, oneOf of 3 branches) | median ms per generated token |\n|---|---|\n")
	fmt.Printf("| without schema (%d tokens) | %.2f |\n", g.plainN, g.plain)
	fmt.Printf("| with schema (%d tokens) | %.2f |\n", g.constrainedN, g.constrained)
	fmt.Printf("| overhead per token | %+.2f (%+.1f%%) |\n", g.constrained-g.plain, 100*(g.constrained-g.plain)/g.plain)
	fmt.Printf("| tokens whose first draw the grammar refused (full pass over the vocabulary) | %.0f%% |\n\n", 100*g.fullPassShare)
}

var loadBefore = loadAvg()

// loadAvg is the 1-minute load average: other processes on the machine
// make every number here noisier.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
