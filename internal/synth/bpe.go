package synth

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// BPEVocab is a BPE tokenizer's vocabulary: tokens, their llama.cpp types,
// and the merges that build every multi-character token ("left right",
// lowest rank first).
type BPEVocab struct {
	Tokens []string
	Types  []int32
	Merges []string
}

// byteLevel maps a byte to the character GPT-2's byte-level BPE writes it
// as (bytes_to_unicode): printable Latin-1 stands for itself, the rest
// (controls, space, 0x7F-0xA0, 0xAD) move to U+0100 on, in byte order.
func byteLevel() [256]rune {
	var m [256]rune
	n := 0
	for b := range 256 {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE:
			m[b] = rune(b)
		default:
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// Qwen35 special tokens in QwenVocab.
const (
	QwenEndOfTextID = 256 // <|endoftext|>: padding, BOS (never added)
	QwenIMStartID   = 257 // <|im_start|>
	QwenIMEndID     = 258 // <|im_end|>: end of generation
)

// QwenVocab builds an n-token byte-level BPE vocabulary as Qwen's
// tokenizers have it (tokenizer.ggml.model "gpt2"): the 256 byte
// characters first, so any text tokenizes, then the ChatML specials, then
// pieces written in byte-level characters (a space is "Ġ").
func QwenVocab(n int) BPEVocab {
	var v BPEVocab
	bl := byteLevel()
	seen := make(map[string]bool, n)
	for _, r := range bl {
		v.Tokens = append(v.Tokens, string(r))
		v.Types = append(v.Types, typeNormal)
		seen[string(r)] = true
	}
	for _, tok := range []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"} {
		v.Tokens = append(v.Tokens, tok)
		v.Types = append(v.Types, typeControl)
	}
	space := string(bl[' '])
	v.fill(n, seen, func(p string) string { return strings.ReplaceAll(p, "▁", space) })
	return v
}

// Gemma 4 special tokens in GemmaVocab, at the ids Gemma's own tokenizer
// gives the first four.
const (
	GemmaPadID     = 0
	GemmaEOSID     = 1
	GemmaBOSID     = 2
	GemmaUnkID     = 3
	GemmaTurnID    = 4 // <|turn>: a turn starts
	GemmaTurnEndID = 5 // <turn|>: a turn ends (end of generation)
	gemmaFirstByte = 6 // <0x00> .. <0xFF> follow
)

// GemmaVocab builds an n-token vocabulary as Gemma 4's tokenizer has it
// (tokenizer.ggml.model "gemma4"): BPE over raw UTF-8 with spaces written
// "▁" and byte-fallback tokens <0x00>..<0xFF>, so any text tokenizes.
func GemmaVocab(n int) BPEVocab {
	var v BPEVocab
	for _, t := range []struct {
		tok string
		typ int32
	}{
		{"<pad>", typeControl}, {"<eos>", typeControl}, {"<bos>", typeControl}, {"<unk>", typeUnknown},
		{"<|turn>", typeControl}, {"<turn|>", typeControl},
	} {
		v.Tokens = append(v.Tokens, t.tok)
		v.Types = append(v.Types, t.typ)
	}
	for b := range 256 {
		v.Tokens = append(v.Tokens, fmt.Sprintf("<0x%02X>", b))
		v.Types = append(v.Types, typeByte)
	}
	v.fill(n, map[string]bool{}, func(p string) string { return p })
	return v
}

// fill appends pieces (rewritten by spell) up to n tokens, and a merge for
// every piece longer than one character: its first characters (an
// earlier piece) and its last. Merges rank in the order pieces come, the
// more common first.
func (v *BPEVocab) fill(n int, seen map[string]bool, spell func(string) string) {
	for _, t := range v.Tokens {
		seen[t] = true
	}
	for p := range pieces {
		if len(v.Tokens) >= n {
			break
		}
		tok := spell(p)
		if seen[tok] {
			continue
		}
		seen[tok] = true
		v.Tokens = append(v.Tokens, tok)
		v.Types = append(v.Types, typeNormal)
		if _, size := utf8.DecodeLastRuneInString(tok); size < len(tok) {
			v.Merges = append(v.Merges, tok[:len(tok)-size]+" "+tok[len(tok)-size:])
		}
	}
	v.Tokens, v.Types = v.Tokens[:n], v.Types[:n]
}
