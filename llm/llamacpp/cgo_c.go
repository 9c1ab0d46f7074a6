//go:build cgollama

package llamacpp

// What the cgo provider (provider_cgo.go) needs beyond the binding's API:
// quiet logs, an abort callback (so Ctrl-C stops a long prompt batch, not
// only generation), llama_free, the model's layer count, changing a
// context's threads, a sequence's KV state in memory, and llama.cpp's
// sampler objects. The functions are declared here rather than included
// because their headers live in the binding's module (llama.h of the
// llama.cpp that go.mod pins); the symbols are linked in with the binding.
// TestKVStateReach fails if the binding's Context stops starting with its
// llama_context pointer (cContext).

/*
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct llama_context;
struct llama_model;
struct llama_vocab;
struct llama_sampler;
int32_t llama_model_n_layer(const struct llama_model * model);
void llama_set_n_threads(struct llama_context * ctx, int32_t n_threads, int32_t n_threads_batch);
typedef void (*tact_log_callback)(int level, const char * text, void * user_data);
typedef bool (*tact_abort_callback)(void * data);
void llama_log_set(tact_log_callback log_callback, void * user_data);
void ggml_log_set(tact_log_callback log_callback, void * user_data);
void llama_set_abort_callback(struct llama_context * ctx, tact_abort_callback cb, void * data);
void llama_free(struct llama_context * ctx);
uint32_t llama_n_ctx(const struct llama_context * ctx);
uint32_t llama_n_seq_max(const struct llama_context * ctx);
size_t llama_state_seq_get_size(struct llama_context * ctx, int32_t seq_id);
size_t llama_state_seq_get_data(struct llama_context * ctx, uint8_t * dst, size_t size, int32_t seq_id);
size_t llama_state_seq_set_data(struct llama_context * ctx, const uint8_t * src, size_t size, int32_t dest_seq_id);
float * llama_get_logits_ith(struct llama_context * ctx, int32_t i);

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
int32_t llama_sampler_sample(struct llama_sampler * smpl, struct llama_context * ctx, int32_t idx);

static int tact_log_verbose;

static void tact_log(int level, const char * text, void * user_data) {
	(void) level;
	(void) user_data;
	if (__atomic_load_n(&tact_log_verbose, __ATOMIC_RELAXED)) {
		fputs(text, stderr);
	}
}

static void tact_set_logs(int verbose) {
	__atomic_store_n(&tact_log_verbose, verbose, __ATOMIC_RELAXED);
	llama_log_set(tact_log, NULL);
	ggml_log_set(tact_log, NULL);
}

static bool tact_abort(void * data) {
	return __atomic_load_n((int *) data, __ATOMIC_RELAXED) != 0;
}

static int * tact_abort_flag(struct llama_context * ctx) {
	int * flag = calloc(1, sizeof(int));
	if (flag != NULL) {
		llama_set_abort_callback(ctx, tact_abort, flag);
	}
	return flag;
}

static void tact_abort_set(int * flag, int v) {
	__atomic_store_n(flag, v, __ATOMIC_RELAXED);
}

static void tact_free(struct llama_context * ctx, int * flag) {
	llama_free(ctx);
	free(flag);
}

static struct llama_sampler * tact_chain_new(void) {
	tact_chain_params params = { true };
	return llama_sampler_chain_init(params);
}

static struct llama_sampler * tact_grammar_new(const struct llama_vocab * vocab, const char * gbnf) {
	return llama_sampler_init_grammar(vocab, gbnf, "root");
}
*/
import "C"

import (
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// setLogs routes llama.cpp's and ggml's logs to stderr when verbose and
// drops them otherwise. The binding points them at slog's default logger,
// which would print llama.cpp's many INFO lines whenever INFO is enabled.
func setLogs(verbose bool) {
	v := C.int(0)
	if verbose {
		v = 1
	}
	C.tact_set_logs(v)
}

// cContext is the llama_context behind a binding Context. The binding keeps
// it in its first (unexported) field; go.mod pins the binding's version and
// TestKVStateReach fails if that ever changes.
func cContext(lc *llama.Context) *C.struct_llama_context {
	return *(**C.struct_llama_context)(unsafe.Pointer(lc))
}

// cModel is the llama_model behind a binding Model: its first
// (unexported) field, as for cContext (TestKVStateReach checks both).
func cModel(m *llama.Model) *C.struct_llama_model {
	return *(**C.struct_llama_model)(unsafe.Pointer(m))
}

// modelLayers is the model's count of repeating layers (llama.cpp offloads
// the output layer too once --gpu-layers exceeds it).
func modelLayers(m *llama.Model) int {
	return int(C.llama_model_n_layer(cModel(m)))
}

// setThreads changes the threads of the context's next decodes.
func setThreads(lc *llama.Context, n int) {
	C.llama_set_n_threads(cContext(lc), C.int32_t(n), C.int32_t(n))
}

// abortFlag is a C int that llama.cpp polls while computing a batch; setting
// it makes llama_decode return early (status 2, which the binding reports as
// ErrKvCacheFull) after rolling back the unfinished batch.
type abortFlag struct{ p *C.int }

func newAbortFlag(lc *llama.Context) abortFlag {
	return abortFlag{C.tact_abort_flag(cContext(lc))}
}

func (f abortFlag) set(v bool) {
	if f.p == nil {
		return
	}
	n := C.int(0)
	if v {
		n = 1
	}
	C.tact_abort_set(f.p, n)
}

func (f abortFlag) isSet() bool {
	return f.p != nil && bool(C.tact_abort(unsafe.Pointer(f.p)))
}

// freeContext releases the llama context and its abort flag.
func freeContext(lc *llama.Context, f abortFlag) {
	C.tact_free(cContext(lc), f.p)
}

// logitsIth is output i's logits of the last decode, in llama.cpp's memory.
func logitsIth(lc *llama.Context, i, nVocab int) []float32 {
	p := C.llama_get_logits_ith(cContext(lc), C.int32_t(i))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), nVocab)
}

// seqStateSize is the bytes of sequence seq's state.
func seqStateSize(lc *llama.Context, seq int) int {
	return int(C.llama_state_seq_get_size(cContext(lc), C.int32_t(seq)))
}

// seqStateGet copies sequence seq's state into buf (llama.cpp's in-memory
// form: tact checks a whole file's checksum before llama.cpp parses a
// byte of it, and writes files itself; see promptcache.go).
func seqStateGet(lc *llama.Context, seq int, buf []byte) int {
	if len(buf) == 0 {
		return 0
	}
	return int(C.llama_state_seq_get_data(cContext(lc), (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), C.int32_t(seq)))
}

// seqStateSet loads buf into sequence seq; the bytes read (0: refused).
func seqStateSet(lc *llama.Context, seq int, buf []byte) int {
	if len(buf) == 0 {
		return 0
	}
	return int(C.llama_state_seq_set_data(cContext(lc), (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), C.int32_t(seq)))
}

// contextShape is what llama.cpp says of the context behind lc: its cells
// and sequences. TestKVStateReach compares it with the options, which
// fails if cContext no longer finds the context.
func contextShape(lc *llama.Context) (cells, seqs int) {
	c := cContext(lc)
	return int(C.llama_n_ctx(c)), int(C.llama_n_seq_max(c))
}

// cSampler is a llama_sampler of the cgo provider.
type cSampler struct{ p *C.struct_llama_sampler }

func (s cSampler) apply(c rtCandidates) { C.llama_sampler_apply(s.p, c.(*cCandidates).arr) }
func (s cSampler) accept(tok int)       { C.llama_sampler_accept(s.p, C.int32_t(tok)) }
func (s cSampler) sample(lc rtContext, i int) int {
	return int(C.llama_sampler_sample(s.p, cContext(lc.(*cgoContext).lc), C.int32_t(i)))
}
func (s cSampler) free() { C.llama_sampler_free(s.p) }
func (s cSampler) clone() rtSampler {
	if c := C.llama_sampler_clone(s.p); c != nil {
		return cSampler{c}
	}
	return nil
}

func vocabOf(m *llama.Model) *C.struct_llama_vocab {
	return (*C.struct_llama_vocab)(unsafe.Pointer(m.Vocab()))
}

// newCChain makes a sampler chain of steps.
func newCChain(steps []samplerStep) rtSampler {
	chain := C.tact_chain_new()
	if chain == nil {
		return nil
	}
	for _, s := range steps {
		var one *C.struct_llama_sampler
		switch s.kind {
		case stepGreedy:
			one = C.llama_sampler_init_greedy()
		case stepDist:
			one = C.llama_sampler_init_dist(C.uint32_t(s.seed))
		case stepTopK:
			one = C.llama_sampler_init_top_k(C.int32_t(s.i))
		case stepTopP:
			one = C.llama_sampler_init_top_p(C.float(s.f), 0)
		case stepMinP:
			one = C.llama_sampler_init_min_p(C.float(s.f), 0)
		case stepTemp:
			one = C.llama_sampler_init_temp(C.float(s.f))
		}
		if one == nil {
			C.llama_sampler_free(chain)
			return nil
		}
		C.llama_sampler_chain_add(chain, one)
	}
	return cSampler{chain}
}

// newCGrammar parses gbnf with the vocabulary of m; nil when it cannot.
func newCGrammar(m *llama.Model, gbnf string) rtSampler {
	cs := C.CString(gbnf)
	defer C.free(unsafe.Pointer(cs))
	g := C.tact_grammar_new(vocabOf(m), cs)
	if g == nil {
		return nil
	}
	return cSampler{g}
}

// cCandidates is a token data array in C memory (llama.cpp's samplers may
// keep pointers into it during a call, and the cgo rules forbid Go
// memory holding them).
type cCandidates struct {
	mem  unsafe.Pointer
	arr  *C.tact_token_data_array
	data []C.tact_token_data
}

func newCCandidates(n int) (rtCandidates, error) {
	head := C.size_t(unsafe.Sizeof(C.tact_token_data_array{}))
	mem := C.malloc(head + C.size_t(n)*C.size_t(unsafe.Sizeof(C.tact_token_data{})))
	if mem == nil {
		return nil, errNoMemory
	}
	return &cCandidates{mem: mem, arr: (*C.tact_token_data_array)(mem),
		data: unsafe.Slice((*C.tact_token_data)(unsafe.Add(mem, head)), n)}, nil
}

func (c *cCandidates) reset(n int) {
	c.arr.data = &c.data[0]
	c.arr.size = C.size_t(n)
	c.arr.selected = -1
	c.arr.sorted = false
}

func (c *cCandidates) fill(logits []float32) {
	d := c.data
	logits = logits[:len(d)]
	for i := range d {
		d[i] = C.tact_token_data{id: C.int32_t(i), logit: C.float(logits[i])}
	}
	c.reset(len(d))
}

func (c *cCandidates) one(tok int) {
	c.data[0] = C.tact_token_data{id: C.int32_t(tok)}
	c.reset(1)
}

func (c *cCandidates) entries() []C.tact_token_data {
	if c.arr.data == nil || c.arr.size == 0 {
		return nil
	}
	return unsafe.Slice(c.arr.data, int(c.arr.size))
}

func (c *cCandidates) selected() (int, float32, bool) {
	i := int64(c.arr.selected)
	if i < 0 || i >= int64(c.arr.size) {
		return 0, 0, false
	}
	d := c.entries()[i]
	return int(d.id), float32(d.logit), true
}

func (c *cCandidates) each(f func(tok int, logit float32)) {
	for _, d := range c.entries() {
		f(int(d.id), float32(d.logit))
	}
}

func (c *cCandidates) free() {
	if c.mem != nil {
		C.free(c.mem)
		c.mem, c.arr, c.data = nil, nil, nil
	}
}
