package llamalib

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Model is a loaded model and its vocabulary. Its methods are safe for
// concurrent use (llama.cpp's model and tokenizer are read-only) until
// Free.
type Model struct {
	l      *Lib
	p      unsafe.Pointer
	vocab  unsafe.Pointer
	nVocab int
}

// ModelOptions configures LoadModel.
type ModelOptions struct {
	GPULayers int  // layers offloaded to a GPU; 0: CPU only, negative: all
	NoMmap    bool // read the file into memory instead of mapping it
	VocabOnly bool // only the vocabulary, no weights
}

// LoadModel loads a GGUF file. llama.cpp says why it fails only in its
// logs (SetLogs).
func (l *Lib) LoadModel(path string, o ModelOptions) (*Model, error) {
	p := l.a.llamaModelDefaultParams()
	p.NGPULayers = int32(o.GPULayers)
	// Mapped, as tact always has: concurrent tact processes on one model
	// share its pages (the default, auto, may pick direct I/O).
	p.LoadMode = LoadModeMmap
	if o.NoMmap {
		p.LoadMode = LoadModeNone
	}
	p.VocabOnly = o.VocabOnly
	m := l.a.llamaModelLoadFromFile(cString(path), p)
	if m == nil {
		return nil, fmt.Errorf("llama.cpp cannot load model %s", path)
	}
	v := l.a.llamaModelGetVocab(m)
	return &Model{l: l, p: m, vocab: v, nVocab: int(l.a.llamaVocabNTokens(v))}, nil
}

// Free releases the model; every context made from it must be freed first.
func (m *Model) Free() {
	if m.p != nil {
		m.l.a.llamaModelFree(m.p)
		m.p = nil
	}
}

// Meta is the model's metadata value for key as a string (GGUF arrays are
// not supported); false when the model has no such key.
func (m *Model) Meta(key string) (string, bool) {
	buf := make([]byte, 256)
	for {
		n := m.l.a.llamaModelMetaValStr(m.p, cString(key), &buf[0], uintptr(len(buf)))
		if n < 0 {
			return "", false
		}
		if int(n) < len(buf) {
			return string(buf[:n]), true
		}
		buf = make([]byte, n+1)
	}
}

// Arch is general.architecture ("qwen35", "gemma4", ...).
func (m *Model) Arch() string { s, _ := m.Meta("general.architecture"); return s }

// NCtxTrain is the context length the model was trained with.
func (m *Model) NCtxTrain() int { return int(m.l.a.llamaModelNCtxTrain(m.p)) }

// NEmbd is the embedding width.
func (m *Model) NEmbd() int { return int(m.l.a.llamaModelNEmbd(m.p)) }

// NLayer is the count of repeating layers.
func (m *Model) NLayer() int { return int(m.l.a.llamaModelNLayer(m.p)) }

// Size is the bytes of all the model's tensors.
func (m *Model) Size() uint64 { return m.l.a.llamaModelSize(m.p) }

// NParams is the model's parameter count.
func (m *Model) NParams() uint64 { return m.l.a.llamaModelNParams(m.p) }

// IsRecurrent and IsHybrid tell memory kinds whose sequences cannot be cut
// anywhere (Mamba-like layers).
func (m *Model) IsRecurrent() bool { return m.l.a.llamaModelIsRecurrent(m.p) }

// IsHybrid reports a model mixing attention and recurrent layers.
func (m *Model) IsHybrid() bool { return m.l.a.llamaModelIsHybrid(m.p) }

// Desc is llama.cpp's one-line description ("qwen2 1.5B Q8_0").
func (m *Model) Desc() string {
	buf := make([]byte, 256)
	n := m.l.a.llamaModelDesc(m.p, &buf[0], uintptr(len(buf)))
	if n < 0 {
		return ""
	}
	return string(buf[:min(int(n), len(buf)-1)])
}

// ChatTemplate is the model's default chat template ("" when it has none).
func (m *Model) ChatTemplate() string { return goString(m.l.a.llamaModelChatTemplate(m.p, nil)) }

// NVocab is the vocabulary size.
func (m *Model) NVocab() int { return m.nVocab }

// BOS, EOS and EOT are the special tokens (-1: none).
func (m *Model) BOS() int32 { return m.l.a.llamaVocabBOS(m.vocab) }

// EOS is the end-of-sequence token.
func (m *Model) EOS() int32 { return m.l.a.llamaVocabEOS(m.vocab) }

// EOT is the end-of-turn token.
func (m *Model) EOT() int32 { return m.l.a.llamaVocabEOT(m.vocab) }

// IsEOG reports a token that ends generation (EOS, EOT, ...).
func (m *Model) IsEOG(tok int32) bool { return m.l.a.llamaVocabIsEOG(m.vocab, tok) }

// IsControl reports a control token.
func (m *Model) IsControl(tok int32) bool { return m.l.a.llamaVocabIsControl(m.vocab, tok) }

// AddBOS reports whether tokenizing with addSpecial prepends BOS.
func (m *Model) AddBOS() bool { return m.l.a.llamaVocabGetAddBOS(m.vocab) }

// Tokenize converts text to tokens: addSpecial adds BOS (and EOS) as the
// model is configured to; parseSpecial turns special tokens' texts into
// them instead of plain text.
func (m *Model) Tokenize(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	if len(text) > math.MaxInt32-2 {
		return nil, errors.New("llama.cpp tokenizer: text too long")
	}
	// A NUL-terminated copy, as llama.cpp's tokenizer may read one past.
	buf := cString(text)
	toks := make([]int32, len(text)+2)
	n := m.l.a.llamaTokenize(m.vocab, buf, int32(len(text)), &toks[0], int32(len(toks)), addSpecial, parseSpecial)
	if n < 0 {
		if n == math.MinInt32 {
			return nil, errors.New("llama.cpp tokenizer: too many tokens")
		}
		toks = make([]int32, -n)
		n = m.l.a.llamaTokenize(m.vocab, buf, int32(len(text)), &toks[0], int32(len(toks)), addSpecial, parseSpecial)
		if n < 0 {
			return nil, fmt.Errorf("llama.cpp tokenizer failed (%d)", n)
		}
	}
	return toks[:n], nil
}

// TokenToPiece is the text of one token; special renders control tokens'
// texts (else they are empty).
func (m *Model) TokenToPiece(tok int32, special bool) string {
	var small [32]byte
	n := m.l.a.llamaTokenToPiece(m.vocab, tok, &small[0], int32(len(small)), 0, special)
	if n >= 0 {
		return string(small[:n])
	}
	buf := make([]byte, -n)
	n = m.l.a.llamaTokenToPiece(m.vocab, tok, &buf[0], int32(len(buf)), 0, special)
	if n < 0 {
		return ""
	}
	return string(buf[:n])
}

// ChatMessage is one message for ApplyChatTemplate.
type ChatMessage struct{ Role, Content string }

// ApplyChatTemplate formats msgs with tmpl, one of llama.cpp's built-in
// templates (by name or by its Jinja text: llama.cpp matches known ones;
// it runs no Jinja), ending with the assistant's turn when addAssistant.
func (l *Lib) ApplyChatTemplate(tmpl string, msgs []ChatMessage, addAssistant bool) (string, error) {
	// The messages array and its strings in C memory: it holds pointers.
	mem := l.malloc(uintptr(max(len(msgs), 1)) * unsafe.Sizeof(chatMessage{}))
	if mem == nil {
		return "", errors.New("out of memory")
	}
	arr := unsafe.Slice((*chatMessage)(mem), max(len(msgs), 1))
	var strs []unsafe.Pointer
	defer func() {
		for _, p := range strs {
			l.free(p)
		}
		l.free(mem)
	}()
	total := 0
	for i, msg := range msgs {
		r, c := l.cStringC(msg.Role), l.cStringC(msg.Content)
		strs = append(strs, r, c)
		arr[i] = chatMessage{Role: r, Content: c}
		total += len(msg.Role) + len(msg.Content)
	}
	buf := make([]byte, 2*total+256)
	for {
		n := l.a.llamaChatApplyTemplate(cString(tmpl), &arr[0], uintptr(len(msgs)), addAssistant, &buf[0], int32(len(buf)))
		if n < 0 {
			return "", errors.New("llama.cpp does not know this chat template")
		}
		if int(n) <= len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, n)
	}
}

// cStringC copies s into C memory (NUL-terminated); free it with l.free.
func (l *Lib) cStringC(s string) unsafe.Pointer {
	p := l.malloc(uintptr(len(s) + 1))
	b := unsafe.Slice((*byte)(p), len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return p
}

// Quantize writes in's weights to out as ftype (FtypeMostlyQ8_0,
// FtypeMostlyQ4_K, ...) on threads threads (0: all).
func (l *Lib) Quantize(in, out string, ftype int32, threads int) error {
	p := l.a.llamaQuantizeDefaultParams()
	p.Ftype = ftype
	p.NThread = int32(threads)
	if rc := l.a.llamaModelQuantize(cString(in), cString(out), &p); rc != 0 {
		return fmt.Errorf("llama.cpp cannot quantize %s (run with logs on to see why)", in)
	}
	return nil
}
