//go:build !cgollama

package llamacpp

// The runtime provider (provider.go): llm/llamalib over the prebuilt
// llama.cpp libraries in Options.RuntimeDir. No cgo.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/tactcli/tact/llm/llamalib"
)

// ProviderName is the llama.cpp this build runs: "runtime" here, "cgo"
// with -tags cgollama.
const ProviderName = "runtime"

// FlashAttnDefault is what --flash-attention auto means here: on (as
// llama.cpp's own auto: used where the devices and head size allow). The
// runtime's CPU flash attention does less work than its plain attention
// at every context length measured (an 8-step ReAct run with a 1,500-token
// system prompt, one thread: 22% less CPU time with the cache cleared
// before each call, 23% with prefix reuse); docs/inference.md.
const FlashAttnDefault = true

var prov provider = &libProvider{}

type libProvider struct{ lib *llamalib.Lib }

func (p *libProvider) init(o Options) error {
	if o.RuntimeDir == "" {
		return fmt.Errorf("%w: no llama.cpp runtime installed (run tact runtime install)", ErrNoRuntime)
	}
	lib, err := llamalib.Open(o.RuntimeDir, o.RuntimeVersion)
	if err != nil {
		if errors.Is(err, llamalib.ErrNotInstalled) {
			return &runtimeError{kind: ErrNoRuntime, err: err, hint: "run tact runtime install"}
		}
		return &runtimeError{kind: ErrBadRuntime, err: err, hint: "reinstall it: tact runtime install --force"}
	}
	p.lib = lib
	lib.SetLogs(o.Verbose)
	return nil
}

// runtimeError is llamalib's one line (which names what is wrong) with the
// way out; it is ErrNoRuntime or ErrBadRuntime too.
type runtimeError struct {
	kind, err error
	hint      string
}

func (e *runtimeError) Error() string   { return e.err.Error() + " (" + e.hint + ")" }
func (e *runtimeError) Unwrap() []error { return []error{e.kind, e.err} }

func (p *libProvider) setLogs(verbose bool) {
	if p.lib != nil {
		p.lib.SetLogs(verbose)
	}
}

func (p *libProvider) name() string {
	if p.lib == nil {
		return "llama.cpp runtime (not loaded)"
	}
	cpu, _ := p.lib.CPUBackend()
	return fmt.Sprintf("llama.cpp %s runtime (%s, %s)", p.lib.Version(), p.lib.Dir(), cpu)
}

func (p *libProvider) buildID() string {
	v, commit := p.lib.GGMLVersion()
	cpu, _ := p.lib.CPUBackend()
	return fmt.Sprintf("llama.cpp runtime %s, ggml %s %s, %s, %s, %s/%s", p.lib.Version(), v, commit, p.lib.Dir(), cpu, runtime.GOOS, runtime.GOARCH)
}

func (p *libProvider) gpus() []string {
	var out []string
	for _, d := range p.lib.GPUs() {
		out = append(out, strings.TrimSpace(d.Name+" "+d.Description))
	}
	return out
}

// check: the runtime knows the architectures it knows; a model it cannot
// load fails at load.
func (p *libProvider) check(string) error { return nil }

func (p *libProvider) loadModel(path string, gpuLayers int) (rtModel, error) {
	m, err := p.lib.LoadModel(path, llamalib.ModelOptions{GPULayers: gpuLayers})
	if err != nil {
		return nil, err
	}
	return &libModel{l: p.lib, m: m}, nil
}

type libModel struct {
	l *llamalib.Lib
	m *llamalib.Model
}

func (m *libModel) Tokenize(text string, addSpecial, parseSpecial bool) ([]int, error) {
	t, err := m.m.Tokenize(text, addSpecial, parseSpecial)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(t))
	for i, v := range t {
		out[i] = int(v)
	}
	return out, nil
}

func (m *libModel) TokenToPiece(tok int) string {
	// As the cgo binding has it: a piece's trailing NULs are dropped.
	return strings.TrimRight(m.m.TokenToPiece(int32(tok), true), "\x00")
}

func (m *libModel) NumVocab() int           { return m.m.NVocab() }
func (m *libModel) TokenIsEog(tok int) bool { return m.m.IsEOG(int32(tok)) }
func (m *libModel) AddBOSToken() bool       { return m.m.AddBOS() }
func (m *libModel) layers() int             { return m.m.NLayer() }
func (m *libModel) free()                   { m.m.Free() }

func (m *libModel) newContext(p ctxParams) (rtContext, error) {
	o := llamalib.ContextOptions{CtxSize: p.cells, BatchSize: p.batch * p.seqs, UBatch: p.batch, Seqs: p.seqs,
		Threads: p.threads, FlashAttn: llamalib.FlashAttnDisabled, KVUnified: p.unified}
	if p.flashAttn {
		o.FlashAttn = llamalib.FlashAttnAuto
	}
	switch p.kvType {
	case "q8_0":
		o.TypeK, o.TypeV = llamalib.TypeQ8_0, llamalib.TypeQ8_0
	case "q4_0":
		o.TypeK, o.TypeV = llamalib.TypeQ4_0, llamalib.TypeQ4_0
	}
	c, err := m.m.NewContext(o)
	if err != nil {
		return nil, err
	}
	return &libContext{c: c, l: m.l}, nil
}

func (m *libModel) newChain(steps []samplerStep) (rtSampler, error) {
	l := m.l
	chain := l.NewChain()
	if chain == nil {
		return nil, errors.New("llama.cpp cannot make a sampler chain")
	}
	for _, s := range steps {
		var one *llamalib.Sampler
		switch s.kind {
		case stepGreedy:
			one = l.Greedy()
		case stepDist:
			one = l.Dist(s.seed)
		case stepTopK:
			one = l.TopK(s.i)
		case stepTopP:
			one = l.TopP(s.f, 0)
		case stepMinP:
			one = l.MinP(s.f, 0)
		case stepTemp:
			one = l.Temp(s.f)
		}
		if one == nil {
			chain.Free()
			return nil, errors.New("llama.cpp cannot make a sampler")
		}
		chain.Add(one)
	}
	return libSampler{chain}, nil
}

func (m *libModel) newGrammar(gbnf string) rtSampler {
	g, err := m.m.NewGrammar(gbnf, "root")
	if err != nil {
		return nil
	}
	return libSampler{g}
}

func (m *libModel) newCandidates() (rtCandidates, error) {
	c, err := m.l.NewCandidates(m.m.NVocab())
	if err != nil {
		return nil, err
	}
	return libCandidates{c}, nil
}

type libContext struct {
	l *llamalib.Lib
	c *llamalib.Context
}

func (c *libContext) Decode(b rtBatch) error {
	err := c.c.Decode(b.(*libBatch).b)
	switch {
	case errors.Is(err, llamalib.ErrKVFull):
		return errKVFull
	case errors.Is(err, llamalib.ErrAborted):
		return errAborted
	}
	return err
}

func (c *libContext) KvCacheSeqRm(seq, p0, p1 int) bool { return c.c.SeqRm(seq, p0, p1) }
func (c *libContext) KvCacheSeqCp(src, dst, p0, p1 int) { c.c.SeqCp(src, dst, p0, p1) }
func (c *libContext) logits(i int) []float32            { return c.c.LogitsIth(i) }
func (c *libContext) setThreads(n int)                  { c.c.SetThreads(n, n) }
func (c *libContext) attachPool(n int) error            { return c.c.AttachThreadpool(n, 0) }
func (c *libContext) setAbort(on bool)                  { c.c.SetAbort(on) }
func (c *libContext) aborting() bool                    { return c.c.Aborting() }
func (c *libContext) stateSize(seq int) int             { return c.c.StateSeqSize(seq) }
func (c *libContext) stateGet(seq int, buf []byte) int  { return c.c.StateSeqGet(seq, buf) }
func (c *libContext) stateSet(seq int, buf []byte) int  { return c.c.StateSeqSet(seq, buf) }
func (c *libContext) shape() (int, int)                 { return c.c.NCtx(), c.c.NSeqMax() }
func (c *libContext) free()                             { c.c.Free() }

func (c *libContext) newBatch(size int) (rtBatch, error) {
	b, err := c.l.NewBatch(size, 1)
	if err != nil {
		return nil, err
	}
	return &libBatch{b}, nil
}

type libBatch struct{ b *llamalib.Batch }

func (b *libBatch) Clear()         { b.b.Clear() }
func (b *libBatch) NumTokens() int { return b.b.Len() }
func (b *libBatch) free()          { b.b.Free() }
func (b *libBatch) Add(tok, pos int, logits bool, seq int) {
	b.b.Add(int32(tok), pos, logits, seq)
}

type libSampler struct{ s *llamalib.Sampler }

func (s libSampler) apply(c rtCandidates) { s.s.Apply(c.(libCandidates).c) }
func (s libSampler) accept(tok int)       { s.s.Accept(int32(tok)) }
func (s libSampler) sample(lc rtContext, i int) int {
	return int(s.s.Sample(lc.(*libContext).c, i))
}
func (s libSampler) free() { s.s.Free() }
func (s libSampler) clone() rtSampler {
	if c := s.s.Clone(); c != nil {
		return libSampler{c}
	}
	return nil
}

type libCandidates struct{ c *llamalib.Candidates }

func (c libCandidates) fill(logits []float32) { c.c.Fill(logits) }
func (c libCandidates) one(tok int)           { c.c.One(int32(tok)) }
func (c libCandidates) free()                 { c.c.Free() }
func (c libCandidates) selected() (int, float32, bool) {
	d, ok := c.c.Selected()
	return int(d.ID), d.Logit, ok
}
func (c libCandidates) each(f func(tok int, logit float32)) {
	for _, d := range c.c.Data() {
		f(int(d.ID), d.Logit)
	}
}
