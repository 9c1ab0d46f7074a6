//go:build cgollama

package llamacpp

// The cgo binding's NewContextParams leaves llama.cpp's kv_unified at its
// default (false: one KV stream per sequence), which is what tact's parallel
// sequences use (see sched.go for why). The bench's probe compares both,
// so setUnifiedKV sets it through a copy of llama_context_params' layout
// (llama.h of the binding's llama.cpp; go.mod pins the version), checked at
// run time against the binding's own struct: its size and the fields
// NewContextParams set must read back, or the flag is left alone.

/*
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint32_t n_ctx;
	uint32_t n_batch;
	uint32_t n_ubatch;
	uint32_t n_seq_max;
	int32_t  n_threads;
	int32_t  n_threads_batch;
	int      rope_scaling_type;
	int      pooling_type;
	int      attention_type;
	int      flash_attn_type;
	float    rope_freq_base;
	float    rope_freq_scale;
	float    yarn_ext_factor;
	float    yarn_attn_factor;
	float    yarn_beta_fast;
	float    yarn_beta_slow;
	uint32_t yarn_orig_ctx;
	float    defrag_thold;
	void *   cb_eval;
	void *   cb_eval_user_data;
	int      type_k;
	int      type_v;
	void *   abort_callback;
	void *   abort_callback_data;
	bool     embeddings;
	bool     offload_kqv;
	bool     no_perf;
	bool     op_offload;
	bool     swa_full;
	bool     kv_unified;
} tact_context_params;
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"
)

// setUnifiedKV sets llama.cpp's kv_unified on p, made by
// llama.NewContextParams: one KV buffer shared by all sequences, where a
// sequence copy (KvCacheSeqCp) shares cells instead of copying buffers. It
// fails, leaving p alone, when the binding's struct does not have the
// layout tact expects.
func setUnifiedKV(p *llama.ContextParams, on bool) error {
	if !kvLayoutOK {
		return errKVLayout
	}
	(*C.tact_context_params)(unsafe.Pointer(p)).kv_unified = C.bool(on)
	return nil
}

var errKVLayout = errors.New("llama backend: the binding's llama_context_params has an unexpected layout")

// kvLayoutOK checks the copy of the layout against the binding: the same
// size, and distinctive values NewContextParams writes read back in place.
var kvLayoutOK = func() bool {
	var p llama.ContextParams
	if unsafe.Sizeof(p) != C.sizeof_tact_context_params {
		return false
	}
	p = llama.NewContextParams(1234, 56, 3, 7, ml.FlashAttentionDisabled, "q4_0")
	c := (*C.tact_context_params)(unsafe.Pointer(&p))
	const ggmlTypeQ4_0, flashAttnDisabled = 2, 0
	return c.n_ctx == 1234 && c.n_batch == 56*3 && c.n_ubatch == 56 && c.n_seq_max == 3 &&
		c.n_threads == 7 && c.n_threads_batch == 7 && c.flash_attn_type == flashAttnDisabled &&
		c.type_k == ggmlTypeQ4_0 && c.type_v == ggmlTypeQ4_0 && bool(c.embeddings) && !bool(c.kv_unified)
}()
