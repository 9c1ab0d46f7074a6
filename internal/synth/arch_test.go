package synth

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/tactcli/tact/llm/chattemplate"
	"github.com/tactcli/tact/models"
)

// decodeModel writes m and reads it back with ollama's GGUF decoder.
func decodeModel(t *testing.T, m Model) (*models.Info, *ggml.GGML) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := m.Write(p, 1); err != nil {
		t.Fatal(err)
	}
	info, err := models.Inspect(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatal(err)
	}
	return info, g
}

// TestNewArchsAreValidGGUF checks what llama.cpp's loader reads before it
// builds a graph (the loading itself is tested where a current runtime
// is): the architecture, every tensor's shape and the counts it derives
// them from, the tokenizer, and the parameter count.
func TestNewArchsAreValidGGUF(t *testing.T) {
	for _, tc := range []struct {
		m       Model
		quant   string
		maxSize int64
	}{
		{Model{Qwen35, Tiny}, "F16", 1 << 20},
		{Model{Qwen35, Small}, "Q8_0", 12 << 20},
		{Model{Gemma4, Tiny}, "F16", 1 << 20},
		{Model{Gemma4, Small}, "Q8_0", 12 << 20},
	} {
		t.Run(tc.m.String(), func(t *testing.T) {
			info, g := decodeModel(t, tc.m)
			if info.Architecture != string(tc.m.Arch) || info.Quantization != tc.quant {
				t.Errorf("info = %+v", info)
			}
			if info.Size > tc.maxSize {
				t.Errorf("%s is %d bytes, want at most %d", tc.m, info.Size, tc.maxSize)
			}
			shapes := map[string][]uint64{}
			var params uint64
			for _, tn := range g.Tensors().Items() {
				shapes[tn.Name] = tn.Shape
				params += tn.Elements()
			}
			if params != uint64(tc.m.Params()) || info.ParameterCount != params {
				t.Errorf("tensors hold %d parameters, Params() %d, metadata %d", params, tc.m.Params(), info.ParameterCount)
			}
			kv := g.KV()
			want := expectedTensors(t, tc.m, kv)
			for name, shape := range want {
				if got, ok := shapes[name]; !ok {
					t.Errorf("tensor %s missing", name)
				} else if !slices.Equal(got, shape) {
					t.Errorf("tensor %s is %v, want %v", name, got, shape)
				}
			}
			// The loader refuses a file with a tensor it did not ask for.
			for name := range shapes {
				if _, ok := want[name]; !ok {
					t.Errorf("tensor %s is not one the loader creates", name)
				}
			}
			checkTokenizer(t, tc.m.Arch, kv)
			// tact formats prompts with the family the template names.
			family := map[Arch]string{Qwen35: "chatml", Gemma4: "gemma4"}[tc.m.Arch]
			if f, warning := chattemplate.NewFormatter(info); f.Name() != family || warning != "" {
				t.Errorf("formatter %s (warning %q), want %s", f.Name(), warning, family)
			}
		})
	}
}

// expectedTensors is what the pinned loader creates for the model, from the
// metadata (load_arch_tensors in src/models/qwen35.cpp and gemma4.cpp),
// including the optional tensors the graph then uses.
func expectedTensors(t *testing.T, m Model, kv ggml.KV) map[string][]uint64 {
	// ggml.KV's getters put the architecture before keys.
	u := func(k string) uint64 { return uint64(kv.Uint(k)) }
	embd, vocab, layers := u("embedding_length"), uint64(len(kv.Strings("tokenizer.ggml.tokens"))), u("block_count")
	ff, heads, kvHeads := u("feed_forward_length"), u("attention.head_count"), u("attention.head_count_kv")
	want := map[string][]uint64{
		"token_embd.weight":  {embd, vocab},
		"output_norm.weight": {embd},
		"output.weight":      {embd, vocab},
	}
	blk := func(l uint64, name string, shape ...uint64) {
		want["blk."+strconv.FormatUint(l, 10)+"."+name] = shape
	}
	switch m.Arch {
	case Qwen35:
		head := u("attention.key_length")
		hk, groups, vHeads := u("ssm.state_size"), u("ssm.group_count"), u("ssm.time_step_rank")
		if u("ssm.inner_size") != hk*vHeads || vHeads%groups != 0 {
			t.Errorf("inner size %d, state %d x %d value heads, %d groups", u("ssm.inner_size"), hk, vHeads, groups)
		}
		var sections uint64
		for _, s := range kv.Ints("rope.dimension_sections") {
			sections += uint64(s)
		}
		if sections*2 != u("rope.dimension_count") {
			t.Errorf("rope sections sum %d, dimension count %d", sections, u("rope.dimension_count"))
		}
		interval := u("full_attention_interval")
		var recurrent, attention int
		for l := range layers {
			blk(l, "attn_norm.weight", embd)
			blk(l, "post_attention_norm.weight", embd)
			if (l+1)%interval != 0 {
				recurrent++
				keyDim, valueDim := hk*groups, hk*vHeads
				blk(l, "attn_qkv.weight", embd, 2*keyDim+valueDim)
				blk(l, "attn_gate.weight", embd, valueDim)
				blk(l, "ssm_conv1d.weight", u("ssm.conv_kernel"), 2*keyDim+valueDim)
				blk(l, "ssm_dt.bias", vHeads)
				blk(l, "ssm_a", vHeads)
				blk(l, "ssm_beta.weight", embd, vHeads)
				blk(l, "ssm_alpha.weight", embd, vHeads)
				blk(l, "ssm_norm.weight", hk)
				blk(l, "ssm_out.weight", valueDim, embd)
			} else {
				attention++
				blk(l, "attn_q.weight", embd, 2*head*heads)
				blk(l, "attn_k.weight", embd, head*kvHeads)
				blk(l, "attn_v.weight", embd, head*kvHeads)
				blk(l, "attn_output.weight", head*heads, embd)
				blk(l, "attn_q_norm.weight", head)
				blk(l, "attn_k_norm.weight", head)
			}
			blk(l, "ffn_gate.weight", embd, ff)
			blk(l, "ffn_up.weight", embd, ff)
			blk(l, "ffn_down.weight", ff, embd)
		}
		if recurrent == 0 || attention == 0 {
			t.Errorf("%d delta-net and %d attention layers: want both kinds", recurrent, attention)
		}
	case Gemma4:
		swa := kv.Bools("attention.sliding_window_pattern")
		if uint64(len(swa)) != layers {
			t.Fatalf("sliding window pattern has %d entries for %d layers", len(swa), layers)
		}
		kvLayers := layers - u("attention.shared_kv_layers")
		// The loader's reuse rule: shared layers take the KV cache of layer
		// kvLayers-2 (sliding) or kvLayers-1 (global).
		if kvLayers < 2 || !swa[kvLayers-2] || swa[kvLayers-1] {
			t.Errorf("layers %d and %d must be sliding then global for the shared layers to reuse them (pattern %v)", kvLayers-2, kvLayers-1, swa)
		}
		pl := u("embedding_length_per_layer_input")
		full, swaHead := u("attention.key_length"), u("attention.key_length_swa")
		want["per_layer_token_embd.weight"] = []uint64{pl * layers, vocab}
		want["per_layer_model_proj.weight"] = []uint64{embd, pl * layers}
		want["per_layer_proj_norm.weight"] = []uint64{pl}
		want["rope_freqs.weight"] = []uint64{full / 2}
		for l := range layers {
			head := full
			if swa[l] {
				head = swaHead
			}
			blk(l, "attn_norm.weight", embd)
			blk(l, "attn_q.weight", embd, head*heads)
			if l < kvLayers {
				blk(l, "attn_k.weight", embd, head*kvHeads)
				blk(l, "attn_v.weight", embd, head*kvHeads)
				blk(l, "attn_k_norm.weight", head)
			}
			blk(l, "attn_q_norm.weight", head)
			blk(l, "attn_output.weight", head*heads, embd)
			blk(l, "post_attention_norm.weight", embd)
			blk(l, "layer_output_scale.weight", 1)
			blk(l, "ffn_norm.weight", embd)
			blk(l, "ffn_gate.weight", embd, ff)
			blk(l, "ffn_up.weight", embd, ff)
			blk(l, "ffn_down.weight", ff, embd)
			blk(l, "post_ffw_norm.weight", embd)
			blk(l, "inp_gate.weight", embd, pl)
			blk(l, "proj.weight", pl, embd)
			blk(l, "post_norm.weight", embd)
		}
	}
	return want
}

// checkTokenizer checks the vocabulary llama.cpp's BPE tokenizer needs:
// every byte reachable (byte characters or byte-fallback tokens), every
// merge joining two tokens into a third, the specials where the metadata
// says.
func checkTokenizer(t *testing.T, arch Arch, kv ggml.KV) {
	tokens := kv.Strings("tokenizer.ggml.tokens")
	types := kv.Ints("tokenizer.ggml.token_type")
	merges := kv.Strings("tokenizer.ggml.merges")
	if len(types) != len(tokens) || len(merges) == 0 {
		t.Fatalf("%d tokens, %d types, %d merges", len(tokens), len(types), len(merges))
	}
	id := map[string]int{}
	for i, tok := range tokens {
		if _, dup := id[tok]; dup {
			t.Fatalf("duplicate token %q", tok)
		}
		id[tok] = i
	}
	for _, m := range merges {
		left, right, ok := strings.Cut(m, " ")
		if !ok || left == "" || right == "" {
			t.Fatalf("merge %q is not two parts", m)
		}
		for _, part := range []string{left, right, left + right} {
			if _, ok := id[part]; !ok {
				t.Errorf("merge %q: %q is no token", m, part)
			}
		}
	}
	special := func(key, tok string) {
		if i := int(kv.Uint("tokenizer.ggml." + key)); i >= len(tokens) || tokens[i] != tok || types[i] != typeControl {
			t.Errorf("%s is token %d, want control token %q", key, i, tok)
		}
	}
	switch arch {
	case Qwen35:
		if kv.String("tokenizer.ggml.model") != "gpt2" || kv.String("tokenizer.ggml.pre") != "qwen35" {
			t.Errorf("tokenizer %q/%q", kv.String("tokenizer.ggml.model"), kv.String("tokenizer.ggml.pre"))
		}
		bl := byteLevel()
		for b, r := range bl {
			if _, ok := id[string(r)]; !ok || utf8.RuneLen(r) < 1 {
				t.Errorf("byte %#x (%q) has no token", b, r)
			}
		}
		special("eos_token_id", "<|im_end|>")
		special("padding_token_id", "<|endoftext|>")
		if tokens[QwenIMStartID] != "<|im_start|>" || tokens[QwenIMEndID] != "<|im_end|>" {
			t.Error("ChatML specials are not where the constants say")
		}
		if _, ok := id["Ġ\""]; !ok {
			t.Error(`no byte-level " with a space before (Ġ")`)
		}
	case Gemma4:
		if kv.String("tokenizer.ggml.model") != "gemma4" || !kv.Bool("tokenizer.ggml.add_bos_token") {
			t.Errorf("tokenizer %q, add_bos %v", kv.String("tokenizer.ggml.model"), kv.Bool("tokenizer.ggml.add_bos_token"))
		}
		for b := range 256 {
			if types[gemmaFirstByte+b] != typeByte || tokens[gemmaFirstByte+b] != fmt.Sprintf("<0x%02X>", b) {
				t.Fatalf("token %d is %q, want byte %#x", gemmaFirstByte+b, tokens[gemmaFirstByte+b], b)
			}
		}
		special("bos_token_id", "<bos>")
		special("eos_token_id", "<eos>")
		if tokens[GemmaTurnID] != "<|turn>" || tokens[GemmaTurnEndID] != "<turn|>" {
			t.Error("turn markers are not where the constants say")
		}
		if !strings.Contains(kv.String("tokenizer.chat_template"), "<|turn>") {
			t.Error("chat template has no turn marker")
		}
	}
	for _, tok := range append([]string{"{"}, biased...) {
		if _, ok := id[tok]; !ok {
			t.Errorf("vocabulary lacks %q", tok)
		}
	}
}

func TestModelNames(t *testing.T) {
	if got := (Model{Llama, Tiny}).FileName(); got != FileName(Tiny) || got != "tact-synth-tiny-v4.gguf" {
		t.Errorf("llama tiny file name %q: the cached llama models must keep their names", got)
	}
	seen := map[string]bool{}
	for _, a := range Archs {
		if got, err := ParseArch(string(a)); err != nil || got != a {
			t.Errorf("ParseArch(%q) = %q, %v", a, got, err)
		}
		for _, z := range archSizes[a] {
			m := Model{a, z}
			name := m.FileName()
			if seen[name] || !strings.Contains(name, string(z)) || (a != Llama && !strings.Contains(name, string(a))) {
				t.Errorf("%v: file name %q should be unique and name architecture and size", m, name)
			}
			seen[name] = true
			if m.Params() <= 0 {
				t.Errorf("%v has %d parameters", m, m.Params())
			}
		}
	}
	if _, err := ParseArch("mamba"); err == nil || !strings.Contains(err.Error(), "llama, qwen35, gemma4") {
		t.Errorf("ParseArch(mamba) err = %v", err)
	}
	err := Model{Qwen35, Bench}.Check()
	if err == nil || !strings.Contains(err.Error(), "qwen35 models come in tiny, small") {
		t.Errorf("qwen35 bench: %v", err)
	}
	if err := (Model{Gemma4, Bench}).Write(filepath.Join(t.TempDir(), "x.gguf"), 1); err == nil {
		t.Error("Write accepted a size the architecture does not come in")
	}
	if p := Bench.Params(); (Model{Llama, Bench}).Params() != p {
		t.Error("Model.Params differs from Size.Params for llama")
	}
}

func TestEnsureModelCaches(t *testing.T) {
	dir := t.TempDir()
	m := Model{Qwen35, Tiny}
	p1, err := EnsureModel(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(p1)
	p2, err := EnsureModel(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(p2)
	if p1 != p2 || !st1.ModTime().Equal(st2.ModTime()) || filepath.Base(p1) != m.FileName() {
		t.Errorf("EnsureModel: %s then %s", p1, p2)
	}
	if p := CachedModel(t, Model{Gemma4, Tiny}); !strings.Contains(filepath.Base(p), "gemma4-tiny") {
		t.Errorf("CachedModel returned %q", p)
	}
}

func TestBPEVocabs(t *testing.T) {
	for _, n := range []int{300, 512, 4096} {
		for name, v := range map[string]BPEVocab{"qwen": QwenVocab(n), "gemma": GemmaVocab(n)} {
			if len(v.Tokens) != n || len(v.Types) != n {
				t.Errorf("%s(%d): %d tokens, %d types", name, n, len(v.Tokens), len(v.Types))
			}
			// Every merge builds a token no later than the vocabulary's end.
			have := map[string]bool{}
			for _, tok := range v.Tokens {
				have[tok] = true
			}
			for _, m := range v.Merges {
				l, r, _ := strings.Cut(m, " ")
				if !have[l] || !have[r] || !have[l+r] {
					t.Errorf("%s(%d): merge %q has a part that is no token", name, n, m)
				}
			}
		}
	}
}

// WriteF16 writes the same model (same weights, same tensors) with its
// matrices in F16, whatever the size's own type: the quantizer's source.
func TestWriteF16(t *testing.T) {
	for _, m := range []Model{{Llama, Small}, {Qwen35, Small}, {Gemma4, Small}} {
		p := filepath.Join(t.TempDir(), "f16.gguf")
		if err := m.WriteF16(p, 1); err != nil {
			t.Fatal(err)
		}
		info, err := models.Inspect(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Quantization != "F16" || info.ParameterCount != uint64(m.Params()) || info.Architecture != string(m.Arch) {
			t.Errorf("%v: %+v, want F16 with %d parameters", m, info, m.Params())
		}
	}
	if err := (Model{Qwen35, Bench}).WriteF16(filepath.Join(t.TempDir(), "x.gguf"), 1); err == nil {
		t.Error("WriteF16 accepted a size the architecture does not come in")
	}
}
