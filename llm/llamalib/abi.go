package llamalib

// Go mirrors of the C structs tact passes to or gets from llama.cpp, written
// from the pinned release's include/llama.h and ggml/include/ggml*.h (the
// ABI is a fact of that release; no code is copied). Field order, sizes and
// padding follow the C layout on 64-bit Linux; the blank fields make the
// padding explicit, since purego does not insert it. Open's self-test
// (selftest.go) reads llama.cpp's own defaults back through these structs,
// so a layout that no longer matches fails there, in one line, before any
// model is touched.

import "unsafe"

// ModelParams is struct llama_model_params.
type ModelParams struct {
	Devices              unsafe.Pointer // ggml_backend_dev_t *, NULL-terminated; nil: all
	TensorBuftOverrides  unsafe.Pointer
	NGPULayers           int32
	SplitMode            int32 // enum llama_split_mode
	LoadMode             int32 // enum llama_load_mode
	LazyMode             int32 // enum llama_lazy_mode
	MainGPU              int32
	_                    [4]byte
	TensorSplit          unsafe.Pointer
	ProgressCallback     uintptr // a C function
	ProgressCallbackData unsafe.Pointer
	KVOverrides          unsafe.Pointer
	VocabOnly            bool
	CheckTensors         bool
	UseExtraBufts        bool
	NoHost               bool
	NoAlloc              bool
	LoadMTP              bool
	_                    [2]byte
}

// Values of enum llama_load_mode.
const (
	LoadModeAuto int32 = -1
	LoadModeNone int32 = 0
	LoadModeMmap int32 = 1
)

// ContextParams is struct llama_context_params.
type ContextParams struct {
	NCtx              uint32
	NBatch            uint32
	NUbatch           uint32
	NSeqMax           uint32
	NRsSeq            uint32
	NOutputsMax       uint32
	NOutputsMaxPerSeq uint32
	NThreads          int32
	NThreadsBatch     int32
	CtxType           int32 // enum llama_context_type
	RopeScalingType   int32
	PoolingType       int32
	AttentionType     int32
	FlashAttnType     int32 // FlashAttn*
	RopeFreqBase      float32
	RopeFreqScale     float32
	YarnExtFactor     float32
	YarnAttnFactor    float32
	YarnBetaFast      float32
	YarnBetaSlow      float32
	YarnOrigCtx       uint32
	DefragThold       float32
	CbEval            uintptr // a C function
	CbEvalUserData    unsafe.Pointer
	TypeK             int32 // enum ggml_type
	TypeV             int32
	AbortCallback     uintptr // a C function
	AbortCallbackData unsafe.Pointer
	Embeddings        bool
	OffloadKQV        bool
	NoPerf            bool
	OpOffload         bool
	SWAFull           bool
	KVUnified         bool
	_                 [2]byte
	Samplers          unsafe.Pointer
	NSamplers         uintptr
	CtxOther          unsafe.Pointer
}

// Values of enum llama_flash_attn_type.
const (
	FlashAttnAuto     int32 = -1
	FlashAttnDisabled int32 = 0
	FlashAttnEnabled  int32 = 1
)

// Values of enum ggml_type that tact uses (KV cache types, quantization).
const (
	TypeF32  int32 = 0
	TypeF16  int32 = 1
	TypeQ4_0 int32 = 2
	TypeQ8_0 int32 = 8
	// typeCount is GGML_TYPE_COUNT: "not set" in quantize params.
	typeCount int32 = 43
)

// Values of enum llama_ftype for Quantize.
const (
	FtypeMostlyF16   int32 = 1
	FtypeMostlyQ8_0  int32 = 7
	FtypeMostlyQ4_K  int32 = 15 // Q4_K_M
	FtypeMostlyQ6_K  int32 = 18
	FtypeMostlyQ5_KM int32 = 17
)

// QuantizeParams is struct llama_model_quantize_params.
type QuantizeParams struct {
	NThread              int32
	Ftype                int32
	OutputTensorType     int32
	TokenEmbeddingType   int32
	AllowRequantize      bool
	QuantizeOutputTensor bool
	OnlyCopy             bool
	Pure                 bool
	KeepSplit            bool
	DryRun               bool
	_                    [2]byte
	Imatrix              unsafe.Pointer
	KVOverrides          unsafe.Pointer
	TTOverrides          unsafe.Pointer
	PruneLayers          unsafe.Pointer
	MaxBufSize           uintptr
}

// samplerChainParams is struct llama_sampler_chain_params.
type samplerChainParams struct {
	NoPerf bool
}

// cBatch is struct llama_batch: arrays llama_batch_init allocates in C
// memory (Batch writes them through Go slices over that memory).
type cBatch struct {
	NTokens int32
	_       [4]byte
	Token   unsafe.Pointer // llama_token[n]
	Embd    unsafe.Pointer // float[n*embd]; nil for token batches
	Pos     unsafe.Pointer // llama_pos[n]
	NSeqID  unsafe.Pointer // int32_t[n]
	SeqID   unsafe.Pointer // llama_seq_id*[n], each llama_seq_id[n_seq_max]
	Logits  unsafe.Pointer // int8_t[n]
}

// TokenData is llama_token_data.
type TokenData struct {
	ID    int32
	Logit float32
	P     float32
}

// TokenDataArray is llama_token_data_array. Samplers may point Data
// elsewhere and shrink Size; Selected is an index into Data.
type TokenDataArray struct {
	Data     unsafe.Pointer // *TokenData
	Size     uintptr
	Selected int64
	Sorted   bool
	_        [7]byte
}

// chatMessage is llama_chat_message.
type chatMessage struct {
	Role    unsafe.Pointer // const char *
	Content unsafe.Pointer
}

// backendFeature is struct ggml_backend_feature.
type backendFeature struct {
	Name  unsafe.Pointer
	Value unsafe.Pointer
}

// threadpoolParams is struct ggml_threadpool_params (GGML_MAX_N_THREADS
// is 512 in the pinned ggml).
type threadpoolParams struct {
	CPUMask   [512]bool
	NThreads  int32
	Prio      int32 // enum ggml_sched_priority
	Poll      uint32
	StrictCPU bool
	Paused    bool
	_         [2]byte
}

// Values of enum ggml_backend_dev_type.
const (
	DevCPU   int32 = 0
	DevGPU   int32 = 1
	DevIGPU  int32 = 2
	DevAccel int32 = 3
)

// Values of enum ggml_log_level.
const (
	LogNone  int32 = 0
	LogDebug int32 = 1
	LogInfo  int32 = 2
	LogWarn  int32 = 3
	LogError int32 = 4
	LogCont  int32 = 5
)

// The C layout's sizes on 64-bit targets; selftest.go checks them against
// the Go structs (a field added on one side only changes the size).
const (
	sizeModelParams    = 80
	sizeContextParams  = 160
	sizeQuantizeParams = 64
	sizeBatch          = 56
	sizeTokenData      = 12
	sizeTokenDataArray = 32
	sizeThreadpool     = 528
)
