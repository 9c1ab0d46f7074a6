//go:build cgollama

package llamacpp

// The cgo provider's thread pool (the runtime's is llamalib's
// Context.AttachThreadpool). The binding runs each graph on a thread pool
// ggml makes and frees per decode, whose workers poll for work (polling
// level 50) before they sleep. tact gives the context one pool for its life instead, made with
// polling level 0: between decodes (while Go samples the next token) its
// workers sleep at once rather than spin against the sampling thread and
// other processes. (Within a graph ggml's barriers spin whatever the
// level; that is what the thread count chosen from the load avoids, see
// internal/threads.) The binding exposes no thread pool, so the functions
// are declared here, like cgo_c.go's; the struct mirrors ggml.h's (v0.17.4,
// GGML_MAX_N_THREADS 512) and is filled by ggml's own initializer.

/*
#include <stdbool.h>
#include <stdint.h>

struct llama_context;
struct ggml_threadpool;
struct ggml_threadpool_params {
	bool     cpumask[512];
	int      n_threads;
	int      prio;
	uint32_t poll;
	bool     strict_cpu;
	bool     paused;
};
void ggml_threadpool_params_init(struct ggml_threadpool_params * p, int n_threads);
struct ggml_threadpool * ggml_threadpool_new(struct ggml_threadpool_params * params);
void ggml_threadpool_free(struct ggml_threadpool * tp);
void llama_attach_threadpool(struct llama_context * ctx, struct ggml_threadpool * tp, struct ggml_threadpool * tp_batch);

static struct ggml_threadpool * tact_pool(struct llama_context * ctx, int n) {
	struct ggml_threadpool_params p;
	ggml_threadpool_params_init(&p, n);
	p.poll = 0;
	struct ggml_threadpool * tp = ggml_threadpool_new(&p);
	if (tp != NULL) {
		llama_attach_threadpool(ctx, tp, tp);
	}
	return tp;
}
*/
import "C"

import "github.com/ollama/ollama/llama"

// threadPool is a context's ggml thread pool (nil: none, ggml's own per
// decode).
type threadPool struct{ p *C.struct_ggml_threadpool }

// attachPool gives lc a pool of n sleeping-when-idle workers; the context's
// thread count (setThreads) may then be anything up to n.
func attachPool(lc *llama.Context, n int) threadPool {
	return threadPool{C.tact_pool(cContext(lc), C.int(n))}
}

// free frees the pool; the context using it must be freed first.
func (t threadPool) free() {
	if t.p != nil {
		C.ggml_threadpool_free(t.p)
	}
}
