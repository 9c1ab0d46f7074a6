//go:build !cgollama

package llamacpp

import (
	"context"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/llm"
)

// The 2026 architectures run on the runtime through the whole backend:
// grammar-constrained replies validate, a second call reuses what it can
// (Qwen3.5's recurrent layers cannot drop a suffix: the sequence is
// evaluated again rather than wrongly kept), and two sequences sharing a
// prefix (copied, or cleared when the copy cannot be cut) both validate.
func TestNewArchitectures(t *testing.T) {
	sch := compileSchema(t, actionSchema)
	for _, arch := range []synth.Arch{synth.Qwen35, synth.Gemma4} {
		t.Run(string(arch), func(t *testing.T) {
			path := synth.CachedModel(t, synth.Model{Arch: arch, Size: synth.Tiny})
			for _, par := range []int{1, 2} {
				b := newTiny(t, func(o *Options) { o.ModelPath = path; o.Parallel = par })
				var reqs []llm.Request
				for i := range 3 {
					reqs = append(reqs, llm.Request{Kind: llm.KindAction, Messages: sharedPrefixMsgs(i), Schema: []byte(actionSchema),
						Sampling: llm.Sampling{Temperature: 0.8, Seed: i}, MaxTokens: 256})
				}
				for i, r := range completeAll(b, nil, reqs) {
					if r.err != nil {
						t.Fatalf("parallel %d, call %d: %v", par, i, r.err)
					}
					if err := sch.Validate(mustJSON(t, r.resp.Text)); err != nil {
						t.Errorf("parallel %d, call %d: %v\n%s", par, i, err, r.resp.Text)
					}
				}
				// One more turn of the first conversation: valid again.
				msgs := append(sharedPrefixMsgs(0), llm.Message{Role: llm.RoleAssistant, Content: `{"thought":"x","final_answer":"y"}`},
					llm.Message{Role: llm.RoleUser, Content: "again"})
				r, err := b.Complete(context.Background(), llm.Request{Kind: llm.KindAction, Messages: msgs, Schema: []byte(actionSchema), MaxTokens: 256})
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(mustJSON(t, r.Text)); err != nil {
					t.Errorf("parallel %d, next turn: %v\n%s", par, err, r.Text)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, text string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, text)
	}
	return v
}
