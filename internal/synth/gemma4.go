package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ollama/ollama/fs/ggml"
)

// The gemma4 layout follows the loader of the llama.cpp release tact's
// runtime pins (node-llama-cpp 3.22.1's bundled source, llama.cpp at
// "v0.5.0"): src/models/gemma4.cpp (llama_model_gemma4::load_arch_hparams,
// load_arch_tensors, the graph), tensor names from src/llama-arch.cpp, the
// shared-KV reuse rule in src/llama-model.cpp (create_memory), and the keys
// conversion/gemma.py writes (Gemma4Model). The shape is the E2B/E4B one:
// sliding-window and global layers with their own head sizes and RoPE
// (global layers' "proportional" RoPE through rope_freqs), the last layers
// reusing the KV cache of the last sliding and global layers that have one,
// per-layer token embeddings, q/k norms, post-attention and post-FFN norms,
// GELU-gated FFN, a per-layer output scale, final logit soft-capping. The
// vocabulary is Gemma 4's BPE (tokenizer.ggml.model "gemma4").

type gemma4Shape struct {
	vocab, embd, heads, kvHeads, ff, ctx int
	swa                                  []bool // sliding_window_pattern: one per layer
	sharedKV                             int    // attention.shared_kv_layers
	headSWA, headFull                    int    // key/value length of sliding and global layers
	perLayer                             int    // embedding_length_per_layer_input
	window                               int    // attention.sliding_window
	kind                                 ggml.TensorType
	bias                                 float32
}

var gemma4Shapes = map[Size]gemma4Shape{
	// Layers 2 and 3 reuse the KV cache of layers 0 (sliding) and 1
	// (global): the loader's rule takes the last two layers with a cache,
	// sliding then global.
	Tiny: {vocab: 512, embd: 64, heads: 4, kvHeads: 2, ff: 128, ctx: 32768,
		swa: []bool{true, false, true, false}, sharedKV: 2, headSWA: 16, headFull: 32, perLayer: 8, window: 512,
		kind: ggml.TensorTypeF16, bias: 6},
	Small: {vocab: 4096, embd: 256, heads: 8, kvHeads: 2, ff: 768, ctx: 32768,
		swa: []bool{true, true, false, true, true, false}, sharedKV: 3, headSWA: 32, headFull: 64, perLayer: 32, window: 512,
		kind: ggml.TensorTypeQ8_0, bias: 6},
}

// Gemma4ChatTemplate is Gemma 4's turn format, without the tool-calling
// parts of Google's template: <|turn>ROLE\n...<turn|>\n, the assistant's
// role called model, and a generation prompt with an empty thinking channel
// (thinking off).
const Gemma4ChatTemplate = "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}{{ '<|turn>' + role + '\\n' + message['content'] | trim + '<turn|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|turn>model\\n<|channel>thought\\n<channel|>' }}{% endif %}"

func (s gemma4Shape) kv(m Model, params int64) ggml.KV {
	v := GemmaVocab(s.vocab)
	scores := make([]float32, len(v.Tokens))
	for i := range scores {
		scores[i] = -float32(i)
	}
	a := "gemma4."
	return ggml.KV{
		"general.architecture":                 "gemma4",
		"general.name":                         "tact-synth-" + m.String(),
		"general.file_type":                    fileType(s.kind),
		"general.parameter_count":              uint64(params),
		a + "context_length":                   uint32(s.ctx),
		a + "embedding_length":                 uint32(s.embd),
		a + "embedding_length_per_layer_input": uint32(s.perLayer),
		a + "block_count":                      uint32(len(s.swa)),
		a + "feed_forward_length":              uint32(s.ff),
		a + "attention.head_count":             uint32(s.heads),
		a + "attention.head_count_kv":          uint32(s.kvHeads),
		a + "attention.key_length":             uint32(s.headFull),
		a + "attention.value_length":           uint32(s.headFull),
		a + "attention.key_length_swa":         uint32(s.headSWA),
		a + "attention.value_length_swa":       uint32(s.headSWA),
		a + "attention.layer_norm_rms_epsilon": float32(1e-6),
		a + "attention.sliding_window":         uint32(s.window),
		a + "attention.sliding_window_pattern": s.swa,
		a + "attention.shared_kv_layers":       uint32(s.sharedKV),
		a + "rope.freq_base":                   float32(1000000),
		a + "rope.freq_base_swa":               float32(10000),
		a + "rope.dimension_count":             uint32(s.headFull),
		a + "rope.dimension_count_swa":         uint32(s.headSWA),
		a + "final_logit_softcapping":          float32(30),
		"tokenizer.ggml.model":                 "gemma4",
		"tokenizer.ggml.tokens":                v.Tokens,
		"tokenizer.ggml.scores":                scores,
		"tokenizer.ggml.token_type":            v.Types,
		"tokenizer.ggml.merges":                v.Merges,
		"tokenizer.ggml.bos_token_id":          uint32(GemmaBOSID),
		"tokenizer.ggml.eos_token_id":          uint32(GemmaEOSID),
		"tokenizer.ggml.unknown_token_id":      uint32(GemmaUnkID),
		"tokenizer.ggml.padding_token_id":      uint32(GemmaPadID),
		"tokenizer.ggml.add_bos_token":         true,
		"tokenizer.ggml.add_space_prefix":      false,
		"tokenizer.chat_template":              Gemma4ChatTemplate,
	}
}

func (s gemma4Shape) tensors(seed int64) *tensorSet {
	v := GemmaVocab(s.vocab)
	bias := logitBias(v.Tokens, s.bias)
	layers := len(s.swa)
	d := float64(s.embd)
	// The residual stream as the llama models' (see shape.tensors), with
	// Gemma's differences: the graph scales embeddings by sqrt(d), so the
	// stored rows are 1/sqrt(d) of the llama ones; every branch (attention,
	// FFN, per-layer input) goes through a post-norm before the residual
	// add, so those norms' dim-0 weights of 0 keep dim 0 constant, and
	// their other weights of 1/sqrt(3*layers) make the branches add about
	// as much as the embedding holds.
	inStd := float32(1 / math.Sqrt(d))
	norm0 := float32(1 / math.Sqrt(d/3))
	post := float32(1 / math.Sqrt(3*float64(layers)))
	logitStd := float32(1.5 / math.Sqrt(2*d/3))
	kind := func(cols int) ggml.TensorType { return matrixKind(s.kind, cols) }

	ts := &tensorSet{seed: seed}
	ts.add("token_embd.weight", kind(s.embd), s.embd, s.vocab, embedRows(inStd, 1))
	ts.add("output_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(norm0))
	ts.add("output.weight", kind(s.embd), s.embd, s.vocab, outputRows(logitStd, bias))
	pl := s.perLayer * layers
	ts.add("per_layer_token_embd.weight", kind(pl), pl, s.vocab, uniform(1/float32(math.Sqrt(float64(s.perLayer)))))
	ts.add("per_layer_model_proj.weight", kind(s.embd), s.embd, pl, uniform(1))
	ts.add("per_layer_proj_norm.weight", ggml.TensorTypeF32, s.perLayer, 1, constant(1))
	// Global layers' proportional RoPE: a quarter of the head rotates, the
	// rest gets a frequency factor of 1e30 (no rotation), as the converter
	// writes it.
	ts.add("rope_freqs.weight", ggml.TensorTypeF32, s.headFull/2, 1, func(_ int, _ *rand.Rand, out []float32) {
		for i := range out {
			out[i] = 1
			if i >= s.headFull/8 {
				out[i] = 1e30
			}
		}
	})
	kvLayers := layers - s.sharedKV
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		head := s.headFull
		if s.swa[l] {
			head = s.headSWA
		}
		ts.add(p+"attn_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(0))
		ts.add(p+"attn_q.weight", kind(s.embd), s.embd, head*s.heads, uniform(inStd))
		if l < kvLayers {
			ts.add(p+"attn_k.weight", kind(s.embd), s.embd, head*s.kvHeads, uniform(inStd))
			ts.add(p+"attn_v.weight", kind(s.embd), s.embd, head*s.kvHeads, uniform(inStd))
			ts.add(p+"attn_k_norm.weight", ggml.TensorTypeF32, head, 1, constant(1))
		}
		ts.add(p+"attn_q_norm.weight", ggml.TensorTypeF32, head, 1, constant(1))
		ts.add(p+"attn_output.weight", kind(head*s.heads), head*s.heads, s.embd,
			uniform(float32(1/math.Sqrt(float64(head*s.heads)))))
		ts.add(p+"post_attention_norm.weight", ggml.TensorTypeF32, s.embd, 1, normScaled(0, post))
		ts.add(p+"layer_output_scale.weight", ggml.TensorTypeF32, 1, 1, constant(1))
		ts.add(p+"ffn_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(0))
		ts.add(p+"ffn_gate.weight", kind(s.embd), s.embd, s.ff, uniform(inStd))
		ts.add(p+"ffn_up.weight", kind(s.embd), s.embd, s.ff, uniform(inStd))
		ts.add(p+"ffn_down.weight", kind(s.ff), s.ff, s.embd, uniform(float32(1/math.Sqrt(float64(s.ff)))))
		ts.add(p+"post_ffw_norm.weight", ggml.TensorTypeF32, s.embd, 1, normScaled(0, post))
		ts.add(p+"inp_gate.weight", kind(s.embd), s.embd, s.perLayer, uniform(inStd))
		ts.add(p+"proj.weight", kind(s.perLayer), s.perLayer, s.embd, uniform(float32(1/math.Sqrt(float64(s.perLayer)))))
		ts.add(p+"post_norm.weight", ggml.TensorTypeF32, s.embd, 1, normScaled(0, post))
	}
	return ts
}
