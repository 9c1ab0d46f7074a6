package llamacpp

// The one reach into llama.cpp for the prompt cache (promptcache.go): a
// sequence's KV state copied out to memory and back. The binding exports
// neither, so they are declared here (llama.h of the llama.cpp that go.mod
// pins) and called on the binding's context pointer (cContext, clog.go).
// The in-memory forms rather than llama_state_seq_save_file/load_file:
// tact checks a whole file's checksum before llama.cpp parses a byte of it
// (its file loader GGML_ASSERTs, aborting the process, on some
// inconsistencies), and writes files itself, through a temporary file and
// a rename. TestKVStateReach fails if the binding's layout changes.

/*
#include <stddef.h>
#include <stdint.h>

struct llama_context;
uint32_t llama_n_ctx(const struct llama_context * ctx);
uint32_t llama_n_seq_max(const struct llama_context * ctx);
size_t llama_state_seq_get_size(struct llama_context * ctx, int32_t seq_id);
size_t llama_state_seq_get_data(struct llama_context * ctx, uint8_t * dst, size_t size, int32_t seq_id);
size_t llama_state_seq_set_data(struct llama_context * ctx, const uint8_t * src, size_t size, int32_t dest_seq_id);
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// seqStateSize is the bytes seqState would return for seq now.
func seqStateSize(lc *llama.Context, seq int) int {
	return int(C.llama_state_seq_get_size(cContext(lc), C.int32_t(seq)))
}

// seqState copies sequence seq's KV state (its cells' positions and keys
// and values, layer by layer) out of the context.
func seqState(lc *llama.Context, seq int) ([]byte, error) {
	n := seqStateSize(lc, seq)
	if n == 0 {
		return nil, errors.New("llama.cpp: no sequence state")
	}
	buf := make([]byte, n)
	got := C.llama_state_seq_get_data(cContext(lc), (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(n), C.int32_t(seq))
	if int(got) != n {
		return nil, errors.New("llama.cpp: sequence state changed size while copied")
	}
	return buf, nil
}

// setSeqState replaces sequence seq's KV state with buf (seqState's bytes).
// On failure the sequence may hold part of it: the caller clears it.
func setSeqState(lc *llama.Context, seq int, buf []byte) error {
	if len(buf) == 0 {
		return errors.New("llama.cpp: empty sequence state")
	}
	got := C.llama_state_seq_set_data(cContext(lc), (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), C.int32_t(seq))
	if int(got) != len(buf) {
		return errors.New("llama.cpp refused the sequence state (run with -v to see why)")
	}
	return nil
}

// contextShape is what llama.cpp says of the context behind lc: its cells
// and sequences. TestKVStateReach compares it with the options, which
// fails if cContext no longer finds the context.
func contextShape(lc *llama.Context) (cells, seqs int) {
	c := cContext(lc)
	return int(C.llama_n_ctx(c)), int(C.llama_n_seq_max(c))
}
