package llamacpp

// tact samples with llama.cpp's own sampler objects (a chain of top-k,
// top-p, min-p, temperature and dist, or greedy; a grammar parsed from
// GBNF) driven from Go, for two reasons:
//
//   - Speed under a grammar. A sampler chain holding the grammar runs it
//     over the whole vocabulary before every token. Here the token is
//     drawn without the grammar first and only checked against it; the
//     full grammar pass runs only when that token is not allowed (the
//     approach of llama.cpp's common sampler and of ollama's Go sampler).
//   - No traps: the cgo binding's SamplingParams zero value has TypicalP 0,
//     which keeps only the most likely token, so every seed gave the same
//     text.

import "errors"

// samplerParams is a resolved llm.Sampling.
type samplerParams struct {
	temp       float32
	topK       int
	topP, minP float32
	seed       uint32
	grammar    *grammarSampler // nil: unconstrained
}

// sampler draws tokens for one call. It is not safe for concurrent use.
type sampler struct {
	chain   rtSampler    // top-k, top-p, min-p, temperature, dist (or greedy)
	grammar rtSampler    // nil without a schema
	cands   rtCandidates // the vocabulary's logits
	// passes counts tokens that needed the grammar over the whole
	// vocabulary.
	passes int
}

var errNoToken = errors.New("llama backend: the sampler found no token (no logits)")
var errGrammarStuck = errors.New("llama backend: the grammar allows no token here (the vocabulary cannot express it)")

// chainSteps is llama.cpp's default order of the samplers tact uses (its
// other default samplers are off).
func chainSteps(p samplerParams) []samplerStep {
	if p.temp <= 0 {
		return []samplerStep{{kind: stepGreedy}}
	}
	return []samplerStep{
		{kind: stepTopK, i: p.topK},
		{kind: stepTopP, f: p.topP},
		{kind: stepMinP, f: p.minP},
		{kind: stepTemp, f: p.temp},
		{kind: stepDist, seed: p.seed},
	}
}

func newSampler(m rtModel, p samplerParams) (*sampler, error) {
	s := &sampler{}
	var err error
	if s.cands, err = m.newCandidates(); err != nil {
		return nil, err
	}
	if s.chain, err = m.newChain(chainSteps(p)); err != nil {
		s.free()
		return nil, err
	}
	if p.grammar != nil {
		if s.grammar = p.grammar.pristine.clone(); s.grammar == nil {
			s.free()
			return nil, errors.New("llama backend: cannot copy the grammar")
		}
	}
	return s, nil
}

// sample draws the next token from the logits of entry idx of the last
// batch.
func (s *sampler) sample(lc rtContext, idx int) (int, error) {
	logits := lc.logits(idx)
	if logits == nil {
		return 0, errNoToken
	}
	c := s.cands
	c.fill(logits)
	s.chain.apply(c)
	tok, _, ok := c.selected()
	if !ok {
		return 0, errNoToken
	}
	if s.grammar == nil || s.allowed(tok) {
		return tok, nil
	}
	s.passes++
	c.fill(logits)
	s.grammar.apply(c)
	s.chain.apply(c)
	if tok, logit, ok := c.selected(); ok && !refused(logit) {
		return tok, nil
	}
	// A sampler kept a disallowed token (all probabilities ~0): take the
	// best allowed one.
	c.fill(logits)
	s.grammar.apply(c)
	best, bestLogit := -1, float32(0)
	c.each(func(tok int, logit float32) {
		if !refused(logit) && (best < 0 || logit > bestLogit) {
			best, bestLogit = tok, logit
		}
	})
	if best < 0 {
		return 0, errGrammarStuck
	}
	return best, nil
}

// allowed asks the grammar about tok alone.
func (s *sampler) allowed(tok int) bool {
	s.cands.one(tok)
	s.grammar.apply(s.cands)
	allowed := true
	s.cands.each(func(_ int, logit float32) { allowed = !refused(logit) })
	return allowed
}

// accept advances the samplers; end-of-generation tokens never reach the
// grammar.
func (s *sampler) accept(tok int, eog bool) {
	if s.grammar != nil && !eog {
		s.grammar.accept(tok)
	}
	s.chain.accept(tok)
}

// fullPasses counts tokens for which the grammar ran over the whole
// vocabulary (the drawn token was not allowed).
func (s *sampler) fullPasses() int { return s.passes }

func (s *sampler) free() {
	if s.chain != nil {
		s.chain.free()
	}
	if s.grammar != nil {
		s.grammar.free()
	}
	if s.cands != nil {
		s.cands.free()
	}
	*s = sampler{}
}

// grammarSampler is a schema's grammar, parsed once; calls clone it.
type grammarSampler struct{ pristine rtSampler }

func newGrammarSampler(m rtModel, gbnf string) *grammarSampler {
	g := m.newGrammar(gbnf)
	if g == nil {
		return nil
	}
	return &grammarSampler{g}
}

func (g *grammarSampler) free() { g.pristine.free() }
