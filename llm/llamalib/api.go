package llamalib

// The C functions tact calls, declared from the pinned llama.h, ggml.h,
// ggml-backend.h and ggml-cpu.h, and only those: Open looks every one up
// before binding any, so a library that lacks one is refused with the
// list of what is missing.

import "unsafe"

// api holds the bound functions. Pointers to opaque C objects are
// unsafe.Pointer; C strings the library returns are bound as *byte and
// copied with goString (the library owns them).
type api struct {
	// Versions and backends (libllama, libggml, libggml-base).
	llamaVersion             func() *byte
	llamaPrintSystemInfo     func() *byte
	ggmlVersion              func() *byte
	ggmlCommit               func() *byte
	llamaBackendInit         func()
	ggmlBackendLoadAllFrom   func(dir *byte)
	ggmlBackendRegCount      func() uintptr
	ggmlBackendRegGet        func(i uintptr) unsafe.Pointer
	ggmlBackendRegName       func(reg unsafe.Pointer) *byte
	ggmlBackendRegProc       func(reg unsafe.Pointer, name *byte) unsafe.Pointer
	ggmlBackendRegByName     func(name *byte) unsafe.Pointer
	ggmlBackendDevCount      func() uintptr
	ggmlBackendDevGet        func(i uintptr) unsafe.Pointer
	ggmlBackendDevName       func(dev unsafe.Pointer) *byte
	ggmlBackendDevDesc       func(dev unsafe.Pointer) *byte
	ggmlBackendDevType       func(dev unsafe.Pointer) int32
	ggmlThreadpoolParamsInit func(p *threadpoolParams, n int32)
	llamaAttachThreadpool    func(ctx, tp, tpBatch unsafe.Pointer)
	llamaDetachThreadpool    func(ctx unsafe.Pointer)
	llamaLogSet              func(cb uintptr, ud unsafe.Pointer)
	ggmlLogSet               func(cb uintptr, ud unsafe.Pointer)

	// Defaults (the self-test reads them back).
	llamaModelDefaultParams    func() ModelParams
	llamaContextDefaultParams  func() ContextParams
	llamaChainDefaultParams    func() samplerChainParams
	llamaQuantizeDefaultParams func() QuantizeParams

	// Model.
	llamaModelLoadFromFile  func(path *byte, p ModelParams) unsafe.Pointer
	llamaModelFree          func(m unsafe.Pointer)
	llamaModelGetVocab      func(m unsafe.Pointer) unsafe.Pointer
	llamaModelNCtxTrain     func(m unsafe.Pointer) int32
	llamaModelNEmbd         func(m unsafe.Pointer) int32
	llamaModelNLayer        func(m unsafe.Pointer) int32
	llamaModelDesc          func(m unsafe.Pointer, buf *byte, n uintptr) int32
	llamaModelSize          func(m unsafe.Pointer) uint64
	llamaModelNParams       func(m unsafe.Pointer) uint64
	llamaModelMetaValStr    func(m unsafe.Pointer, key *byte, buf *byte, n uintptr) int32
	llamaModelChatTemplate  func(m unsafe.Pointer, name *byte) *byte
	llamaModelIsRecurrent   func(m unsafe.Pointer) bool
	llamaModelIsHybrid      func(m unsafe.Pointer) bool
	llamaModelQuantize      func(in, out *byte, p *QuantizeParams) uint32
	llamaChatApplyTemplate  func(tmpl *byte, chat *chatMessage, n uintptr, addAss bool, buf *byte, length int32) int32
	llamaVocabNTokens       func(v unsafe.Pointer) int32
	llamaVocabBOS           func(v unsafe.Pointer) int32
	llamaVocabEOS           func(v unsafe.Pointer) int32
	llamaVocabEOT           func(v unsafe.Pointer) int32
	llamaVocabIsEOG         func(v unsafe.Pointer, tok int32) bool
	llamaVocabIsControl     func(v unsafe.Pointer, tok int32) bool
	llamaVocabGetAddBOS     func(v unsafe.Pointer) bool
	llamaTokenize           func(v unsafe.Pointer, text *byte, n int32, toks *int32, max int32, addSpecial, parseSpecial bool) int32
	llamaTokenToPiece       func(v unsafe.Pointer, tok int32, buf *byte, n int32, lstrip int32, special bool) int32
	llamaSamplerInitGrammar func(v unsafe.Pointer, gbnf, root *byte) unsafe.Pointer

	// Context.
	llamaInitFromModel   func(m unsafe.Pointer, p ContextParams) unsafe.Pointer
	llamaFree            func(ctx unsafe.Pointer)
	llamaNCtx            func(ctx unsafe.Pointer) uint32
	llamaNSeqMax         func(ctx unsafe.Pointer) uint32
	llamaGetMemory       func(ctx unsafe.Pointer) unsafe.Pointer
	llamaDecode          func(ctx unsafe.Pointer, b cBatch) int32
	llamaGetLogitsIth    func(ctx unsafe.Pointer, i int32) unsafe.Pointer
	llamaSetNThreads     func(ctx unsafe.Pointer, n, nBatch int32)
	llamaSetAbortCB      func(ctx unsafe.Pointer, cb uintptr, data unsafe.Pointer)
	llamaBatchInit       func(n, embd, nSeqMax int32) cBatch
	llamaBatchFree       func(b cBatch)
	llamaBatchGetOne     func(toks *int32, n int32) cBatch
	llamaMemorySeqRm     func(mem unsafe.Pointer, seq, p0, p1 int32) bool
	llamaMemorySeqCp     func(mem unsafe.Pointer, src, dst, p0, p1 int32)
	llamaMemorySeqKeep   func(mem unsafe.Pointer, seq int32)
	llamaMemorySeqAdd    func(mem unsafe.Pointer, seq, p0, p1, delta int32)
	llamaMemorySeqPosMin func(mem unsafe.Pointer, seq int32) int32
	llamaMemorySeqPosMax func(mem unsafe.Pointer, seq int32) int32
	llamaStateSeqGetSize func(ctx unsafe.Pointer, seq int32) uintptr
	llamaStateSeqGetData func(ctx unsafe.Pointer, dst *byte, n uintptr, seq int32) uintptr
	llamaStateSeqSetData func(ctx unsafe.Pointer, src *byte, n uintptr, seq int32) uintptr

	// Samplers.
	llamaSamplerChainInit func(p samplerChainParams) unsafe.Pointer
	llamaSamplerChainAdd  func(chain, s unsafe.Pointer)
	llamaSamplerGreedy    func() unsafe.Pointer
	llamaSamplerDist      func(seed uint32) unsafe.Pointer
	llamaSamplerTopK      func(k int32) unsafe.Pointer
	llamaSamplerTopP      func(p float32, minKeep uintptr) unsafe.Pointer
	llamaSamplerMinP      func(p float32, minKeep uintptr) unsafe.Pointer
	llamaSamplerTemp      func(t float32) unsafe.Pointer
	llamaSamplerPenalties func(nVocab, lastN int32, repeat, freq, present float32) unsafe.Pointer
	llamaSamplerClone     func(s unsafe.Pointer) unsafe.Pointer
	llamaSamplerApply     func(s unsafe.Pointer, cur *TokenDataArray)
	llamaSamplerAccept    func(s unsafe.Pointer, tok int32)
	llamaSamplerReset     func(s unsafe.Pointer)
	llamaSamplerSample    func(s, ctx unsafe.Pointer, idx int32) int32
	llamaSamplerFree      func(s unsafe.Pointer)
}

// symbol is one C function: its name and the field it binds to.
type symbol struct {
	name string
	fn   any // pointer to an api field
}

func (a *api) symbols() []symbol {
	return []symbol{
		{"llama_version", &a.llamaVersion},
		{"llama_print_system_info", &a.llamaPrintSystemInfo},
		{"ggml_version", &a.ggmlVersion},
		{"ggml_commit", &a.ggmlCommit},
		{"llama_backend_init", &a.llamaBackendInit},
		{"ggml_backend_load_all_from_path", &a.ggmlBackendLoadAllFrom},
		{"ggml_backend_reg_count", &a.ggmlBackendRegCount},
		{"ggml_backend_reg_get", &a.ggmlBackendRegGet},
		{"ggml_backend_reg_name", &a.ggmlBackendRegName},
		{"ggml_backend_reg_get_proc_address", &a.ggmlBackendRegProc},
		{"ggml_backend_reg_by_name", &a.ggmlBackendRegByName},
		{"ggml_backend_dev_count", &a.ggmlBackendDevCount},
		{"ggml_backend_dev_get", &a.ggmlBackendDevGet},
		{"ggml_backend_dev_name", &a.ggmlBackendDevName},
		{"ggml_backend_dev_description", &a.ggmlBackendDevDesc},
		{"ggml_backend_dev_type", &a.ggmlBackendDevType},
		{"ggml_threadpool_params_init", &a.ggmlThreadpoolParamsInit},
		{"llama_attach_threadpool", &a.llamaAttachThreadpool},
		{"llama_detach_threadpool", &a.llamaDetachThreadpool},
		{"llama_log_set", &a.llamaLogSet},
		{"ggml_log_set", &a.ggmlLogSet},

		{"llama_model_default_params", &a.llamaModelDefaultParams},
		{"llama_context_default_params", &a.llamaContextDefaultParams},
		{"llama_sampler_chain_default_params", &a.llamaChainDefaultParams},
		{"llama_model_quantize_default_params", &a.llamaQuantizeDefaultParams},

		{"llama_model_load_from_file", &a.llamaModelLoadFromFile},
		{"llama_model_free", &a.llamaModelFree},
		{"llama_model_get_vocab", &a.llamaModelGetVocab},
		{"llama_model_n_ctx_train", &a.llamaModelNCtxTrain},
		{"llama_model_n_embd", &a.llamaModelNEmbd},
		{"llama_model_n_layer", &a.llamaModelNLayer},
		{"llama_model_desc", &a.llamaModelDesc},
		{"llama_model_size", &a.llamaModelSize},
		{"llama_model_n_params", &a.llamaModelNParams},
		{"llama_model_meta_val_str", &a.llamaModelMetaValStr},
		{"llama_model_chat_template", &a.llamaModelChatTemplate},
		{"llama_model_is_recurrent", &a.llamaModelIsRecurrent},
		{"llama_model_is_hybrid", &a.llamaModelIsHybrid},
		{"llama_model_quantize", &a.llamaModelQuantize},
		{"llama_chat_apply_template", &a.llamaChatApplyTemplate},
		{"llama_vocab_n_tokens", &a.llamaVocabNTokens},
		{"llama_vocab_bos", &a.llamaVocabBOS},
		{"llama_vocab_eos", &a.llamaVocabEOS},
		{"llama_vocab_eot", &a.llamaVocabEOT},
		{"llama_vocab_is_eog", &a.llamaVocabIsEOG},
		{"llama_vocab_is_control", &a.llamaVocabIsControl},
		{"llama_vocab_get_add_bos", &a.llamaVocabGetAddBOS},
		{"llama_tokenize", &a.llamaTokenize},
		{"llama_token_to_piece", &a.llamaTokenToPiece},
		{"llama_sampler_init_grammar", &a.llamaSamplerInitGrammar},

		{"llama_init_from_model", &a.llamaInitFromModel},
		{"llama_free", &a.llamaFree},
		{"llama_n_ctx", &a.llamaNCtx},
		{"llama_n_seq_max", &a.llamaNSeqMax},
		{"llama_get_memory", &a.llamaGetMemory},
		{"llama_decode", &a.llamaDecode},
		{"llama_get_logits_ith", &a.llamaGetLogitsIth},
		{"llama_set_n_threads", &a.llamaSetNThreads},
		{"llama_set_abort_callback", &a.llamaSetAbortCB},
		{"llama_batch_init", &a.llamaBatchInit},
		{"llama_batch_free", &a.llamaBatchFree},
		{"llama_batch_get_one", &a.llamaBatchGetOne},
		{"llama_memory_seq_rm", &a.llamaMemorySeqRm},
		{"llama_memory_seq_cp", &a.llamaMemorySeqCp},
		{"llama_memory_seq_keep", &a.llamaMemorySeqKeep},
		{"llama_memory_seq_add", &a.llamaMemorySeqAdd},
		{"llama_memory_seq_pos_min", &a.llamaMemorySeqPosMin},
		{"llama_memory_seq_pos_max", &a.llamaMemorySeqPosMax},
		{"llama_state_seq_get_size", &a.llamaStateSeqGetSize},
		{"llama_state_seq_get_data", &a.llamaStateSeqGetData},
		{"llama_state_seq_set_data", &a.llamaStateSeqSetData},

		{"llama_sampler_chain_init", &a.llamaSamplerChainInit},
		{"llama_sampler_chain_add", &a.llamaSamplerChainAdd},
		{"llama_sampler_init_greedy", &a.llamaSamplerGreedy},
		{"llama_sampler_init_dist", &a.llamaSamplerDist},
		{"llama_sampler_init_top_k", &a.llamaSamplerTopK},
		{"llama_sampler_init_top_p", &a.llamaSamplerTopP},
		{"llama_sampler_init_min_p", &a.llamaSamplerMinP},
		{"llama_sampler_init_temp", &a.llamaSamplerTemp},
		{"llama_sampler_init_penalties", &a.llamaSamplerPenalties},
		{"llama_sampler_clone", &a.llamaSamplerClone},
		{"llama_sampler_apply", &a.llamaSamplerApply},
		{"llama_sampler_accept", &a.llamaSamplerAccept},
		{"llama_sampler_reset", &a.llamaSamplerReset},
		{"llama_sampler_sample", &a.llamaSamplerSample},
		{"llama_sampler_free", &a.llamaSamplerFree},
	}
}
