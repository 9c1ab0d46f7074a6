package llamacpp

// Bare: the build's llama.cpp driven directly, without the scheduler, the
// CPU lock, the grammar or the prompt cache. scripts/bench measures the
// backend against it (tact's overhead over its binding) and probes batch
// shapes with it; nothing else uses it.

import (
	"errors"
	"fmt"

	"github.com/tactcli/tact/llm"
)

// BareOptions configures OpenBare.
type BareOptions struct {
	ModelPath      string
	RuntimeDir     string // as Options
	RuntimeVersion string
	LibDir         string
	Threads        int
	CtxSize        int // KV cells in all
	BatchSize      int
	Seqs           int  // sequences; 0: 1
	Unified        bool // one KV buffer for every sequence
	GPULayers      int
	Verbose        bool
	// FlashAttn as Options': "" or "auto" is what a Backend would use, so
	// the bench's bare loop and tact's calls compute the same graph.
	FlashAttn string
}

// Bare is a model and one context of the build's provider.
type Bare struct {
	model rtModel
	lc    rtContext
	batch rtBatch
}

// BareToken is one entry of a batch.
type BareToken struct {
	Tok, Pos, Seq int
	Logits        bool
}

// OpenBare loads the model and creates its context.
func OpenBare(o BareOptions) (*Bare, error) {
	if err := prov.init(Options{RuntimeDir: o.RuntimeDir, RuntimeVersion: o.RuntimeVersion, LibDir: o.LibDir, Verbose: o.Verbose}); err != nil {
		return nil, err
	}
	layers := o.GPULayers
	if len(prov.gpus()) == 0 {
		layers = 0
	}
	m, err := prov.loadModel(o.ModelPath, layers)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", o.ModelPath, err)
	}
	seqs := max(o.Seqs, 1)
	lc, err := m.newContext(ctxParams{cells: o.CtxSize, batch: o.BatchSize, seqs: seqs, threads: max(o.Threads, 1), kvType: "f16", unified: o.Unified,
		flashAttn: FlashAttnOn(o.FlashAttn)})
	if err != nil {
		m.free()
		return nil, err
	}
	b, err := lc.newBatch(o.BatchSize)
	if err != nil {
		lc.free()
		m.free()
		return nil, err
	}
	return &Bare{model: m, lc: lc, batch: b}, nil
}

// Tokenize is llama.cpp's tokenizer (addSpecial: BOS as the model has it;
// parseSpecial: special tokens' texts become them).
func (r *Bare) Tokenize(text string, addSpecial, parseSpecial bool) ([]int, error) {
	return r.model.Tokenize(text, addSpecial, parseSpecial)
}

// Piece is a token's text.
func (r *Bare) Piece(tok int) string { return r.model.TokenToPiece(tok) }

// Clear empties every sequence.
func (r *Bare) Clear() { r.lc.KvCacheSeqRm(-1, -1, -1) }

// Copy makes dst a copy of src's cells.
func (r *Bare) Copy(src, dst int) { r.lc.KvCacheSeqCp(src, dst, -1, -1) }

// Decode computes one batch of toks (at most BatchSize).
func (r *Bare) Decode(toks []BareToken) error {
	r.batch.Clear()
	for _, t := range toks {
		r.batch.Add(t.Tok, t.Pos, t.Logits, t.Seq)
	}
	return r.lc.Decode(r.batch)
}

// Logits are output i's logits of the last decode (nil: none).
func (r *Bare) Logits(i int) []float32 { return r.lc.logits(i) }

// BareSampler is llama.cpp's sampler chain as the backend builds it for s
// (no grammar), sampled as a minimal program would: llama_sampler_sample.
type BareSampler struct {
	r     *Bare
	chain rtSampler
}

// NewSampler makes the chain for s (zero fields take the backend's
// defaults; a negative seed is random).
func (r *Bare) NewSampler(s llm.Sampling) (*BareSampler, error) {
	p := resolveSampling(s)
	chain, err := r.model.newChain(chainSteps(p))
	if err != nil {
		return nil, err
	}
	return &BareSampler{r: r, chain: chain}, nil
}

// Sample draws from output i of the last decode and accepts the token.
func (s *BareSampler) Sample(i int) (int, error) {
	tok := s.chain.sample(s.r.lc, i)
	if tok < 0 {
		return 0, errors.New("llama.cpp sampled no token")
	}
	return tok, nil
}

// Close frees the chain.
func (s *BareSampler) Close() { s.chain.free() }

// Close frees the context and the model.
func (r *Bare) Close() {
	r.batch.free()
	r.lc.free()
	r.model.free()
}
