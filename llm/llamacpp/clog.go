package llamacpp

// The binding leaves out five things tact needs: quiet logs, an abort
// callback (so Ctrl-C stops a long prompt batch, not only generation),
// llama_free (so Close releases the context), the model's layer count (to
// tell a model fully offloaded to a GPU) and changing a context's threads
// (each call runs with its CPU turn's share). The functions are declared
// here rather than included because their headers live in the binding's
// module; the symbols are linked in with the binding.

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct llama_context;
struct llama_model;
const struct llama_model * llama_get_model(const struct llama_context * ctx);
int32_t llama_model_n_layer(const struct llama_model * model);
void llama_set_n_threads(struct llama_context * ctx, int32_t n_threads, int32_t n_threads_batch);
typedef void (*tact_log_callback)(int level, const char * text, void * user_data);
typedef bool (*tact_abort_callback)(void * data);
void llama_log_set(tact_log_callback log_callback, void * user_data);
void ggml_log_set(tact_log_callback log_callback, void * user_data);
void llama_set_abort_callback(struct llama_context * ctx, tact_abort_callback cb, void * data);
void llama_free(struct llama_context * ctx);

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
// TestAbortStopsPromptBatch fails if that ever changes.
func cContext(lc *llama.Context) *C.struct_llama_context {
	return *(**C.struct_llama_context)(unsafe.Pointer(lc))
}

// modelLayers is the model's count of repeating layers (llama.cpp offloads
// the output layer too once --gpu-layers exceeds it).
func modelLayers(lc *llama.Context) int {
	return int(C.llama_model_n_layer(C.llama_get_model(cContext(lc))))
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

// FreeContext releases a context made with llama.NewContextWithModel (the
// binding has no way to).
func FreeContext(lc *llama.Context) { C.llama_free(cContext(lc)) }
