// Package synth writes small random-weight GGUF models for tests and
// benchmarks, so no model file is ever committed or downloaded.
//
// The models speak nothing, but they are real llama.cpp models. The default
// (Write, Ensure, Cached) is a llama architecture with a SentencePiece-style
// vocabulary with byte fallback (every byte is a token, so any text
// tokenizes and round-trips), the ChatML special tokens <|im_start|> and
// <|im_end|> (end of generation), and the standard ChatML chat template.
// Model adds the current architectures llama.cpp's newer releases load
// (qwen35, gemma4: see their files), each with the tokenizer its real
// models ship.
//
// One trick makes them useful under grammar-constrained decoding: a constant
// feature in dimension 0 of the residual stream (the layers never write it)
// acts as a per-token logit bias in the output layer. The closing tokens `"`,
// `}` and `]` get a bias, so JSON strings, objects and arrays end after a few
// tokens instead of running to the token limit.
package synth

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/x448/float16"
)

// Size selects a model shape.
type Size string

const (
	Tiny  Size = "tiny"  // about 130k parameters, F16, under 1 MB: unit tests
	Small Size = "small" // about 5M parameters, Q8_0, about 6 MB
	Bench Size = "bench" // about 246M parameters, Q8_0, about 260 MB: benchmarks
)

// Sizes lists every size, smallest first.
var Sizes = []Size{Tiny, Small, Bench}

// Version changes whenever the generator's output changes, so cached models
// from an older generator are never reused.
const Version = 4

// Token ids shared by every size.
const (
	UnkID     = 0
	BOSID     = 1
	EOSID     = 2
	IMStartID = 3
	IMEndID   = 4
	firstByte = 5 // <0x00> .. <0xFF> follow
)

// ChatTemplate is the standard ChatML Jinja template.
const ChatTemplate = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

type shape struct {
	vocab, embd, layers, heads, kvHeads, ff, ctx int
	kind                                         ggml.TensorType // 2D weights: F16 or Q8_0
	bias                                         float32         // logit bias of the closing tokens
}

var shapes = map[Size]shape{
	Tiny:  {vocab: 512, embd: 64, layers: 2, heads: 4, kvHeads: 2, ff: 128, ctx: 32768, kind: ggml.TensorTypeF16, bias: 6},
	Small: {vocab: 4096, embd: 256, layers: 4, heads: 8, kvHeads: 4, ff: 768, ctx: 32768, kind: ggml.TensorTypeQ8_0, bias: 6},
	Bench: {vocab: 32000, embd: 1024, layers: 16, heads: 16, kvHeads: 4, ff: 2816, ctx: 8192, kind: ggml.TensorTypeQ8_0, bias: 5},
}

// ParseSize checks a size name.
func ParseSize(s string) (Size, error) {
	if _, ok := shapes[Size(s)]; ok {
		return Size(s), nil
	}
	names := make([]string, len(Sizes))
	for i, z := range Sizes {
		names[i] = string(z)
	}
	return "", fmt.Errorf("model size %q: want one of %s", s, strings.Join(names, ", "))
}

// Params is the number of weights a model of this size holds.
func (z Size) Params() int64 {
	s, ok := shapes[z]
	if !ok {
		return 0
	}
	kv := s.embd / s.heads * s.kvHeads
	perLayer := 2*s.embd*s.embd + 2*s.embd*kv + 3*s.embd*s.ff + 2*s.embd
	return int64(2*s.vocab*s.embd + s.layers*perLayer + s.embd)
}

// Write generates a llama model of the given size into path. The same size
// and seed always give the same bytes. The file appears atomically: it is
// written next to path and renamed into place.
func Write(path string, size Size, seed int64) error {
	return Model{Llama, size}.Write(path, seed)
}

// Write generates the model into path (see the package function Write).
func (m Model) Write(path string, seed int64) error { return m.write(path, seed, false) }

// WriteF16 is Write with every weight matrix in F16: the same model (the
// same seed draws the same weights), as the source llama.cpp's quantizer
// takes to make other quantizations (it refuses to requantize Q8_0).
func (m Model) WriteF16(path string, seed int64) error { return m.write(path, seed, true) }

func (m Model) write(path string, seed int64, f16 bool) error {
	if err := m.Check(); err != nil {
		return err
	}
	kv, ts := m.build(seed, f16)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".synth-*.gguf")
	if err != nil {
		return fmt.Errorf("synthetic model %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("synthetic model %s: %w", path, err)
	}
	if err := ggml.WriteGGUF(tmp, kv, ts); err != nil {
		tmp.Close()
		return fmt.Errorf("synthetic model %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("synthetic model %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("synthetic model %s: %w", path, err)
	}
	return nil
}

// FileName is the cache file name of a llama model of this size: it names
// the generator version so a changed generator never serves a stale model.
func FileName(size Size) string { return Model{Llama, size}.FileName() }

// CacheDir is where Cached keeps models: $XDG_CACHE_HOME/tact-test-models
// (os.UserCacheDir), or the system temp directory when there is none.
func CacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tact-test-models")
	}
	return filepath.Join(os.TempDir(), "tact-test-models")
}

var cacheMu sync.Mutex

// Ensure returns the path of a llama model of this size in dir, generating
// it (seed 1) when it is not there yet.
func Ensure(dir string, size Size) (string, error) { return EnsureModel(dir, Model{Llama, size}) }

// EnsureModel returns the path of model m in dir, generating it (seed 1)
// when it is not there yet.
func EnsureModel(dir string, m Model) (string, error) {
	if err := m.Check(); err != nil {
		return "", err
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	path := filepath.Join(dir, m.FileName())
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("model cache %s: %w", dir, err)
	}
	if err := m.Write(path, 1); err != nil {
		return "", err
	}
	return path, nil
}

// TB is the part of testing.TB that Cached needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	TempDir() string
}

// Cached returns a llama model of this size for a test, generated once into
// CacheDir (or the test's temp directory when the cache is not writable).
func Cached(tb TB, size Size) string {
	tb.Helper()
	return CachedModel(tb, Model{Llama, size})
}

// CachedModel is Cached for any model.
func CachedModel(tb TB, m Model) string {
	tb.Helper()
	path, err := EnsureModel(CacheDir(), m)
	if err == nil {
		return path
	}
	path, err2 := EnsureModel(tb.TempDir(), m)
	if err2 != nil {
		tb.Fatalf("synthetic %s model: %v (cache: %v)", m, err2, err)
	}
	return path
}

func (s shape) kv(size Size) ggml.KV {
	tokens, scores, types := Vocab(s.vocab)
	return ggml.KV{
		"general.architecture":                   "llama",
		"general.name":                           "tact-synth-" + string(size),
		"general.file_type":                      s.fileType(),
		"general.parameter_count":                uint64(size.Params()),
		"llama.context_length":                   uint32(s.ctx),
		"llama.embedding_length":                 uint32(s.embd),
		"llama.block_count":                      uint32(s.layers),
		"llama.feed_forward_length":              uint32(s.ff),
		"llama.attention.head_count":             uint32(s.heads),
		"llama.attention.head_count_kv":          uint32(s.kvHeads),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.freq_base":                   float32(10000),
		"llama.rope.dimension_count":             uint32(s.embd / s.heads),
		"llama.vocab_size":                       uint32(s.vocab),
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.tokens":                  tokens,
		"tokenizer.ggml.scores":                  scores,
		"tokenizer.ggml.token_type":              types,
		"tokenizer.ggml.bos_token_id":            uint32(BOSID),
		"tokenizer.ggml.eos_token_id":            uint32(EOSID),
		"tokenizer.ggml.eot_token_id":            uint32(IMEndID),
		"tokenizer.ggml.unknown_token_id":        uint32(UnkID),
		"tokenizer.ggml.add_bos_token":           false,
		"tokenizer.ggml.add_eos_token":           false,
		"tokenizer.ggml.add_space_prefix":        false,
		"tokenizer.chat_template":                ChatTemplate,
	}
}

// llama.cpp token types (llama_token_type).
const (
	typeNormal  int32 = 1
	typeUnknown int32 = 2
	typeControl int32 = 3
	typeByte    int32 = 6
)

// Vocab builds an n-token SentencePiece vocabulary: special tokens, 256
// byte tokens, "▁" (SentencePiece's space), printable ASCII, a few JSON
// pieces, then letter n-grams with and without a leading space, most
// frequent letters first, so English-ish text averages a few characters
// per token like a real vocabulary.
func Vocab(n int) (tokens []string, scores []float32, types []int32) {
	add := func(tok string, typ int32) {
		tokens = append(tokens, tok)
		types = append(types, typ)
		scores = append(scores, 0)
	}
	add("<unk>", typeUnknown)
	add("<s>", typeControl)
	add("</s>", typeControl)
	add("<|im_start|>", typeControl)
	add("<|im_end|>", typeControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), typeByte)
	}
	for tok := range pieces {
		if len(tokens) >= n {
			break
		}
		// SentencePiece merges the highest-scoring pair first; earlier
		// (more common) pieces win.
		tokens = append(tokens, tok)
		types = append(types, typeNormal)
		scores = append(scores, -float32(len(tokens)))
	}
	return tokens[:n], scores[:n], types[:n]
}

// pieces yields the vocabularies' ordinary pieces, SentencePiece style
// ("▁" is a space), most useful first and each once, without end: "▁",
// printable ASCII, a few JSON pieces, then letter n-grams with and without
// a leading space, most frequent letters first. Every piece longer than one
// character is an earlier piece plus one character, which is what lets the
// BPE vocabularies build every piece by merges.
func pieces(yield func(string) bool) {
	seen := map[string]bool{}
	emit := func(tok string) bool {
		if seen[tok] {
			return true
		}
		seen[tok] = true
		return yield(tok)
	}
	if !emit("▁") {
		return
	}
	for c := byte('!'); c <= '~'; c++ {
		if !emit(string(c)) {
			return
		}
	}
	for _, p := range []string{`{"`, `":`, `",`, `"}`, `":"`, `","`, `"},`, `[{`, `}]`, `▁"`, `▁{`, `▁}`} {
		if !emit(p) {
			return
		}
	}
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	grams := []string{""}
	for {
		var next []string
		for _, g := range grams {
			for i := range len(letters) {
				next = append(next, g+letters[i:i+1])
			}
		}
		// Interleave "▁word" and "word" so both kinds fill small vocabularies.
		for _, g := range next {
			if !emit("▁"+g) || !emit(g) {
				return
			}
		}
		grams = next
	}
}

// biased are the tokens that close JSON values.
var biased = []string{`"`, `}`, `]`}

// logitBias gives the tokens that close JSON values their output-layer bias.
func logitBias(tokens []string, bias float32) map[int]float32 {
	m := make(map[int]float32)
	for i, t := range tokens {
		switch {
		case t == `"`:
			// The quote outranks everything, so strings end as soon as a
			// grammar allows it, even at low temperature; } and ] get half,
			// which ends objects and arrays soon without filling strings
			// with them.
			m[i] = bias
		case slices.Contains(biased, t):
			m[i] = bias / 2
		}
	}
	return m
}

func (s shape) tensors(seed int64) []*ggml.Tensor {
	tokens, _, _ := Vocab(s.vocab)
	bias := logitBias(tokens, s.bias)
	d := float64(s.embd)
	kvDim := s.embd / s.heads * s.kvHeads
	// Residual stream: embedding rows have dim 0 = sqrt(d) and the other
	// dims unit variance; the layers add about as much again (their output
	// projections are scaled down by 1/sqrt(2*layers)), so the final RMS is
	// about sqrt(3) and the normalized dim 0 about sqrt(d/3). The output
	// norm's weight for dim 0 rescales that to 1, so output row t's dim 0
	// is token t's bias in logit units.
	dim0 := float32(math.Sqrt(d))
	norm0 := float32(1 / math.Sqrt(d/3))
	inStd := float32(1 / math.Sqrt(d))
	outStd := inStd / float32(math.Sqrt(2*float64(s.layers)))
	downStd := float32(1/math.Sqrt(float64(s.ff))) / float32(math.Sqrt(2*float64(s.layers)))
	logitStd := float32(1.5 / math.Sqrt(2*d/3))

	ts := &tensorSet{seed: seed}
	ts.add("token_embd.weight", s.kind, s.embd, s.vocab, embedRows(1, dim0))
	ts.add("output_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(norm0))
	ts.add("output.weight", s.kind, s.embd, s.vocab, outputRows(logitStd, bias))
	for l := range s.layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts.add(p+"attn_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(0))
		ts.add(p+"attn_q.weight", s.kind, s.embd, s.embd, uniform(inStd))
		ts.add(p+"attn_k.weight", s.kind, s.embd, kvDim, uniform(inStd))
		ts.add(p+"attn_v.weight", s.kind, s.embd, kvDim, uniform(inStd))
		ts.add(p+"attn_output.weight", s.kind, s.embd, s.embd, zeroRow0(outStd))
		ts.add(p+"ffn_norm.weight", ggml.TensorTypeF32, s.embd, 1, normWeights(0))
		ts.add(p+"ffn_gate.weight", s.kind, s.embd, s.ff, uniform(inStd))
		ts.add(p+"ffn_up.weight", s.kind, s.embd, s.ff, uniform(inStd))
		ts.add(p+"ffn_down.weight", s.kind, s.ff, s.embd, zeroRow0(downStd))
	}
	return ts.ts
}

// tensorSet collects a model's tensors; their bytes are generated when
// the file is written.
type tensorSet struct {
	seed int64
	ts   []*ggml.Tensor
}

// add adds a cols x rows tensor (ggml order: cols is ne[0]); rows 1 makes a
// vector.
func (s *tensorSet) add(name string, kind ggml.TensorType, cols, rows int, row rowFunc) {
	shape := []uint64{uint64(cols)}
	if rows > 1 {
		shape = append(shape, uint64(rows))
	}
	t := &ggml.Tensor{Name: name, Kind: uint32(kind), Shape: shape}
	t.WriterTo = &tensorData{seed: s.seed, name: name, kind: kind, cols: cols, rows: rows, row: row}
	s.ts = append(s.ts, t)
}

// params is the number of weights the set holds.
func (s *tensorSet) params() int64 {
	var n int64
	for _, t := range s.ts {
		n += int64(t.Elements())
	}
	return n
}

func uniform(std float32) rowFunc {
	return func(_ int, r *rand.Rand, out []float32) { fillUniform(r, out, std) }
}

// zeroRow0 keeps a layer from writing residual dim 0.
func zeroRow0(std float32) rowFunc {
	return func(i int, r *rand.Rand, out []float32) {
		if i == 0 {
			clear(out)
			return
		}
		fillUniform(r, out, std)
	}
}

// normWeights ignores dim 0 inside the layers (it is a constant there).
func normWeights(first float32) rowFunc { return normScaled(first, 1) }

// normScaled is a norm weight of rest in every dim but 0, which gets first.
func normScaled(first, rest float32) rowFunc {
	return func(_ int, _ *rand.Rand, out []float32) {
		for i := range out {
			out[i] = rest
		}
		out[0] = first
	}
}

// constant fills every element with v.
func constant(v float32) rowFunc {
	return func(_ int, _ *rand.Rand, out []float32) {
		for i := range out {
			out[i] = v
		}
	}
}

// embedRows are embedding rows of standard deviation std with the constant
// feature dim0 in dimension 0.
func embedRows(std, dim0 float32) rowFunc {
	return func(_ int, r *rand.Rand, out []float32) {
		fillUniform(r, out, std)
		out[0] = dim0
	}
}

// outputRows are output-layer rows whose dim 0 is the token's logit bias.
func outputRows(std float32, bias map[int]float32) rowFunc {
	return func(i int, r *rand.Rand, out []float32) {
		fillUniform(r, out, std)
		out[0] = bias[i]
	}
}

// rowFunc fills row i of a tensor (one output unit's weights).
type rowFunc func(i int, r *rand.Rand, out []float32)

// fillUniform draws from a uniform distribution with the given standard
// deviation: cheap, and a random model needs no Gaussian.
func fillUniform(r *rand.Rand, out []float32, std float32) {
	a := std * float32(math.Sqrt(3))
	for i := range out {
		out[i] = (2*r.Float32() - 1) * a
	}
}

// tensorData generates a tensor's bytes on demand; WriteGGUF writes tensors
// in parallel, so each has its own generator seeded from (seed, name).
type tensorData struct {
	seed       int64
	name       string
	kind       ggml.TensorType
	cols, rows int
	row        rowFunc
}

func (t *tensorData) WriteTo(w io.Writer) (int64, error) {
	h := sha256.Sum256(fmt.Appendf(nil, "%d/%s", t.seed, t.name))
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
	bw := bufio.NewWriterSize(w, 1<<20)
	vals := make([]float32, t.cols)
	var buf []byte
	var n int64
	for i := range t.rows {
		t.row(i, r, vals)
		buf = encodeRow(buf[:0], t.kind, vals)
		m, err := bw.Write(buf)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

var errKind = errors.New("unsupported tensor type")

// encodeRow appends vals in the tensor type's byte layout.
func encodeRow(dst []byte, kind ggml.TensorType, vals []float32) []byte {
	switch kind {
	case ggml.TensorTypeF32:
		for _, v := range vals {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case ggml.TensorTypeF16:
		for _, v := range vals {
			dst = binary.LittleEndian.AppendUint16(dst, float16.Fromfloat32(v).Bits())
		}
	case ggml.TensorTypeQ8_0:
		// block_q8_0: an f16 scale, then 32 int8 quants (x = d*q).
		for b := 0; b < len(vals); b += 32 {
			blk := vals[b : b+32]
			var amax float32
			for _, v := range blk {
				amax = max(amax, abs(v))
			}
			d := amax / 127
			inv := float32(0)
			if d != 0 {
				inv = 1 / d
			}
			dst = binary.LittleEndian.AppendUint16(dst, float16.Fromfloat32(d).Bits())
			for _, v := range blk {
				dst = append(dst, byte(int8(math.Round(float64(v*inv)))))
			}
		}
	default:
		panic(errKind) // shapes only use the types above
	}
	return dst
}

func abs(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}
