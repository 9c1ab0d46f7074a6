// Package llamacpp is tact's embedded llama.cpp backend: the prebuilt
// runtime through tact's own binding (llm/llamalib, no cgo) by default, or
// the llama.cpp of github.com/ollama/ollama/llama compiled in with
// -tags cgollama; see provider.go.
//
// A Backend loads one GGUF model once per process (mmap) and serves
// llm.Request calls, one at a time or Options.Parallel at once, through one
// scheduler (sched.go):
//
//   - the messages are formatted with the model's chat template and
//     tokenized;
//   - the longest common prefix with the tokens already in a KV sequence is
//     kept, the sequence is trimmed there and only the rest is decoded, so
//     step N of a ReAct run evaluates only what step N-1 did not see;
//   - tokens are sampled one by one (temperature, top-k, top-p, min-p, seed),
//     constrained by a GBNF grammar compiled from the request's JSON Schema,
//     until an end-of-generation token or MaxTokens;
//   - ctx is checked between tokens and also aborts a prompt batch midway.
//
// Loading and each call take a turn on the per-user CPU lock
// (internal/cpulock) and a call runs with its turn's share of the CPUs, so
// concurrent tact processes never oversubscribe them; see cpu.go.
package llamacpp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/internal/cpulock"
	"github.com/tactcli/tact/internal/threads"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/chattemplate"
	"github.com/tactcli/tact/models"
)

// Defaults for zero Options fields.
const (
	DefaultCtxSize   = 4096 // when the model does not say
	MaxAutoCtxSize   = 8192 // cap of the automatic context size
	autoCtx          = -1
	DefaultBatchSize = 512
	MaxParallel      = 256 // llama.cpp's LLAMA_MAX_SEQ
)

// Sampling defaults for zero llm.Sampling fields (llama.cpp's own).
const (
	DefaultTopK = 40
	DefaultTopP = 0.95
	DefaultMinP = 0.05
)

// Options configures a Backend. Zero values take the defaults.
type Options struct {
	ModelPath string
	Threads   int // 0: chosen from the free cores (internal/threads)
	CtxSize   int // context window in tokens; 0: the model's own, at most MaxAutoCtxSize
	BatchSize int // prompt tokens decoded per batch; 0: DefaultBatchSize
	GPULayers int // layers offloaded to a GPU backend; 0: CPU only
	// FlashAttn is "on", "off", or "auto"/"" for this provider's faster
	// choice (FlashAttnDefault); quantized KV caches need it on.
	FlashAttn   string
	KVCacheType string // f16 (default), q8_0 or q4_0
	Verbose     bool   // show llama.cpp's own logs on stderr
	// RuntimeDir holds the llama.cpp runtime's libraries (the runtime
	// provider; `tact runtime install` puts them there), its GPU backends
	// included; RuntimeVersion is the llama.cpp version it must report
	// ("": not checked).
	RuntimeDir     string
	RuntimeVersion string
	// LibDir holds GPU backend libraries for the cgo provider
	// (libggml-cuda.so, see scripts/build-cuda.sh); "" means
	// DIR/../lib/ollama where DIR holds the executable. ggml only loads
	// from a path containing "lib/ollama".
	LibDir string
	// NoCPULock runs model work without taking turns with other processes
	// (internal/cpulock); CPULockDir overrides the lock's directory.
	NoCPULock  bool
	CPULockDir string
	// Parallel is how many calls run at once, each in its own sequence
	// with its own CtxSize window; 0 or 1: one at a time. See sched.go.
	Parallel int
	// PromptCacheDir, when set, keeps the KV state of each request's
	// persistable prefix (llm.Request.PersistableMessages) in files there
	// for later processes, and loads it instead of evaluating it; at most
	// PromptCacheMax bytes of files, the least recently used evicted first.
	// See promptcache.go.
	PromptCacheDir string
	PromptCacheMax int64
}

// ErrContextFull is wrapped by errors about a prompt or reply that does not
// fit in the context window (llm.ErrContextFull, named here for callers of
// this package).
var ErrContextFull = llm.ErrContextFull

// Backend is a loaded model. It implements llm.Backend. Calls may come
// from many goroutines: up to Parallel run at once (one by default), the
// others wait their turn (sched.go).
type Backend struct {
	mu         sync.Mutex
	sched      *sched // owns the context: every call goes through it
	opts       Options
	info       *models.Info
	format     chattemplate.Formatter
	model      rtModel
	lc         rtContext
	batch      rtBatch
	gpus       []string
	bos        int                     // BOS token the tokenizer adds, -1 when it adds none
	controls   []string                // texts of control tokens, neutralized in message content
	pc         *promptCache            // nil: no prompt cache on disk
	grammars   map[string]grammarEntry // at most maxGrammars
	grammarUse int64                   // counts grammar lookups, for least recently used
	stats      Stats
	closed     bool
	cpu        *cpulock.Lock // nil: no lock (opted out, unusable, or all on a GPU)
	loadWait   time.Duration // waited for the lock while loading; reported by the first call
	threads    int           // llama.cpp's current thread count (a turn's share)
	call       cpuTurn       // the running call's turn (zero between calls)
	// lastPrompt memoizes the latest formatted prompt's tokens: the executor
	// counts a prompt (CountPrompt) just before sending it.
	lastPrompt struct {
		text   string
		tokens []int
	}
}

// Stats are cumulative counters over a Backend's calls.
type Stats struct {
	Calls           int
	PromptEvaluated int           // prompt tokens decoded
	PromptReused    int           // prompt tokens found in the KV cache
	PromptCopied    int           // of those, copied from another sequence (Parallel > 1)
	Decodes         int           // llama_decode calls
	Generated       int           // tokens generated
	PromptTime      time.Duration // decoding prompts
	GenTime         time.Duration // sampling and decoding generated tokens
	SampleTime      time.Duration // of GenTime, sampling
	// GrammarTokens were generated under a schema's grammar; for
	// GrammarFullPasses of them the drawn token was not allowed and the
	// grammar ran over the whole vocabulary.
	GrammarTokens, GrammarFullPasses int
	// The prompt cache on disk (promptcache.go): prefixes loaded (DiskLoads,
	// DiskLoaded tokens in all) and saved, the time each took, and the size
	// of the last file loaded or saved.
	DiskLoads, DiskLoaded, DiskSaves int
	DiskLoadTime, DiskSaveTime       time.Duration
	DiskFileBytes                    int64
}

// Stats returns the counters so far.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

type grammarEntry struct {
	g    *grammarSampler
	err  error
	used int64 // b.grammarUse when last asked for
}

var (
	_ llm.Backend      = (*Backend)(nil)
	_ llm.TokenCounter = (*Backend)(nil)
	_ llm.ContextSizer = (*Backend)(nil)
)

// New is Load without a context: waiting for the CPU lock cannot be
// cancelled (it lasts at most another process's model call).
func New(opts Options) (*Backend, error) { return Load(context.Background(), opts) }

// Load validates and loads the model and creates its context, holding the
// CPU lock while it does. Model errors wrap models.ErrBadModel; ctx ending
// while it waits for the lock returns ctx's error.
func Load(ctx context.Context, opts Options) (*Backend, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	threadsChosen := chooseThreads(opts.Threads, opts.ModelPath)
	info, err := models.Inspect(opts.ModelPath)
	if err == nil && opts.CtxSize == autoCtx {
		// Auto: the model's own training context, capped so the KV cache
		// of a small machine stays small.
		opts.CtxSize = DefaultCtxSize
		if n := int(info.ContextLength); n > 0 {
			opts.CtxSize = min(n, MaxAutoCtxSize)
		}
		opts.BatchSize = min(opts.BatchSize, opts.CtxSize)
	}
	if err != nil {
		return nil, err
	}
	// Loading computes on one thread (parsing, repacking weights for the
	// CPU): a turn of one slot.
	lock := openCPULock(opts)
	loadTurn, err := takeTurn(ctx, lock, 1)
	if err != nil {
		return nil, err
	}
	defer loadTurn.release()
	if err := prov.init(opts); err != nil {
		return nil, err
	}
	if err := prov.check(info.Architecture); err != nil {
		return nil, fmt.Errorf("model %s: %w", opts.ModelPath, err)
	}

	gpus := prov.gpus()
	layers := opts.GPULayers
	if layers > 0 && len(gpus) == 0 {
		slog.Warn("no GPU backend loaded; running on the CPU", "gpu_layers", layers, "provider", prov.name())
		layers = 0
	}
	model, err := prov.loadModel(opts.ModelPath, layers)
	if err != nil {
		return nil, &loadError{path: opts.ModelPath, reason: fmt.Sprintf("llama.cpp cannot load this %s model (run with -v to see why)", info.Architecture)}
	}
	opts.Threads = <-threadsChosen
	// Each sequence gets its own CtxSize window: Parallel windows in all.
	// Parallel sequences keep llama.cpp's split KV cache (one stream per
	// sequence): see sched.go for why not the unified one. Flash attention
	// is "auto" rather than "enabled": llama.cpp then checks that the
	// devices and the model's head size support it (and a quantized KV
	// cache) and fails cleanly, where "enabled" can hit an assertion.
	lc, err := model.newContext(ctxParams{cells: opts.CtxSize * opts.Parallel, batch: opts.BatchSize, seqs: opts.Parallel,
		threads: opts.Threads, flashAttn: opts.flashAttnOn(), kvType: opts.KVCacheType})
	if err != nil {
		model.free()
		why := "not enough memory?"
		if opts.KVCacheType != "f16" {
			why = "a quantized KV cache needs flash attention support and a head size divisible by 32"
		}
		return nil, fmt.Errorf("model %s: llama.cpp cannot create a context of %d tokens with a %s KV cache: %s (run with -v to see why)", opts.ModelPath, opts.CtxSize*opts.Parallel, opts.KVCacheType, why)
	}
	// One ggml threadpool for the context's life, its workers asleep
	// between decodes (pool level 0): see pool.go.
	if err := lc.attachPool(opts.Threads); err != nil {
		slog.Debug("llama.cpp threadpool not attached; ggml makes one per decode", "err", err)
	}
	batch, err := lc.newBatch(opts.BatchSize)
	if err != nil {
		lc.free()
		model.free()
		return nil, fmt.Errorf("model %s: %w", opts.ModelPath, err)
	}
	b := &Backend{
		opts:     opts,
		info:     info,
		format:   newFormatter(info),
		model:    model,
		lc:       lc,
		batch:    batch,
		gpus:     gpus,
		bos:      -1,
		grammars: map[string]grammarEntry{},
		cpu:      lock,
		loadWait: loadTurn.waited,
		threads:  opts.Threads,
	}
	if lock != nil && layers > 0 && len(gpus) > 0 && layers > model.layers() {
		// Every layer and the output run on the GPU: the CPU only samples,
		// and taking turns would only idle the GPU.
		slog.Debug("model fully offloaded to the GPU; no cpu lock", "gpu_layers", layers)
		b.cpu = nil
	}
	if model.AddBOSToken() {
		if t, err := model.Tokenize("", true, false); err == nil && len(t) == 1 {
			b.bos = t[0]
		}
	}
	b.controls = controlTexts(model)
	if opts.PromptCacheDir != "" {
		b.pc = newPromptCache(b)
	}
	b.sched = newSched(b, opts.Parallel)
	return b, nil
}

// flashAttnOn reports whether the context uses flash attention, once
// withDefaults has resolved "auto".
func (o Options) flashAttnOn() bool { return o.FlashAttn == "on" }

// FlashAttnOn is whether flash attention value v ("auto", "on", "off",
// "") means on for this provider (memory estimates need to know).
func FlashAttnOn(v string) bool {
	switch strings.ToLower(v) {
	case "", "auto":
		return FlashAttnDefault
	}
	return strings.EqualFold(v, "on")
}

func withDefaults(o Options) (Options, error) {
	if o.ModelPath == "" {
		return o, errors.New("no model file given")
	}
	o.Threads = max(o.Threads, 0) // 0: Load chooses (chooseThreads)
	if o.CtxSize <= 0 {
		o.CtxSize = autoCtx
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	if o.Parallel > MaxParallel {
		return o, fmt.Errorf("parallel %d: at most %d sequences", o.Parallel, MaxParallel)
	}
	if o.CtxSize > 0 {
		o.BatchSize = min(o.BatchSize, o.CtxSize)
	}
	switch strings.ToLower(o.FlashAttn) {
	case "", "auto", "on", "off":
	default:
		return o, fmt.Errorf("flash attention %q: want auto, on or off", o.FlashAttn)
	}
	// Resolved once here (FlashAttnOn is the one rule); after this it is
	// never "auto".
	if FlashAttnOn(o.FlashAttn) {
		o.FlashAttn = "on"
	} else {
		o.FlashAttn = "off"
	}
	o.KVCacheType = strings.ToLower(cmp.Or(o.KVCacheType, "f16"))
	switch o.KVCacheType {
	case "f16":
	case "q8_0", "q4_0":
		if !o.flashAttnOn() {
			return o, fmt.Errorf("kv cache type %s needs flash attention (--flash-attention)", o.KVCacheType)
		}
	default:
		return o, fmt.Errorf("kv cache type %q: want f16, q8_0 or q4_0", o.KVCacheType)
	}
	return o, nil
}

// chooseThreads sends the thread count to run with, logging why (the -v
// line): set is --threads when positive; 0 looks at the machine and the
// model file's size (threads.Default), while the model loads, since
// sampling the load takes a few milliseconds.
func chooseThreads(set int, modelPath string) <-chan int {
	ch := make(chan int, 1)
	if set > 0 {
		slog.Info(fmt.Sprintf("llama.cpp threads: %d", set), "why", "set by --threads (or TACT_THREADS)")
		ch <- set
		return ch
	}
	go func() {
		var size int64
		if fi, err := os.Stat(modelPath); err == nil {
			size = fi.Size()
		}
		c := threads.Default(size)
		slog.Info(fmt.Sprintf("llama.cpp threads: %d", c.Threads), "why", c.Reason)
		ch <- c.Threads
	}()
	return ch
}

// loadError is a model llama.cpp refused after models.Inspect accepted it.
type loadError struct{ path, reason string }

func (e *loadError) Error() string        { return "model " + e.path + ": " + e.reason }
func (e *loadError) Is(target error) bool { return target == models.ErrBadModel }

// Describe says what runs the model, for logs and traces.
func (b *Backend) Describe() string {
	o := b.opts
	dev := fmt.Sprintf("CPU, %d threads", o.Threads)
	if len(b.gpus) > 0 && o.GPULayers > 0 {
		dev = fmt.Sprintf("%s (%d layers offloaded) + CPU, %d threads", strings.Join(b.gpus, ", "), o.GPULayers, o.Threads)
	} else if o.GPULayers > 0 {
		dev += " (no GPU backend loaded)"
	}
	fa := o.FlashAttn
	lock := "off"
	if b.cpu != nil {
		lock = fmt.Sprintf("%s (%d slots)", b.cpu.Dir(), b.cpu.Slots())
	}
	par := ""
	if o.Parallel > 1 {
		par = fmt.Sprintf(" x %d sequences", o.Parallel)
	}
	return fmt.Sprintf("%s: %s (%s, %s, %s template) on %s; ctx %d%s, batch %d, kv cache %s, flash attention %s; cpu lock %s",
		prov.name(), b.info.Name, b.info.Architecture, cmp.Or(b.info.Quantization, "?"), b.format.Name(), dev, o.CtxSize, par, o.BatchSize, o.KVCacheType, fa, lock)
}

// Tokenize returns the tokens of text as the model sees it in a prompt
// (special tokens parsed, no BOS added).
func (b *Backend) Tokenize(text string) ([]int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	return b.model.Tokenize(text, false, true)
}

// CountPrompt is the number of tokens msgs make as Complete's prompt.
func (b *Backend) CountPrompt(msgs []llm.Message) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosed
	}
	t, err := b.promptTokens(msgs)
	return len(t), err
}

// CountText is the number of tokens of text in a prompt (special tokens
// are neutralized in message content, so they are counted as plain text).
func (b *Backend) CountText(text string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosed
	}
	t, err := b.model.Tokenize(neutralize(text, b.controls), false, false)
	return len(t), err
}

// ContextSize is the context window of one call in tokens (each of the
// Parallel sequences has one).
func (b *Backend) ContextSize() int { return b.opts.CtxSize }

// Reset empties the KV cache of every sequence no call is using, so the
// next call evaluates its whole prompt.
func (b *Backend) Reset() { b.sched.reset() }

// Close frees the context and the model. The Backend is unusable afterwards.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	// Ends every call in flight; the scheduler takes b.mu to count them.
	b.sched.close()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stats
	slog.Debug("llama backend totals", "calls", st.Calls, "decodes", st.Decodes, "prompt_evaluated", st.PromptEvaluated,
		"prompt_reused", st.PromptReused, "prompt_copied", st.PromptCopied, "generated", st.Generated,
		"prompt_ms", st.PromptTime.Milliseconds(), "gen_ms", st.GenTime.Milliseconds(), "sample_ms", st.SampleTime.Milliseconds(),
		"grammar_tokens", st.GrammarTokens, "grammar_full_passes", st.GrammarFullPasses,
		"disk_loads", st.DiskLoads, "disk_loaded", st.DiskLoaded, "disk_load_ms", st.DiskLoadTime.Milliseconds(),
		"disk_saves", st.DiskSaves, "disk_save_ms", st.DiskSaveTime.Milliseconds())
	for _, e := range b.grammars {
		if e.g != nil {
			e.g.free()
		}
	}
	b.grammars = nil
	b.batch.free()
	b.lc.free()
	b.model.free()
	return nil
}

var errClosed = errors.New("llama backend is closed")

// promptTokens formats and tokenizes the conversation, ending with the
// assistant's turn.
func (b *Backend) promptTokens(msgs []llm.Message) ([]int, error) {
	if len(msgs) == 0 {
		return nil, errors.New("llama backend: request has no messages")
	}
	prompt, err := b.formatMessages(msgs, true)
	if err != nil {
		return nil, fmt.Errorf("model %s: chat template: %w", b.info.Name, err)
	}
	if prompt == b.lastPrompt.text && b.lastPrompt.tokens != nil {
		return b.lastPrompt.tokens, nil
	}
	tokens, err := b.tokenizePrompt(prompt)
	if err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, errors.New("llama backend: empty prompt")
	}
	b.lastPrompt.text, b.lastPrompt.tokens = prompt, tokens
	return tokens, nil
}

// formatMessages is msgs in the chat template, control tokens in their
// content neutralized; addGen opens the assistant's turn.
func (b *Backend) formatMessages(msgs []llm.Message, addGen bool) (string, error) {
	clean := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		clean[i] = llm.Message{Role: m.Role, Content: neutralize(m.Content, b.controls)}
	}
	return b.format.Format(clean, addGen)
}

// tokenizePrompt tokenizes formatted prompt text: special tokens parsed,
// BOS added when the tokenizer adds one.
func (b *Backend) tokenizePrompt(text string) ([]int, error) {
	tokens, err := b.model.Tokenize(text, true, true)
	if err != nil {
		return nil, fmt.Errorf("model %s: tokenize prompt: %w", b.info.Name, err)
	}
	// A template that writes the BOS text itself plus a tokenizer that adds
	// one would give two.
	if b.bos >= 0 && len(tokens) > 1 && tokens[0] == b.bos && tokens[1] == b.bos {
		tokens = tokens[1:]
	}
	return tokens, nil
}

// sampler builds the request's sampler: defaults for zero fields, the
// request's seed (negative: random) and its schema's grammar.
func (b *Backend) sampler(req llm.Request) (*sampler, error) {
	p := resolveSampling(req.Sampling)
	if len(req.Schema) > 0 {
		g, err := b.grammar(req.Schema)
		if err != nil {
			return nil, err
		}
		p.grammar = g
	}
	return newSampler(b.model, p)
}

// resolveSampling applies the defaults to zero fields and maps the seed.
func resolveSampling(s llm.Sampling) samplerParams {
	p := samplerParams{
		temp: max(s.Temperature, 0),
		topK: s.TopK,
		topP: s.TopP,
		minP: s.MinP,
		seed: seed(s.Seed),
	}
	switch {
	case p.topK == 0:
		p.topK = DefaultTopK
	case p.topK < 0:
		p.topK = 0 // llama.cpp: <= 0 is the whole vocabulary
	}
	switch {
	case p.topP == 0:
		p.topP = DefaultTopP
	case p.topP < 0 || p.topP > 1:
		p.topP = 1
	}
	switch {
	case p.minP == 0:
		p.minP = DefaultMinP
	case p.minP < 0:
		p.minP = 0
	}
	return p
}

// seed maps tact's seed to llama.cpp's: negative is random, and 0xFFFFFFFF
// (llama.cpp's "random") is nudged so a fixed seed always stays fixed.
func seed(s int) uint32 {
	if s < 0 {
		return rand.Uint32N(0xFFFFFFFF)
	}
	u := uint32(s)
	if u == 0xFFFFFFFF {
		u--
	}
	return u
}

// grammar returns the grammar of a JSON Schema, converted to GBNF and
// parsed once per schema; a failure is remembered too.
func (b *Backend) grammar(schema []byte) (*grammarSampler, error) {
	key := string(schema)
	if e, ok := b.grammars[key]; ok {
		b.grammarUse++
		e.used = b.grammarUse
		b.grammars[key] = e
		return e.g, e.err
	}
	if len(b.grammars) >= maxGrammars {
		// tact serve's clients send their own tool schemas: keep the most
		// recently used. Calls hold clones, never the evicted original.
		oldest, first := "", true
		for k, e := range b.grammars {
			if first || e.used < b.grammars[oldest].used {
				oldest, first = k, false
			}
		}
		if e := b.grammars[oldest]; e.g != nil {
			e.g.free()
		}
		delete(b.grammars, oldest)
	}
	var e grammarEntry
	if gbnf, err := schemaGBNF(schema); err != nil {
		e.err = fmt.Errorf("llama backend: schema cannot be compiled to a grammar: %v: %.80s", err, schema)
	} else if e.g = newGrammarSampler(b.model, gbnf); e.g == nil {
		e.err = fmt.Errorf("llama backend: llama.cpp cannot parse the grammar of schema %.80s", schema)
	}
	b.grammarUse++
	e.used = b.grammarUse
	b.grammars[key] = e
	return e.g, e.err
}

// maxGrammars bounds the parsed grammars kept, one a distinct schema.
const maxGrammars = 64

// controlTexts lists the texts of the model's control tokens (such as
// <|im_end|>): tokens that the tokenizer produces from their text only
// when parsing special tokens.
func controlTexts(m rtModel) []string {
	var out []string
	for id := range m.NumVocab() {
		piece := m.TokenToPiece(id)
		if len(piece) < 3 || !strings.ContainsAny(piece, "<>[]|") {
			continue
		}
		if t, err := m.Tokenize(piece, false, true); err != nil || len(t) != 1 || t[0] != id {
			continue
		}
		if t, err := m.Tokenize(piece, false, false); err == nil && len(t) == 1 && t[0] == id {
			continue // plain text tokenizes to it too: not special
		}
		out = append(out, piece)
	}
	// Longest first, so no replacement splits a longer control text.
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// neutralize breaks control-token texts inside message content with a zero
// width space, so a file or tool output containing "<|im_end|>" cannot end
// a turn or forge one: the prompt is tokenized with special tokens parsed,
// since the chat template's own markers must be.
func neutralize(s string, controls []string) string {
	for _, c := range controls {
		if strings.Contains(s, c) {
			s = strings.ReplaceAll(s, c, c[:1]+"\u200b"+c[1:])
		}
	}
	return s
}
