package llamacpp

// tact samples with llama.cpp's own sampler objects (public C API, declared
// here like in clog.go) rather than the binding's SamplingContext, for two
// reasons:
//
//   - Speed under a grammar. The binding's sampler runs the grammar over the
//     whole vocabulary before every token. Here the token is drawn without
//     the grammar first and only checked against it; the full grammar pass
//     runs only when that token is not allowed (the approach of llama.cpp's
//     newer common sampler and of ollama's Go sampler).
//   - No traps: the binding's SamplingParams zero value has TypicalP 0, which
//     keeps only the most likely token, so every seed gave the same text.

/*
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct llama_context;
struct llama_model;
struct llama_vocab;
struct llama_sampler;

typedef struct { int32_t id; float logit; float p; } tact_token_data;
typedef struct { tact_token_data * data; size_t size; int64_t selected; bool sorted; } tact_token_data_array;
typedef struct { bool no_perf; } tact_chain_params;

struct llama_sampler * llama_sampler_chain_init(tact_chain_params params);
void llama_sampler_chain_add(struct llama_sampler * chain, struct llama_sampler * smpl);
struct llama_sampler * llama_sampler_init_greedy(void);
struct llama_sampler * llama_sampler_init_dist(uint32_t seed);
struct llama_sampler * llama_sampler_init_top_k(int32_t k);
struct llama_sampler * llama_sampler_init_top_p(float p, size_t min_keep);
struct llama_sampler * llama_sampler_init_min_p(float p, size_t min_keep);
struct llama_sampler * llama_sampler_init_temp(float t);
struct llama_sampler * llama_sampler_init_grammar(const struct llama_vocab * vocab, const char * grammar_str, const char * grammar_root);
struct llama_sampler * llama_sampler_clone(const struct llama_sampler * smpl);
void llama_sampler_accept(struct llama_sampler * smpl, int32_t token);
void llama_sampler_apply(struct llama_sampler * smpl, tact_token_data_array * cur_p);
void llama_sampler_free(struct llama_sampler * smpl);
float * llama_get_logits_ith(struct llama_context * ctx, int32_t i);
int32_t llama_vocab_n_tokens(const struct llama_vocab * vocab);

typedef struct {
	struct llama_sampler * chain;   // top-k, top-p, min-p, temperature, dist (or greedy)
	struct llama_sampler * grammar; // NULL without a schema
	tact_token_data * cur;
	int32_t n_vocab;
	int32_t full_passes;            // tokens that needed the grammar over the whole vocabulary
} tact_sampler;

// tact_sampler_new takes ownership of grammar (may be NULL).
static tact_sampler * tact_sampler_new(const struct llama_vocab * vocab, int32_t top_k, float top_p, float min_p,
		float temp, uint32_t seed, struct llama_sampler * grammar) {
	tact_sampler * s = calloc(1, sizeof(tact_sampler));
	if (s == NULL) {
		return NULL;
	}
	s->n_vocab = llama_vocab_n_tokens(vocab);
	s->cur = malloc(sizeof(tact_token_data) * (size_t) s->n_vocab);
	tact_chain_params params = { true };
	s->chain = llama_sampler_chain_init(params);
	if (s->cur == NULL || s->chain == NULL) {
		free(s->cur);
		free(s);
		return NULL;
	}
	if (temp <= 0) {
		llama_sampler_chain_add(s->chain, llama_sampler_init_greedy());
	} else {
		// llama.cpp's default order (its other default samplers are off).
		llama_sampler_chain_add(s->chain, llama_sampler_init_top_k(top_k));
		llama_sampler_chain_add(s->chain, llama_sampler_init_top_p(top_p, 0));
		llama_sampler_chain_add(s->chain, llama_sampler_init_min_p(min_p, 0));
		llama_sampler_chain_add(s->chain, llama_sampler_init_temp(temp));
		llama_sampler_chain_add(s->chain, llama_sampler_init_dist(seed));
	}
	s->grammar = grammar;
	return s;
}

static void tact_sampler_free(tact_sampler * s) {
	if (s == NULL) {
		return;
	}
	llama_sampler_free(s->chain);
	if (s->grammar != NULL) {
		llama_sampler_free(s->grammar);
	}
	free(s->cur);
	free(s);
}

static void tact_fill(tact_sampler * s, const float * logits, tact_token_data_array * arr) {
	for (int32_t i = 0; i < s->n_vocab; i++) {
		s->cur[i].id = i;
		s->cur[i].logit = logits[i];
		s->cur[i].p = 0;
	}
	arr->data = s->cur;
	arr->size = (size_t) s->n_vocab;
	arr->selected = -1;
	arr->sorted = false;
}

static int tact_allowed(struct llama_sampler * grammar, int32_t tok) {
	tact_token_data one = { tok, 0.0f, 0.0f };
	tact_token_data_array arr = { &one, 1, -1, false };
	llama_sampler_apply(grammar, &arr);
	return !isinf(one.logit);
}

// tact_sample returns the next token from the logits of batch entry idx:
// -1 when there are no logits, -2 when the grammar allows no token.
static int32_t tact_sample(tact_sampler * s, struct llama_context * ctx, int32_t idx) {
	const float * logits = llama_get_logits_ith(ctx, idx);
	if (logits == NULL) {
		return -1;
	}
	tact_token_data_array arr;
	tact_fill(s, logits, &arr);
	llama_sampler_apply(s->chain, &arr);
	if (arr.selected < 0) {
		return -1;
	}
	int32_t tok = arr.data[arr.selected].id;
	if (s->grammar == NULL || tact_allowed(s->grammar, tok)) {
		return tok;
	}
	s->full_passes++;
	tact_fill(s, logits, &arr);
	llama_sampler_apply(s->grammar, &arr);
	llama_sampler_apply(s->chain, &arr);
	if (arr.selected >= 0 && !isinf(arr.data[arr.selected].logit)) {
		return arr.data[arr.selected].id;
	}
	// A sampler kept a disallowed token (all probabilities ~0): take the
	// best allowed one.
	tact_fill(s, logits, &arr);
	llama_sampler_apply(s->grammar, &arr);
	int64_t best = -1;
	for (size_t i = 0; i < arr.size; i++) {
		if (!isinf(arr.data[i].logit) && (best < 0 || arr.data[i].logit > arr.data[best].logit)) {
			best = (int64_t) i;
		}
	}
	return best < 0 ? -2 : arr.data[best].id;
}

// tact_accept advances the grammar; end-of-generation tokens never reach it.
static void tact_accept(tact_sampler * s, int32_t tok, bool eog) {
	if (s->grammar != NULL && !eog) {
		llama_sampler_accept(s->grammar, tok);
	}
	llama_sampler_accept(s->chain, tok);
}

static struct llama_sampler * tact_grammar_new(const struct llama_vocab * vocab, const char * gbnf) {
	return llama_sampler_init_grammar(vocab, gbnf, "root");
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// samplerParams is a resolved llm.Sampling.
type samplerParams struct {
	temp       float32
	topK       int
	topP, minP float32
	seed       uint32
	grammar    *grammarSampler // nil: unconstrained
}

// sampler draws tokens for one call. It is not safe for concurrent use.
type sampler struct{ s *C.tact_sampler }

var errNoToken = errors.New("llama backend: the sampler found no token (no logits)")
var errGrammarStuck = errors.New("llama backend: the grammar allows no token here (the vocabulary cannot express it)")

func vocabOf(m *llama.Model) *C.struct_llama_vocab {
	return (*C.struct_llama_vocab)(unsafe.Pointer(m.Vocab()))
}

func newSampler(m *llama.Model, p samplerParams) (*sampler, error) {
	var g *C.struct_llama_sampler
	if p.grammar != nil {
		if g = C.llama_sampler_clone(p.grammar.pristine); g == nil {
			return nil, errors.New("llama backend: cannot copy the grammar")
		}
	}
	s := C.tact_sampler_new(vocabOf(m), C.int32_t(p.topK), C.float(p.topP), C.float(p.minP), C.float(p.temp), C.uint32_t(p.seed), g)
	if s == nil {
		if g != nil {
			C.llama_sampler_free(g)
		}
		return nil, errors.New("llama backend: out of memory for the sampler")
	}
	return &sampler{s}, nil
}

// sample draws the next token from the logits of entry idx of the last batch.
func (s *sampler) sample(lc *llama.Context, idx int) (int, error) {
	switch t := C.tact_sample(s.s, cContext(lc), C.int32_t(idx)); t {
	case -1:
		return 0, errNoToken
	case -2:
		return 0, errGrammarStuck
	default:
		return int(t), nil
	}
}

func (s *sampler) accept(tok int, eog bool) { C.tact_accept(s.s, C.int32_t(tok), C.bool(eog)) }

// fullPasses counts tokens for which the grammar ran over the whole
// vocabulary (the drawn token was not allowed).
func (s *sampler) fullPasses() int { return int(s.s.full_passes) }

func (s *sampler) free() {
	C.tact_sampler_free(s.s)
	s.s = nil
}

// grammarSampler is a schema's grammar, parsed once; calls clone it.
type grammarSampler struct{ pristine *C.struct_llama_sampler }

func newGrammarSampler(m *llama.Model, gbnf string) *grammarSampler {
	cs := C.CString(gbnf)
	defer C.free(unsafe.Pointer(cs))
	g := C.tact_grammar_new(vocabOf(m), cs)
	if g == nil {
		return nil
	}
	return &grammarSampler{g}
}

func (g *grammarSampler) free() { C.llama_sampler_free(g.pristine) }
