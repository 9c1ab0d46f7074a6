package llamalib

import (
	"errors"
	"unsafe"
)

// Sampler is a llama_sampler: one step (top-k, a grammar, ...) or a chain
// of them. It is not safe for concurrent use.
type Sampler struct {
	l *Lib
	p unsafe.Pointer
}

func (l *Lib) sampler(p unsafe.Pointer) *Sampler {
	if p == nil {
		return nil
	}
	return &Sampler{l: l, p: p}
}

// NewChain is an empty sampler chain (performance counters off).
func (l *Lib) NewChain() *Sampler {
	p := l.a.llamaChainDefaultParams()
	p.NoPerf = true
	return l.sampler(l.a.llamaSamplerChainInit(p))
}

// Add appends s to chain c, which owns it from then on (s is spent).
func (c *Sampler) Add(s *Sampler) {
	c.l.a.llamaSamplerChainAdd(c.p, s.p)
	s.p = nil
}

// Greedy picks the most likely token.
func (l *Lib) Greedy() *Sampler { return l.sampler(l.a.llamaSamplerGreedy()) }

// Dist draws a token from the distribution with seed (0xFFFFFFFF: random).
func (l *Lib) Dist(seed uint32) *Sampler { return l.sampler(l.a.llamaSamplerDist(seed)) }

// TopK keeps the k most likely tokens (k <= 0: all).
func (l *Lib) TopK(k int) *Sampler { return l.sampler(l.a.llamaSamplerTopK(int32(k))) }

// TopP keeps the most likely tokens whose probabilities add up to p.
func (l *Lib) TopP(p float32, minKeep int) *Sampler {
	return l.sampler(l.a.llamaSamplerTopP(p, uintptr(minKeep)))
}

// MinP drops tokens less likely than p times the most likely one.
func (l *Lib) MinP(p float32, minKeep int) *Sampler {
	return l.sampler(l.a.llamaSamplerMinP(p, uintptr(minKeep)))
}

// Temp divides the logits by t (t <= 0: only the most likely keeps its).
func (l *Lib) Temp(t float32) *Sampler { return l.sampler(l.a.llamaSamplerTemp(t)) }

// Penalties penalizes the last lastN tokens accepted: repeat (1: off),
// frequency and presence (0: off).
func (l *Lib) Penalties(nVocab, lastN int, repeat, freq, present float32) *Sampler {
	return l.sampler(l.a.llamaSamplerPenalties(int32(nVocab), int32(lastN), repeat, freq, present))
}

// NewGrammar parses a GBNF grammar (start symbol root) into a sampler that
// sets the logits of the tokens it does not allow to -inf.
func (m *Model) NewGrammar(gbnf, root string) (*Sampler, error) {
	s := m.l.sampler(m.l.a.llamaSamplerInitGrammar(m.vocab, cString(gbnf), cString(root)))
	if s == nil {
		return nil, errors.New("llama.cpp cannot parse the grammar")
	}
	return s, nil
}

// Clone copies the sampler with its state (nil when it cannot).
func (s *Sampler) Clone() *Sampler { return s.l.sampler(s.l.a.llamaSamplerClone(s.p)) }

// Apply runs the sampler over cands (a chain ending in Dist or Greedy
// selects a token: cands.Selected).
func (s *Sampler) Apply(cands *Candidates) { s.l.a.llamaSamplerApply(s.p, cands.arr) }

// Accept tells the sampler tok was chosen (advances a grammar).
func (s *Sampler) Accept(tok int32) { s.l.a.llamaSamplerAccept(s.p, tok) }

// Reset returns the sampler to its initial state.
func (s *Sampler) Reset() { s.l.a.llamaSamplerReset(s.p) }

// Sample is llama_sampler_sample: apply over the logits of ctx's i-th
// output, accept the token chosen and return it.
func (s *Sampler) Sample(ctx *Context, i int) int32 {
	return s.l.a.llamaSamplerSample(s.p, ctx.p, int32(i))
}

// Free releases the sampler (not one added to a chain).
func (s *Sampler) Free() {
	if s != nil && s.p != nil {
		s.l.a.llamaSamplerFree(s.p)
		s.p = nil
	}
}

// Candidates is a llama_token_data_array over the whole vocabulary, in C
// memory (samplers keep pointers into it during a call and may point it
// elsewhere). Not safe for concurrent use.
type Candidates struct {
	l    *Lib
	mem  unsafe.Pointer
	arr  *TokenDataArray // in mem
	data []TokenData     // in mem, after arr
}

// NewCandidates allocates an array of n tokens.
func (l *Lib) NewCandidates(n int) (*Candidates, error) {
	head := unsafe.Sizeof(TokenDataArray{})
	mem := l.malloc(head + uintptr(n)*unsafe.Sizeof(TokenData{}))
	if mem == nil {
		return nil, errors.New("out of memory")
	}
	return &Candidates{l: l, mem: mem, arr: (*TokenDataArray)(mem),
		data: unsafe.Slice((*TokenData)(unsafe.Add(mem, head)), n)}, nil
}

// Fill sets the array to every token with its logit from logits (the
// first len(Data) of them), unsorted, none selected.
func (c *Candidates) Fill(logits []float32) {
	d := c.data
	logits = logits[:len(d)]
	for i := range d {
		d[i] = TokenData{ID: int32(i), Logit: logits[i]}
	}
	c.Reset(len(d))
}

// One sets the array to the single token tok with logit 0, for asking a
// grammar whether it allows tok (its logit stays finite).
func (c *Candidates) One(tok int32) {
	c.data[0] = TokenData{ID: tok}
	c.Reset(1)
}

// Reset points the array at the first n entries of Data, unsorted, none
// selected.
func (c *Candidates) Reset(n int) {
	*c.arr = TokenDataArray{Data: unsafe.Pointer(&c.data[0]), Size: uintptr(n), Selected: -1}
}

// Data is the array's entries as a sampler left them (its Data pointer
// and Size, which may differ from Fill's).
func (c *Candidates) Data() []TokenData {
	if c.arr.Data == nil || c.arr.Size == 0 {
		return nil
	}
	return unsafe.Slice((*TokenData)(c.arr.Data), c.arr.Size)
}

// Selected is the entry a sampler selected; false when none is.
func (c *Candidates) Selected() (TokenData, bool) {
	i := c.arr.Selected
	if i < 0 || uintptr(i) >= c.arr.Size {
		return TokenData{}, false
	}
	return c.Data()[i], true
}

// Free releases the array.
func (c *Candidates) Free() {
	if c.mem != nil {
		c.l.free(c.mem)
		c.mem, c.arr, c.data = nil, nil, nil
	}
}
