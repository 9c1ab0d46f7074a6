package llamacpp

// The prompt cache's reach into llama.cpp (promptcache.go): a sequence's
// KV state copied out to memory and back. The in-memory forms rather than
// llama_state_seq_save_file/load_file: tact checks a whole file's checksum
// before llama.cpp parses a byte of it (its file loader GGML_ASSERTs,
// aborting the process, on some inconsistencies), and writes files
// itself, through a temporary file and a rename.

import "errors"

// seqState copies sequence seq's KV state (its cells' positions and keys
// and values, layer by layer) out of the context.
func seqState(lc rtContext, seq int) ([]byte, error) {
	n := lc.stateSize(seq)
	if n == 0 {
		return nil, errors.New("llama.cpp: no sequence state")
	}
	buf := make([]byte, n)
	if got := lc.stateGet(seq, buf); got != n {
		return nil, errors.New("llama.cpp: sequence state changed size while copied")
	}
	return buf, nil
}

// setSeqState replaces sequence seq's KV state with buf (seqState's bytes).
// On failure the sequence may hold part of it: the caller clears it.
func setSeqState(lc rtContext, seq int, buf []byte) error {
	if len(buf) == 0 {
		return errors.New("llama.cpp: empty sequence state")
	}
	if got := lc.stateSet(seq, buf); got != len(buf) {
		return errors.New("llama.cpp refused the sequence state (run with -v to see why)")
	}
	return nil
}
