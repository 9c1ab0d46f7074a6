package llamalib

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tactcli/tact/internal/synth"
)

// actionGBNF is a ReAct-like action object, the shape tact's schemas
// compile to: fixed keys, an enum and free strings.
const actionGBNF = `root   ::= "{" "\"thought\":" string ",\"action\":" action ",\"input\":" string "}"
action ::= "\"list_files\"" | "\"read_file\"" | "\"finish\""
string ::= "\"" char* "\""
char   ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`

// The 2026 architectures the cgo build's llama.cpp cannot load (Qwen3.5's
// hybrid of gated delta-net and attention layers, Gemma 4's sliding and
// shared-KV layers with per-layer embeddings) load on the runtime, and a
// grammar-constrained generation from a chat prompt ends, at an
// end-of-generation token, in a JSON object the grammar allows.
func TestNewArchitecturesGenerate(t *testing.T) {
	l := openLib(t)
	for _, tc := range []struct {
		arch     synth.Arch
		prompt   string
		hybrid   bool
		controls int // turn markers, and Gemma's BOS
	}{
		{synth.Qwen35, "<|im_start|>system\nYou are tact.<|im_end|>\n<|im_start|>user\nlist the files<|im_end|>\n<|im_start|>assistant\n", true, 5},
		{synth.Gemma4, "<|turn>system\nYou are tact.<turn|>\n<|turn>user\nlist the files<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", false, 6},
	} {
		t.Run(string(tc.arch), func(t *testing.T) {
			m, err := l.LoadModel(synth.CachedModel(t, synth.Model{Arch: tc.arch, Size: synth.Tiny}), ModelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			if m.Arch() != string(tc.arch) || m.IsHybrid() != tc.hybrid {
				t.Fatalf("arch %q, hybrid %v", m.Arch(), m.IsHybrid())
			}
			toks, err := m.Tokenize(tc.prompt, true, true)
			if err != nil {
				t.Fatal(err)
			}
			// The turn markers are single control tokens, not text.
			controls := 0
			for _, tok := range toks {
				if m.IsControl(tok) {
					controls++
				}
			}
			if controls != tc.controls {
				t.Fatalf("prompt tokenizes to %v: %d control tokens, want %d", toks, controls, tc.controls)
			}
			c, err := m.NewContext(ContextOptions{CtxSize: 1024, BatchSize: 128, Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Free()
			b, err := l.NewBatch(128, 1)
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
			g, err := m.NewGrammar(actionGBNF, "root")
			if err != nil {
				t.Fatal(err)
			}
			chain := l.NewChain()
			defer chain.Free()
			chain.Add(g)
			chain.Add(l.Temp(0.8))
			chain.Add(l.Dist(7))
			var out strings.Builder
			pos, ended := len(toks), false
			for range 300 {
				tok := chain.Sample(c, b.Len()-1)
				if m.IsEOG(tok) {
					ended = true
					break
				}
				out.WriteString(m.TokenToPiece(tok, false))
				b.Clear()
				b.Add(tok, pos, true, 0)
				pos++
				if err := c.Decode(b); err != nil {
					t.Fatal(err)
				}
			}
			var action struct{ Thought, Action, Input string }
			if err := json.Unmarshal([]byte(out.String()), &action); err != nil || !ended {
				t.Fatalf("generation %q (ended at end of generation: %v): %v", out.String(), ended, err)
			}
			if !slices.Contains([]string{"list_files", "read_file", "finish"}, action.Action) {
				t.Errorf("action %q is not one the grammar allows", action.Action)
			}
			t.Logf("%s: %d tokens: %s", tc.arch, pos-len(toks), out.String())
		})
	}
}
