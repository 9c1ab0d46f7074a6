package llamacpp

// One backend, two providers. Everything in this package above the
// llama.cpp calls (the scheduler, slots and prefix reuse, sampling, the
// prompt cache, the CPU lock, token counting) is one body of code over the
// small set of llama.cpp primitives below. A provider implements them:
//
//   - the runtime (provider_lib.go, the default build): tact's own binding,
//     llm/llamalib, over the prebuilt llama.cpp libraries of the pinned
//     runtime (`tact runtime install`), without cgo;
//   - cgo (provider_cgo.go, built with -tags cgollama, `make CGO_LLAMA=1`):
//     the llama.cpp that github.com/ollama/ollama v0.17.4 vendors, compiled
//     in. It stays while the runtime proves itself (docs/inference.md).
//
// A process has one provider: the cgo build links llama.cpp's symbols into
// the binary, where they would interpose on a runtime loaded beside them.

import (
	"errors"
	"math"
)

// Errors a context's decode returns besides its own.
var (
	errKVFull   = errors.New("llama.cpp: no room in the KV cache")
	errAborted  = errors.New("llama.cpp: decode aborted")
	errNoMemory = errors.New("llama backend: out of memory")
)

// Errors Load wraps when the runtime provider has no usable runtime.
var (
	// ErrNoRuntime: no runtime is installed where tact looks.
	ErrNoRuntime = errors.New("llama.cpp runtime missing")
	// ErrBadRuntime: the runtime does not load, is another release or
	// does not suit this CPU.
	ErrBadRuntime = errors.New("llama.cpp runtime unusable")
)

// provider is one llama.cpp binding (see the file's comment). Only one is
// compiled in: prov.
type provider interface {
	// name says which provider and llama.cpp this is ("runtime llama.cpp
	// 0.5.0-dev (DIR, libggml-cpu-zen4.so)"), for Describe.
	name() string
	// buildID names the llama.cpp that computes KV states, for the prompt
	// cache's key: a state saved by one llama.cpp is never loaded by
	// another.
	buildID() string
	// init loads llama.cpp and its backends once per process (later calls
	// return the first's result); logs follow verbose from then on.
	init(o Options) error
	setLogs(verbose bool)
	// gpus names the GPU devices a backend found ("CUDA0 NVIDIA H100").
	gpus() []string
	// check refuses, before loading, a model this llama.cpp cannot run
	// (by its general.architecture), in one line naming the way out.
	check(arch string) error
	loadModel(path string, gpuLayers int) (rtModel, error)
}

// rtModel is a loaded model.
type rtModel interface {
	Tokenize(text string, addSpecial, parseSpecial bool) ([]int, error)
	TokenToPiece(tok int) string // special tokens rendered
	NumVocab() int
	TokenIsEog(tok int) bool
	AddBOSToken() bool
	layers() int
	newContext(p ctxParams) (rtContext, error)
	// newChain is a sampler chain of steps, in order.
	newChain(steps []samplerStep) (rtSampler, error)
	// newGrammar parses a GBNF grammar (start symbol root); nil when
	// llama.cpp cannot parse it.
	newGrammar(gbnf string) rtSampler
	newCandidates() (rtCandidates, error)
	free()
}

// ctxParams is what a context is made with.
type ctxParams struct {
	cells     int // KV cells in all: Parallel windows of CtxSize
	batch     int // tokens computed at once (n_ubatch); n_batch is batch*seqs
	seqs      int
	threads   int
	flashAttn bool // auto: llama.cpp checks the devices and the head size
	kvType    string
	unified   bool // one KV buffer for every sequence (the bench's probe)
}

// rtContext is a llama_context: its KV sequences and the compute.
type rtContext interface {
	// Decode computes b; errKVFull, errAborted or another error leave
	// the cache as llama.cpp left it (the caller trims its sequences).
	Decode(b rtBatch) error
	KvCacheSeqRm(seq, p0, p1 int) bool
	KvCacheSeqCp(src, dst, p0, p1 int)
	// logits are output i's logits of the last decode, in llama.cpp's
	// memory (nil: none). The first call after a decode puts llama.cpp's
	// outputs in order; later ones may run concurrently.
	logits(i int) []float32
	setThreads(n int)
	// attachPool gives the context one ggml threadpool of n workers for
	// its life, at polling level 0 (they sleep between decodes rather than
	// spin); setThreads may then use up to n. Freed with the context.
	attachPool(n int) error
	// setAbort raises or clears the flag llama.cpp polls while computing
	// (safe from any goroutine); aborting reads it.
	setAbort(on bool)
	aborting() bool
	stateSize(seq int) int
	stateGet(seq int, buf []byte) int
	stateSet(seq int, buf []byte) int
	shape() (cells, seqs int)
	newBatch(size int) (rtBatch, error)
	free()
}

// rtBatch is a batch of tokens, each in one sequence.
type rtBatch interface {
	Clear()
	Add(tok, pos int, logits bool, seq int)
	NumTokens() int
	free()
}

// samplerStep is one step of a sampler chain.
type samplerStep struct {
	kind samplerKind
	i    int
	f    float32
	seed uint32
}

type samplerKind int

const (
	stepGreedy samplerKind = iota
	stepDist               // seed
	stepTopK               // i
	stepTopP               // f (min keep 0)
	stepMinP               // f (min keep 0)
	stepTemp               // f
)

// rtSampler is a llama_sampler (a chain or a grammar).
type rtSampler interface {
	apply(c rtCandidates)
	accept(tok int)
	// sample is llama_sampler_sample: apply over output i's logits,
	// accept the token drawn and return it (negative: none).
	sample(lc rtContext, i int) int
	clone() rtSampler // nil when llama.cpp cannot copy it
	free()
}

// rtCandidates is a llama_token_data_array over the vocabulary, in memory
// llama.cpp may keep pointers into during a call.
type rtCandidates interface {
	// fill sets every token with its logit, none selected.
	fill(logits []float32)
	// one sets the single token tok (logit 0), to ask a grammar about it.
	one(tok int)
	// selected is the token a chain selected; false when none.
	selected() (tok int, logit float32, ok bool)
	// each calls f with every entry as the last sampler left them.
	each(f func(tok int, logit float32))
	free()
}

// refused reports a logit a grammar set to -inf.
func refused(logit float32) bool { return math.IsInf(float64(logit), -1) }
