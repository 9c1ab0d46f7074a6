package agent

import (
	"context"
	"errors"
	"github.com/tactcli/tact/agent/agenttest"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
)

// full is a backend whose window never holds the prompt.
type full struct{ llm.Backend }

func (full) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Usage: llm.Usage{PromptTokens: 7}}, llm.ErrContextFull
}

// Complete types the errors of a call that could not be made and leaves
// the backend's own failures as they are.
func TestComplete(t *testing.T) {
	ctx := context.Background()
	rt := scriptRuntime(t, `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"ok"}}`)
	if err := rt.RequireModel("a step"); err != nil {
		t.Fatal(err)
	}
	if out, err := rt.Complete(ctx, "a step", llm.Request{Kind: llm.KindAction}); err != nil || !strings.Contains(out.Text, "final_answer") {
		t.Fatalf("%+v %v", out, err)
	}
	// The script has no reply left: the backend's error, untyped.
	if _, err := rt.Complete(ctx, "a step", llm.Request{Kind: llm.KindAction}); err == nil || KindOf(err) != ErrInternal {
		t.Fatalf("failed call: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := rt.Complete(cctx, "a step", llm.Request{Kind: llm.KindAction}); KindOf(err) != ErrCancelled {
		t.Fatalf("cancelled: %v", err)
	}
	rt.Backend = full{rt.Backend}
	if out, err := rt.Complete(ctx, "a step", llm.Request{Kind: llm.KindAction}); KindOf(err) != ErrContextTooSmall || !errors.Is(err, llm.ErrContextFull) || out.Usage.PromptTokens != 7 {
		t.Fatalf("context full: %+v %v", out, err)
	}

	s := agenttest.Settings(t, "")
	s.Backend = "none"
	none, err := Open(ctx, s, Options{Mode: "serve"})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if err := none.RequireModel("a step"); KindOf(err) != ErrNeedsModel || !strings.HasPrefix(err.Error(), "a step needs a model") {
		t.Fatalf("no model: %v", err)
	}
	if _, err := none.Complete(ctx, "a step", llm.Request{Kind: llm.KindAction}); KindOf(err) != ErrNeedsModel {
		t.Fatalf("no model: %v", err)
	}
}
