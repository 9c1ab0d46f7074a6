package llamalib

import (
	"fmt"
	"unsafe"
)

// selfTest checks abi.go's structs against the loaded library before any
// of them is passed in: llama.cpp's default parameters are read back
// through them and must hold the values the pinned release sets (a field
// added, removed or moved upstream shifts what follows it). A struct that
// does not match fails here, in one line, instead of corrupting memory on
// the first model load.
func (l *Lib) selfTest() error {
	sizes := []struct {
		name      string
		got, want uintptr
	}{
		{"llama_model_params", unsafe.Sizeof(ModelParams{}), sizeModelParams},
		{"llama_context_params", unsafe.Sizeof(ContextParams{}), sizeContextParams},
		{"llama_model_quantize_params", unsafe.Sizeof(QuantizeParams{}), sizeQuantizeParams},
		{"llama_batch", unsafe.Sizeof(cBatch{}), sizeBatch},
		{"llama_token_data", unsafe.Sizeof(TokenData{}), sizeTokenData},
		{"llama_token_data_array", unsafe.Sizeof(TokenDataArray{}), sizeTokenDataArray},
		{"ggml_threadpool_params", unsafe.Sizeof(threadpoolParams{}), sizeThreadpool},
	}
	for _, s := range sizes {
		if s.got != s.want {
			return fmt.Errorf("struct self-test: tact's %s is %d bytes, the pinned header's %d", s.name, s.got, s.want)
		}
	}

	mp := l.a.llamaModelDefaultParams()
	if err := expect("llama_model_params",
		mp.Devices == nil && mp.TensorBuftOverrides == nil && mp.TensorSplit == nil && mp.ProgressCallback == 0 &&
			mp.ProgressCallbackData == nil && mp.KVOverrides == nil,
		mp.NGPULayers == -1, mp.SplitMode == 1, mp.LoadMode == LoadModeAuto, mp.LazyMode == 1, mp.MainGPU == 0,
		!mp.VocabOnly, !mp.CheckTensors, mp.UseExtraBufts, !mp.NoHost, !mp.NoAlloc, !mp.LoadMTP); err != nil {
		return err
	}

	cp := l.a.llamaContextDefaultParams()
	if err := expect("llama_context_params",
		cp.NCtx == 512, cp.NBatch == 2048, cp.NUbatch == 512, cp.NSeqMax == 1, cp.NRsSeq == 0,
		cp.NOutputsMax == 0, cp.NOutputsMaxPerSeq == 1, cp.NThreads == 4, cp.NThreadsBatch == 4,
		cp.CtxType == 0, cp.RopeScalingType == -1, cp.PoolingType == -1, cp.AttentionType == -1,
		cp.FlashAttnType == FlashAttnAuto, cp.RopeFreqBase == 0, cp.RopeFreqScale == 0,
		cp.YarnExtFactor == -1, cp.YarnAttnFactor == -1, cp.YarnBetaFast == -1, cp.YarnBetaSlow == -1,
		cp.YarnOrigCtx == 0, cp.DefragThold == -1, cp.CbEval == 0, cp.CbEvalUserData == nil,
		cp.TypeK == TypeF16, cp.TypeV == TypeF16, cp.AbortCallback == 0, cp.AbortCallbackData == nil,
		!cp.Embeddings, cp.OffloadKQV, cp.NoPerf, cp.OpOffload, cp.SWAFull, !cp.KVUnified,
		cp.Samplers == nil, cp.NSamplers == 0, cp.CtxOther == nil); err != nil {
		return err
	}

	if sp := l.a.llamaChainDefaultParams(); !sp.NoPerf {
		return fmt.Errorf("struct self-test: llama_sampler_chain_params' default no_perf reads false, want true")
	}

	qp := l.a.llamaQuantizeDefaultParams()
	return expect("llama_model_quantize_params",
		qp.NThread == 0, qp.Ftype == FtypeMostlyQ8_0, qp.OutputTensorType == typeCount, qp.TokenEmbeddingType == typeCount,
		!qp.AllowRequantize, qp.QuantizeOutputTensor, !qp.OnlyCopy, !qp.Pure, !qp.KeepSplit, !qp.DryRun,
		qp.Imatrix == nil, qp.KVOverrides == nil, qp.TTOverrides == nil, qp.PruneLayers == nil,
		qp.MaxBufSize == 8<<30)
}

// expect fails naming the struct and the first field check that failed
// (by its position in the call, which follows the struct's field order).
func expect(name string, checks ...bool) error {
	for i, ok := range checks {
		if !ok {
			return fmt.Errorf("struct self-test: %s's defaults do not read back as the pinned release sets them (check %d): the library's layout differs from tact's", name, i+1)
		}
	}
	return nil
}
