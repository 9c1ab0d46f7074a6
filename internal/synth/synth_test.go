package synth

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/tactcli/tact/models"
)

func TestWriteIsValidGGUF(t *testing.T) {
	for _, tc := range []struct {
		size    Size
		quant   string
		maxSize int64
	}{
		{Tiny, "F16", 1 << 20},
		{Small, "Q8_0", 8 << 20},
	} {
		t.Run(string(tc.size), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.gguf")
			if err := Write(p, tc.size, 1); err != nil {
				t.Fatal(err)
			}
			info, err := models.Inspect(p)
			if err != nil {
				t.Fatal(err)
			}
			if info.Architecture != "llama" || info.Quantization != tc.quant || info.ChatTemplate != ChatTemplate {
				t.Errorf("info = %+v", info)
			}
			if info.Size > tc.maxSize {
				t.Errorf("%s model is %d bytes, want at most %d", tc.size, info.Size, tc.maxSize)
			}
			if info.ParameterCount != uint64(tc.size.Params()) {
				t.Errorf("parameter count %d, Params() %d", info.ParameterCount, tc.size.Params())
			}

			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			g, err := ggml.Decode(f, -1)
			if err != nil {
				t.Fatal(err)
			}
			s := shapes[tc.size]
			if n := len(g.Tensors().Items()); n != 3+9*s.layers {
				t.Errorf("%d tensors, want %d", n, 3+9*s.layers)
			}
			var params uint64
			for _, tn := range g.Tensors().Items() {
				params += tn.Elements()
			}
			if params != uint64(tc.size.Params()) {
				t.Errorf("tensors hold %d parameters, Params() says %d", params, tc.size.Params())
			}
			kv := g.KV()
			if got := kv.Strings("tokenizer.ggml.tokens"); len(got) != s.vocab {
				t.Errorf("%d tokens, want %d", len(got), s.vocab)
			}
			if kv.Uint("tokenizer.ggml.eot_token_id") != IMEndID {
				t.Error("eot token is not <|im_end|>")
			}
			st, _ := f.Stat()
			if want := g.Tensors().Offset + maxEnd(g.Tensors().Items()); uint64(st.Size()) < want {
				t.Errorf("file is %d bytes, tensor data ends at %d", st.Size(), want)
			}
		})
	}
}

func maxEnd(ts []*ggml.Tensor) uint64 {
	var end uint64
	for _, t := range ts {
		end = max(end, t.Offset+t.Size())
	}
	return end
}

func TestWriteIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	sum := func(name string, seed int64) [32]byte {
		p := filepath.Join(dir, name)
		if err := Write(p, Tiny, seed); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	a, b, c := sum("a", 1), sum("b", 1), sum("c", 2)
	if a != b {
		t.Error("the same seed wrote different files")
	}
	if a == c {
		t.Error("different seeds wrote the same file")
	}
}

func TestVocab(t *testing.T) {
	for _, n := range []int{512, 4096, 32000} {
		tokens, scores, types := Vocab(n)
		if len(tokens) != n || len(scores) != n || len(types) != n {
			t.Fatalf("Vocab(%d): %d tokens, %d scores, %d types", n, len(tokens), len(scores), len(types))
		}
		seen := map[string]bool{}
		for _, tok := range tokens {
			if seen[tok] {
				t.Fatalf("Vocab(%d): duplicate token %q", n, tok)
			}
			seen[tok] = true
		}
		// Every byte has a token, so any text tokenizes.
		for b := range 256 {
			id := firstByte + b
			if types[id] != typeByte || tokens[id] != fmt.Sprintf("<0x%02X>", b) {
				t.Fatalf("Vocab(%d): token %d is %q (type %d), want byte %#x", n, id, tokens[id], types[id], b)
			}
		}
		want := map[int]string{UnkID: "<unk>", BOSID: "<s>", EOSID: "</s>", IMStartID: "<|im_start|>", IMEndID: "<|im_end|>"}
		for id, tok := range want {
			if tokens[id] != tok {
				t.Errorf("token %d is %q, want %q", id, tokens[id], tok)
			}
		}
		for _, tok := range append([]string{"▁", "{", `"`}, biased...) {
			if !slices.Contains(tokens, tok) {
				t.Errorf("Vocab(%d) lacks %q", n, tok)
			}
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, s := range Sizes {
		if got, err := ParseSize(string(s)); err != nil || got != s {
			t.Errorf("ParseSize(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseSize("huge"); err == nil || !strings.Contains(err.Error(), "tiny, small, bench") {
		t.Errorf("ParseSize(huge) err = %v", err)
	}
	if err := Write(filepath.Join(t.TempDir(), "x.gguf"), "huge", 1); err == nil {
		t.Error("Write accepted an unknown size")
	}
	// The bench model has a realistic size: about 250M parameters.
	if p := Bench.Params(); p < 230e6 || p > 270e6 {
		t.Errorf("bench model has %d parameters", p)
	}
}

func TestEnsureCaches(t *testing.T) {
	dir := t.TempDir()
	p1, err := Ensure(dir, Tiny)
	if err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(p1)
	p2, err := Ensure(dir, Tiny)
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(p2)
	if p1 != p2 || !st1.ModTime().Equal(st2.ModTime()) {
		t.Error("Ensure regenerated a cached model")
	}
	if !strings.Contains(filepath.Base(p1), "tiny") || !strings.Contains(filepath.Base(p1), "v") {
		t.Errorf("cache file name %q should name size and version", p1)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("cache dir holds %d entries (temp files left?)", len(entries))
	}
	if p := Cached(t, Tiny); p == "" {
		t.Error("Cached returned no path")
	}
	if b, _ := os.ReadFile(p1); !bytes.HasPrefix(b, []byte("GGUF")) {
		t.Error("cached file is not GGUF")
	}
}
