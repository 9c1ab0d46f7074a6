package synth

import (
	"fmt"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

// Arch is a model architecture synth can write.
type Arch string

const (
	// Llama is the classic llama architecture every llama.cpp loads.
	Llama Arch = "llama"
	// Qwen35 is Qwen3.5's: gated delta-net (linear attention) layers with a
	// gated full-attention layer every fourth, a byte-level BPE tokenizer.
	// Only llama.cpp releases from 2026 load it.
	Qwen35 Arch = "qwen35"
	// Gemma4 is Gemma 4's (the E2B/E4B shape): sliding-window and global
	// attention layers, shared KV layers, per-layer token embeddings, a
	// SentencePiece-style BPE tokenizer ("gemma4"). Only llama.cpp releases
	// from 2026 load it.
	Gemma4 Arch = "gemma4"
)

// Archs lists every architecture.
var Archs = []Arch{Llama, Qwen35, Gemma4}

// archVersion changes whenever an architecture's output changes, so cached
// models from an older generator are never reused.
var archVersion = map[Arch]int{Llama: Version, Qwen35: 1, Gemma4: 1}

// archSizes lists the sizes each architecture comes in.
var archSizes = map[Arch][]Size{
	Llama:  Sizes,
	Qwen35: {Tiny, Small},
	Gemma4: {Tiny, Small},
}

// ParseArch checks an architecture name.
func ParseArch(s string) (Arch, error) {
	for _, a := range Archs {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(Archs))
	for i, a := range Archs {
		names[i] = string(a)
	}
	return "", fmt.Errorf("architecture %q: want one of %s", s, strings.Join(names, ", "))
}

// Model names one synthetic model: an architecture at a size.
type Model struct {
	Arch Arch
	Size Size
}

// String is "tiny" for llama models (their historical name) and
// "ARCH-SIZE" for the others.
func (m Model) String() string {
	if m.Arch == Llama {
		return string(m.Size)
	}
	return string(m.Arch) + "-" + string(m.Size)
}

// Check reports whether the architecture comes in this size.
func (m Model) Check() error {
	if _, err := ParseArch(string(m.Arch)); err != nil {
		return err
	}
	if _, err := ParseSize(string(m.Size)); err != nil {
		return err
	}
	for _, z := range archSizes[m.Arch] {
		if z == m.Size {
			return nil
		}
	}
	names := make([]string, len(archSizes[m.Arch]))
	for i, z := range archSizes[m.Arch] {
		names[i] = string(z)
	}
	return fmt.Errorf("model size %q: %s models come in %s", m.Size, m.Arch, strings.Join(names, ", "))
}

// FileName is the model's cache file name: it names the generator version
// so a changed generator never serves a stale model.
func (m Model) FileName() string {
	return fmt.Sprintf("tact-synth-%s-v%d.gguf", m, archVersion[m.Arch])
}

// Params is the number of weights the model holds (0 for an unknown model).
func (m Model) Params() int64 {
	if m.Check() != nil {
		return 0
	}
	if m.Arch == Llama {
		return m.Size.Params()
	}
	_, ts := m.build(1, false)
	var n int64
	for _, t := range ts {
		n += int64(t.Elements())
	}
	return n
}

// build returns the model's metadata and tensors (their bytes are
// generated when written); f16 writes every weight matrix in F16.
func (m Model) build(seed int64, f16 bool) (ggml.KV, []*ggml.Tensor) {
	switch m.Arch {
	case Qwen35:
		s := qwen35Shapes[m.Size]
		if f16 {
			s.kind = ggml.TensorTypeF16
		}
		ts := s.tensors(seed)
		return s.kv(m, ts.params()), ts.ts
	case Gemma4:
		s := gemma4Shapes[m.Size]
		if f16 {
			s.kind = ggml.TensorTypeF16
		}
		ts := s.tensors(seed)
		return s.kv(m, ts.params()), ts.ts
	default:
		s := shapes[m.Size]
		if f16 {
			s.kind = ggml.TensorTypeF16
		}
		return s.kv(m.Size), s.tensors(seed)
	}
}

// fileType is general.file_type for the shape's 2D weights.
func (s shape) fileType() ggml.FileType { return fileType(s.kind) }

func fileType(kind ggml.TensorType) ggml.FileType {
	if kind == ggml.TensorTypeQ8_0 {
		return ggml.FileTypeQ8_0
	}
	return ggml.FileTypeF16
}

// matrixKind is kind for a weight matrix whose rows fit its blocks (Q8_0
// needs multiples of 32), else F16.
func matrixKind(kind ggml.TensorType, cols int) ggml.TensorType {
	if kind == ggml.TensorTypeQ8_0 && cols%32 != 0 {
		return ggml.TensorTypeF16
	}
	return kind
}
