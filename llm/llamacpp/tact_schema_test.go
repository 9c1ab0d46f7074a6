package llamacpp

import (
	"context"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/schema"
	tacttools "github.com/tactcli/tact/tools"
)

// TestTactActionSchema50 samples 50 replies under the executor's real action
// schema (every built-in tool, replan, required thoughts) at tact's default
// sampling settings (and, for every other sample, at temperature 1 for
// variety) and parses each with the executor's own parser.
func TestTactActionSchema50(t *testing.T) {
	b := newTiny(t, func(o *Options) { o.CtxSize = 8192; o.BatchSize = 512 })
	thought := schema.ThoughtOptions{Required: true, MinLength: 10}
	sch := schema.Action(tacttools.SchemaTools(tacttools.DefaultRegistry().List()), thought, true)
	tools := map[string]int{}
	for i := range 50 {
		temp := float32(0.2)
		if i%2 == 1 {
			temp = 1
		}
		req := llm.Request{
			Kind:      llm.KindAction,
			Messages:  conversation(i % 3),
			Schema:    sch,
			Sampling:  llm.Sampling{Temperature: temp, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: i},
			MaxTokens: 512,
		}
		resp, err := b.Complete(context.Background(), req)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		act, err := react.ParseAction([]byte(resp.Text), sch, schema.ThoughtOptions{Required: true, MinLength: 10})
		if err != nil {
			t.Fatalf("reply %d is not a valid action: %v\n%s", i, err, resp.Text)
		}
		tools[act.Tool]++
	}
	t.Logf("tools chosen: %v", tools)
	if len(tools) < 2 {
		t.Errorf("50 samples all chose one tool: %v", tools)
	}
}
