package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ollama/ollama/fs/ggml"
)

// The qwen35 layout follows the loader of the llama.cpp release tact's
// runtime pins (node-llama-cpp 3.22.1's bundled source, llama.cpp at
// "v0.5.0"): src/models/qwen35.cpp (llama_model_qwen35::load_arch_hparams,
// load_arch_tensors, the graph), tensor names from src/llama-arch.cpp
// (LLM_TENSOR_NAMES), and the keys conversion/qwen.py writes
// (Qwen3NextModel, _Qwen35MRopeMixin). In short: every layer has
// attn_norm, post_attention_norm and a SiLU-gated FFN; every fourth layer
// (full_attention_interval) is gated full attention (attn_q holds the
// query and its gate, per head; q/k norms; multi-section RoPE), the others
// are gated delta-net linear attention (attn_qkv, attn_gate, ssm_conv1d,
// ssm_dt.bias, ssm_a, ssm_beta, ssm_alpha, ssm_norm, ssm_out). The
// vocabulary is byte-level BPE with pre-tokenizer "qwen35".

type qwen35Shape struct {
	vocab, embd, layers, heads, kvHeads, headDim, ff, ctx int
	rot                                                   int      // rope.dimension_count: a quarter of the head, as Qwen3.5's partial_rotary_factor
	sections                                              [4]int32 // rope.dimension_sections: sum rot/2
	interval                                              int      // full_attention_interval
	convKernel, headK, groups, vHeads                     int      // ssm.conv_kernel, state_size, group_count, time_step_rank
	kind                                                  ggml.TensorType
	bias                                                  float32
}

var qwen35Shapes = map[Size]qwen35Shape{
	// 3 delta-net layers and 1 attention layer; 2 key heads, 4 value heads
	// (Qwen3.5-9B's 1:2, so the key heads are repeated); head 32 over a
	// 64-wide stream (attention wider than the model, as Qwen3.5's 256 over
	// 1024 in the 0.8B).
	Tiny: {vocab: 512, embd: 64, layers: 4, heads: 4, kvHeads: 2, headDim: 32, ff: 128, ctx: 32768,
		rot: 8, sections: [4]int32{2, 1, 1, 0}, interval: 4,
		convKernel: 4, headK: 16, groups: 2, vHeads: 4, kind: ggml.TensorTypeF16, bias: 6},
	Small: {vocab: 4096, embd: 256, layers: 8, heads: 8, kvHeads: 2, headDim: 64, ff: 768, ctx: 32768,
		rot: 16, sections: [4]int32{3, 3, 2, 0}, interval: 4,
		convKernel: 4, headK: 32, groups: 4, vHeads: 8, kind: ggml.TensorTypeQ8_0, bias: 6},
}

// recurrent reports whether layer l is a delta-net layer (the loader's rule
// for full_attention_interval).
func (s qwen35Shape) recurrent(l int) bool { return (l+1)%s.interval != 0 }

func (s qwen35Shape) kv(m Model, params int64) ggml.KV {
	v := QwenVocab(s.vocab)
	a := "qwen35."
	return ggml.KV{
		"general.architecture":                 "qwen35",
		"general.name":                         "tact-synth-" + m.String(),
		"general.file_type":                    fileType(s.kind),
		"general.parameter_count":              uint64(params),
		a + "context_length":                   uint32(s.ctx),
		a + "embedding_length":                 uint32(s.embd),
		a + "block_count":                      uint32(s.layers),
		a + "feed_forward_length":              uint32(s.ff),
		a + "attention.head_count":             uint32(s.heads),
		a + "attention.head_count_kv":          uint32(s.kvHeads),
		a + "attention.key_length":             uint32(s.headDim),
		a + "attention.value_length":           uint32(s.headDim),
		a + "attention.layer_norm_rms_epsilon": float32(1e-6),
		a + "rope.freq_base":                   float32(10000000),
		a + "rope.dimension_count":             uint32(s.rot),
		a + "rope.dimension_sections":          s.sections[:],
		a + "full_attention_interval":          uint32(s.interval),
		a + "ssm.conv_kernel":                  uint32(s.convKernel),
		a + "ssm.state_size":                   uint32(s.headK),
		a + "ssm.group_count":                  uint32(s.groups),
		a + "ssm.time_step_rank":               uint32(s.vHeads),
		a + "ssm.inner_size":                   uint32(s.headK * s.vHeads),
		"tokenizer.ggml.model":                 "gpt2",
		"tokenizer.ggml.pre":                   "qwen35",
		"tokenizer.ggml.tokens":                v.Tokens,
		"tokenizer.ggml.token_type":            v.Types,
		"tokenizer.ggml.merges":                v.Merges,
		"tokenizer.ggml.bos_token_id":          uint32(QwenEndOfTextID),
		"tokenizer.ggml.eos_token_id":          uint32(QwenIMEndID),
		"tokenizer.ggml.padding_token_id":      uint32(QwenEndOfTextID),
		"tokenizer.ggml.add_bos_token":         false,
		"tokenizer.chat_template":              ChatTemplate,
	}
}

func (s qwen35Shape) tensors(seed int64) *tensorSet {
	v := QwenVocab(s.vocab)
	bias := logitBias(v.Tokens, s.bias)
	d := float64(s.embd)
	// The residual stream as the llama models' (see shape.tensors): a
	// constant dim 0 that no layer writes (the attention, delta-net and FFN
	// output rows 0 are zero, the norms' dim-0 weights 0) carries the
	// closing tokens' logit bias to the output layer.
	dim0 := float32(math.Sqrt(d))
	norm0 := float32(1 / math.Sqrt(d/3))
	inStd := float32(1 / math.Sqrt(d))
	perLayer := float32(math.Sqrt(2 * float64(s.layers)))
	logitStd := float32(1.5 / math.Sqrt(2*d/3))
	kvDim := s.headDim * s.kvHeads
	keyDim := s.headK * s.groups
	valueDim := s.headK * s.vHeads // head_v_dim is the state size too
	kind := func(cols int) ggml.TensorType { return matrixKind(s.kind, cols) }

	ts := &tensorSet{seed: seed}
	ts.add("token_embd.weight", kind(s.embd), s.embd, s.vocab, embedRows(1, dim0))
	ts.add("output_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(norm0))
	ts.add("output.weight", kind(s.embd), s.embd, s.vocab, outputRows(logitStd, bias))
	for l := range s.layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts.add(p+"attn_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(0))
		// The pre-FFN norm (named post-attention: it follows the attention).
		ts.add(p+"post_attention_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(0))
		if s.recurrent(l) {
			ts.add(p+"attn_qkv.weight", kind(s.embd), s.embd, 2*keyDim+valueDim, uniform(inStd))
			ts.add(p+"attn_gate.weight", kind(s.embd), s.embd, valueDim, uniform(inStd))
			ts.add(p+"ssm_conv1d.weight", ggml.TensorTypeF32, s.convKernel, 2*keyDim+valueDim,
				uniform(float32(1/math.Sqrt(float64(s.convKernel)))))
			ts.add(p+"ssm_dt.bias", ggml.TensorTypeF32, s.vHeads, 1, uniform(0.5))
			ts.add(p+"ssm_a", ggml.TensorTypeF32, s.vHeads, 1, decay)
			ts.add(p+"ssm_beta.weight", kind(s.embd), s.embd, s.vHeads, uniform(inStd))
			ts.add(p+"ssm_alpha.weight", kind(s.embd), s.embd, s.vHeads, uniform(inStd))
			ts.add(p+"ssm_norm.weight", ggml.TensorTypeF32, s.headK, 1, constant(1))
			ts.add(p+"ssm_out.weight", kind(valueDim), valueDim, s.embd,
				zeroRow0(float32(1/math.Sqrt(float64(valueDim)))/perLayer))
		} else {
			ts.add(p+"attn_q.weight", kind(s.embd), s.embd, 2*s.headDim*s.heads, uniform(inStd))
			ts.add(p+"attn_k.weight", kind(s.embd), s.embd, kvDim, uniform(inStd))
			ts.add(p+"attn_v.weight", kind(s.embd), s.embd, kvDim, uniform(inStd))
			ts.add(p+"attn_output.weight", kind(s.headDim*s.heads), s.headDim*s.heads, s.embd,
				zeroRow0(float32(1/math.Sqrt(float64(s.headDim*s.heads)))/perLayer))
			ts.add(p+"attn_q_norm.weight", ggml.TensorTypeF32, s.headDim, 1, constant(1))
			ts.add(p+"attn_k_norm.weight", ggml.TensorTypeF32, s.headDim, 1, constant(1))
		}
		ts.add(p+"ffn_gate.weight", kind(s.embd), s.embd, s.ff, uniform(inStd))
		ts.add(p+"ffn_up.weight", kind(s.embd), s.embd, s.ff, uniform(inStd))
		ts.add(p+"ffn_down.weight", kind(s.ff), s.ff, s.embd,
			zeroRow0(float32(1/math.Sqrt(float64(s.ff)))/perLayer))
	}
	return ts
}

// decay is ssm_a, which the converter stores as -exp(A_log): negative, so
// the delta-net state decays; Qwen3.5 initializes A in [1, 16].
func decay(_ int, r *rand.Rand, out []float32) {
	for i := range out {
		out[i] = -(1 + 15*r.Float32())
	}
}
