package llamalib

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/tactcli/tact/internal/synth"
)

// runtimeDir is the runtime the tests load: TACT_RUNTIME_DIR (make test
// installs the pinned one and sets it). Without it the tests that need the
// libraries skip.
func runtimeDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TACT_RUNTIME_DIR")
	if dir == "" {
		t.Skip("TACT_RUNTIME_DIR is not set: no llama.cpp runtime to load")
	}
	return dir
}

func openLib(t *testing.T) *Lib {
	t.Helper()
	l, err := Open(runtimeDir(t), "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// The Go mirrors have the C layout of the pinned headers (sizes and the
// offsets of fields after padding), without loading anything.
func TestStructLayout(t *testing.T) {
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof llama_model_params", unsafe.Sizeof(ModelParams{}), sizeModelParams},
		{"llama_model_params.tensor_split", unsafe.Offsetof(ModelParams{}.TensorSplit), 40},
		{"llama_model_params.vocab_only", unsafe.Offsetof(ModelParams{}.VocabOnly), 72},
		{"sizeof llama_context_params", unsafe.Sizeof(ContextParams{}), sizeContextParams},
		{"llama_context_params.cb_eval", unsafe.Offsetof(ContextParams{}.CbEval), 88},
		{"llama_context_params.type_k", unsafe.Offsetof(ContextParams{}.TypeK), 104},
		{"llama_context_params.abort_callback", unsafe.Offsetof(ContextParams{}.AbortCallback), 112},
		{"llama_context_params.embeddings", unsafe.Offsetof(ContextParams{}.Embeddings), 128},
		{"llama_context_params.samplers", unsafe.Offsetof(ContextParams{}.Samplers), 136},
		{"llama_context_params.ctx_other", unsafe.Offsetof(ContextParams{}.CtxOther), 152},
		{"sizeof llama_model_quantize_params", unsafe.Sizeof(QuantizeParams{}), sizeQuantizeParams},
		{"llama_model_quantize_params.imatrix", unsafe.Offsetof(QuantizeParams{}.Imatrix), 24},
		{"llama_model_quantize_params.max_buf_size", unsafe.Offsetof(QuantizeParams{}.MaxBufSize), 56},
		{"sizeof llama_batch", unsafe.Sizeof(cBatch{}), sizeBatch},
		{"sizeof llama_token_data", unsafe.Sizeof(TokenData{}), sizeTokenData},
		{"sizeof llama_token_data_array", unsafe.Sizeof(TokenDataArray{}), sizeTokenDataArray},
		{"sizeof ggml_threadpool_params", unsafe.Sizeof(threadpoolParams{}), sizeThreadpool},
		{"ggml_threadpool_params.poll", unsafe.Offsetof(threadpoolParams{}.Poll), 520},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, the pinned header's is %d", c.name, c.got, c.want)
		}
	}
}

// A directory without the runtime is ErrNotInstalled, in one line naming
// it; an existing directory whose library is not a library is
// ErrBadRuntime naming the file.
func TestOpenBadDirs(t *testing.T) {
	// open, not Open: these fail before anything global changes, and a
	// runtime another test loaded must not hide them.
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := open(missing, ""); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), missing) {
		t.Errorf("open(missing) = %v, want ErrNotInstalled naming %s", err, missing)
	}
	empty := t.TempDir()
	if _, err := open(empty, ""); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "libggml-base") {
		t.Errorf("open(empty) = %v, want ErrNotInstalled naming libggml-base", err)
	}
	corrupt := t.TempDir()
	if err := os.WriteFile(filepath.Join(corrupt, "libggml-base.so"), []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := open(corrupt, "")
	if !errors.Is(err, ErrBadRuntime) || !strings.Contains(err.Error(), "libggml-base.so does not load") || strings.Contains(err.Error(), "\n") {
		t.Errorf("open(corrupt) = %v, want one line: ErrBadRuntime, libggml-base.so does not load", err)
	}
}

// Open loads the runtime once: the same directory gives the same Lib, the
// version check compares llama_version(), another directory is refused.
func TestOpenOnce(t *testing.T) {
	l := openLib(t)
	if l.Version() == "" {
		t.Fatal("llama_version() is empty")
	}
	again, err := Open(l.Dir(), l.Version())
	if err != nil || again != l {
		t.Fatalf("Open(same dir, its version) = %p, %v; want the same Lib", again, err)
	}
	if _, err := Open(l.Dir(), "0.0.0-other"); !errors.Is(err, ErrBadRuntime) || !strings.Contains(err.Error(), "tact wants 0.0.0-other") {
		t.Errorf("Open(wrong version) = %v, want ErrBadRuntime naming both versions", err)
	}
	if _, err := Open(t.TempDir(), ""); !errors.Is(err, ErrBadRuntime) || !strings.Contains(err.Error(), "already runs") {
		t.Errorf("Open(second dir) = %v, want ErrBadRuntime: one runtime per process", err)
	}
}

func TestSameRelease(t *testing.T) {
	for _, c := range []struct {
		got, want string
		same      bool
	}{
		{"0.5.0-dev", "v0.5.0", true}, {"0.5.0", "v0.5.0", true}, {"0.5.0-dev", "0.5.0-dev", true},
		{"0.5.1-dev", "v0.5.0", false}, {"0.5.0-rc1", "v0.5.0", false}, {"0.5.0", "v0.5.0-dev", false},
	} {
		if got := SameRelease(c.got, c.want); got != c.same {
			t.Errorf("SameRelease(%q, %q) = %v", c.got, c.want, got)
		}
	}
}

// ggml picked a CPU backend from the directory, and reports the CPU
// among its devices.
func TestCPUBackend(t *testing.T) {
	l := openLib(t)
	lib, features := l.CPUBackend()
	if !strings.HasPrefix(lib, "libggml-cpu") {
		t.Errorf("CPUBackend() = %q, want a libggml-cpu-*.so of %s", lib, l.Dir())
	}
	t.Logf("llama.cpp %s, CPU backend %s (%s)", l.Version(), lib, strings.Join(features, " "))
	if !slices.ContainsFunc(l.Devices(), func(d Device) bool { return d.Type == DevCPU }) {
		t.Errorf("Devices() = %+v, want a CPU", l.Devices())
	}
}

// A model loads, tokenizes and detokenizes, decodes, and a greedy chain
// over its logits agrees with llama_sampler_sample.
func TestModelDecodeSample(t *testing.T) {
	l := openLib(t)
	m, err := l.LoadModel(synth.Cached(t, synth.Tiny), ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if m.Arch() == "" || m.NVocab() == 0 || m.NLayer() == 0 || m.NParams() == 0 || m.Desc() == "" {
		t.Fatalf("model meta: arch %q vocab %d layers %d params %d desc %q", m.Arch(), m.NVocab(), m.NLayer(), m.NParams(), m.Desc())
	}
	text := "hello world, hello tact"
	toks, err := m.Tokenize(text, false, false)
	if err != nil || len(toks) == 0 {
		t.Fatalf("Tokenize = %v, %v", toks, err)
	}
	var back strings.Builder
	for _, tok := range toks {
		back.WriteString(m.TokenToPiece(tok, true))
	}
	if strings.TrimSpace(back.String()) != text {
		t.Errorf("pieces = %q, want %q", back.String(), text)
	}

	c, err := m.NewContext(ContextOptions{CtxSize: 256, BatchSize: 64, Seqs: 2, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	if c.NCtx() < 256 || c.NSeqMax() != 2 {
		t.Fatalf("context: %d cells, %d sequences", c.NCtx(), c.NSeqMax())
	}
	b, err := l.NewBatch(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	for i, tok := range toks {
		b.Add(tok, i, i == len(toks)-1, 0)
	}
	if err := c.Decode(b); err != nil {
		t.Fatal(err)
	}
	if got := c.SeqPosMax(0); got != len(toks)-1 {
		t.Errorf("SeqPosMax = %d, want %d", got, len(toks)-1)
	}
	logits := c.LogitsIth(b.Len() - 1)
	if len(logits) != m.NVocab() {
		t.Fatalf("logits: %d, want %d", len(logits), m.NVocab())
	}
	best := int32(0)
	for i, v := range logits {
		if v > logits[best] {
			best = int32(i)
		}
	}
	cands, err := l.NewCandidates(m.NVocab())
	if err != nil {
		t.Fatal(err)
	}
	defer cands.Free()
	chain := l.NewChain()
	chain.Add(l.Greedy())
	defer chain.Free()
	cands.Fill(logits)
	chain.Apply(cands)
	if got, ok := cands.Selected(); !ok || got.ID != best {
		t.Errorf("greedy chain selected %+v (%v), want token %d", got, ok, best)
	}
	if got := chain.Sample(c, b.Len()-1); got != best {
		t.Errorf("llama_sampler_sample = %d, want %d", got, best)
	}

	// Sequence ops: copy 0 to 1, trim, state round trip.
	c.SeqCp(0, 1, -1, -1)
	if c.SeqPosMax(1) != len(toks)-1 {
		t.Errorf("after SeqCp, sequence 1 ends at %d", c.SeqPosMax(1))
	}
	if !c.SeqRm(1, 2, -1) || c.SeqPosMax(1) != 1 {
		t.Errorf("after SeqRm(1, 2, -1), sequence 1 ends at %d, want 1", c.SeqPosMax(1))
	}
	n := c.StateSeqSize(0)
	state := make([]byte, n)
	if got := c.StateSeqGet(0, state); n == 0 || got != n {
		t.Fatalf("StateSeqGet = %d of %d", got, n)
	}
	c.SeqRm(1, -1, -1)
	if got := c.StateSeqSet(1, state); got != n || c.SeqPosMax(1) != len(toks)-1 {
		t.Errorf("StateSeqSet = %d of %d; sequence 1 ends at %d", got, n, c.SeqPosMax(1))
	}
}

// A raised abort flag makes a decode return ErrAborted; cleared, the next
// decode runs.
func TestAbort(t *testing.T) {
	l := openLib(t)
	m, err := l.LoadModel(synth.Cached(t, synth.Tiny), ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	c, err := m.NewContext(ContextOptions{CtxSize: 256, BatchSize: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	b, err := l.NewBatch(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	for i := range 32 {
		b.Add(int32(10+i), i, i == 31, 0)
	}
	c.SetAbort(true)
	if !c.Aborting() {
		t.Fatal("Aborting() false after SetAbort(true)")
	}
	if err := c.Decode(b); !errors.Is(err, ErrAborted) {
		t.Fatalf("Decode with the flag raised = %v, want ErrAborted", err)
	}
	c.SetAbort(false)
	c.SeqRm(0, -1, -1)
	if err := c.Decode(b); err != nil {
		t.Fatalf("Decode after clearing the flag = %v", err)
	}
}

// A GBNF grammar allows what it says: a grammar of "yes" or "no" keeps
// only tokens that start one of them.
func TestGrammar(t *testing.T) {
	l := openLib(t)
	m, err := l.LoadModel(synth.Cached(t, synth.Tiny), ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if _, err := m.NewGrammar(`root ::= (`, "root"); err == nil {
		t.Error("NewGrammar accepted a broken grammar")
	}
	g, err := m.NewGrammar(`root ::= "yes" | "no"`, "root")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free()
	cands, err := l.NewCandidates(m.NVocab())
	if err != nil {
		t.Fatal(err)
	}
	defer cands.Free()
	allowed := 0
	for tok := range int32(m.NVocab()) {
		cands.One(tok)
		g.Apply(cands)
		if d := cands.Data(); len(d) == 1 && d[0].Logit > -1e30 {
			allowed++
			p := m.TokenToPiece(tok, false)
			if p == "" || (!strings.HasPrefix("yes", p) && !strings.HasPrefix("no", p)) {
				t.Errorf("grammar allows token %d %q", tok, p)
			}
		}
	}
	if allowed == 0 {
		t.Error("grammar allows no token")
	}
	clone := g.Clone()
	if clone == nil {
		t.Fatal("Clone = nil")
	}
	clone.Free()
}

// A library that lacks functions tact calls is refused with the list of
// what it lacks (here libc, which has none of them), before any is bound.
func TestBindListsMissing(t *testing.T) {
	l := &Lib{}
	if err := l.openLibc(); err != nil {
		t.Skip(err)
	}
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Skip(err)
	}
	err = l.bind(h)
	if err == nil || !strings.Contains(err.Error(), "llama_version") || !strings.Contains(err.Error(), "llama_decode") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("bind(libc) = %v, want one line listing llama_version, llama_decode, ...", err)
	}
	if l.a.llamaVersion != nil {
		t.Error("bind bound functions although some were missing")
	}
}

// The self-test's failure is one line naming the struct.
func TestExpectOneLine(t *testing.T) {
	err := expect("llama_context_params", true, false, true)
	if err == nil || !strings.Contains(err.Error(), "llama_context_params") || !strings.Contains(err.Error(), "check 2") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("expect = %v", err)
	}
	if expect("x", true, true) != nil {
		t.Fatal("expect failed with every check true")
	}
}

// Quantize writes a Q8_0 copy of the tiny model that loads and agrees on
// the architecture and vocabulary.
func TestQuantize(t *testing.T) {
	l := openLib(t)
	out := filepath.Join(t.TempDir(), "q8.gguf")
	if err := l.Quantize(synth.Cached(t, synth.Tiny), out, FtypeMostlyQ8_0, 1); err != nil {
		t.Fatal(err)
	}
	m, err := l.LoadModel(out, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if ft, _ := m.Meta("general.file_type"); ft != "7" {
		t.Errorf("general.file_type = %q, want 7 (Q8_0)", ft)
	}
	if m.Arch() != "llama" || m.NVocab() != 512 {
		t.Errorf("quantized model: arch %q vocab %d", m.Arch(), m.NVocab())
	}
	if err := l.Quantize(filepath.Join(t.TempDir(), "missing.gguf"), out, FtypeMostlyQ8_0, 1); err == nil {
		t.Error("Quantize of a missing file succeeded")
	}
}

// llama.cpp's built-in ChatML template, with and without the assistant's
// turn; an unknown template is an error.
func TestApplyChatTemplate(t *testing.T) {
	l := openLib(t)
	msgs := []ChatMessage{{"system", "be brief"}, {"user", "hi"}}
	got, err := l.ApplyChatTemplate("chatml", msgs, true)
	want := "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
	if err != nil || got != want {
		t.Errorf("ApplyChatTemplate(chatml) = %q, %v; want %q", got, err, want)
	}
	m, err := l.LoadModel(synth.Cached(t, synth.Tiny), ModelOptions{VocabOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if got, err := l.ApplyChatTemplate(m.ChatTemplate(), msgs, true); err != nil || got != want {
		t.Errorf("ApplyChatTemplate(the model's) = %q, %v", got, err)
	}
	if _, err := l.ApplyChatTemplate("no such template {{", msgs, false); err == nil {
		t.Error("an unknown template applied")
	}
}

func BenchmarkTokenToPiece(b *testing.B) {
	dir := os.Getenv("TACT_RUNTIME_DIR")
	if dir == "" {
		b.Skip("TACT_RUNTIME_DIR is not set")
	}
	l, err := Open(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	m, err := l.LoadModel(synth.Cached(b, synth.Tiny), ModelOptions{VocabOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Free()
	b.ResetTimer()
	for i := range b.N {
		_ = m.TokenToPiece(int32(i%m.NVocab()), true)
	}
}

// findLib takes the names of every prebuilt package: the CPU one's
// libllama.v0.5.0.so, the CUDA one's libllama.cuda.v0.5.0.so, and a native
// build's, without mistaking libggml-base.so for libggml.
func TestFindLib(t *testing.T) {
	for _, names := range [][]string{
		{"libggml-base.so", "libggml.v0.5.0.so", "libllama.v0.5.0.so"},
		{"libggml-base.so", "libggml.cuda.v0.5.0.so", "libllama.cuda.v0.5.0.so", "libggml-cuda.so"},
		{"libggml-base.so", "libggml.so", "libllama.so"},
	} {
		dir := t.TempDir()
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for i, stem := range []string{"libggml-base", "libggml", "libllama"} {
			got, err := findLib(dir, stem)
			if err != nil || got != filepath.Join(dir, names[i]) {
				t.Errorf("findLib(%v, %s) = %s, %v; want %s", names, stem, got, err, names[i])
			}
		}
	}
}
