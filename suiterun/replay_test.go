package suiterun

import (
	"context"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
)

func TestReplay(t *testing.T) {
	sys := []llm.Message{{Role: llm.RoleSystem, Content: "tools: a, b"}, {Role: llm.RoleUser, Content: "observation 1"}}
	q := "why?"
	d := llm.PromptDigest(sys, q)
	c := &Cassette{Path: "c.jsonl", Header: Header{Case: "x"}, Replies: []Reply{
		{Kind: llm.KindPlan, PromptDigest: d, Text: "one", Usage: &llm.Usage{PromptTokens: 7, CompletionTokens: 2}},
		{Kind: llm.KindAction, PromptDigest: d, Text: "two"},
		{Kind: llm.KindFill, PromptDigest: d, Text: "three"},
	}}
	p := &player{c: c}
	ctx := llm.WithCallInfo(withPlayer(context.Background(), p), &llm.CallInfo{Query: q})
	var b Replay

	// The same system message and query: no mismatch, whatever else the
	// prompt holds (observations vary with the workspace).
	other := append([]llm.Message{sys[0]}, llm.Message{Role: llm.RoleUser, Content: "observation 2"})
	resp, err := b.Complete(ctx, llm.Request{Kind: llm.KindPlan, Messages: other})
	if err != nil || resp.Text != "one" || resp.Usage.PromptTokens != 7 {
		t.Fatalf("call 1: %+v, %v", resp, err)
	}
	// A changed system prompt: noted, and the reply is still given.
	changed := []llm.Message{{Role: llm.RoleSystem, Content: "tools: a, b, c"}}
	if resp, err = b.Complete(ctx, llm.Request{Kind: llm.KindAction, Messages: changed}); err != nil || resp.Text != "two" {
		t.Fatalf("call 2: %+v, %v", resp, err)
	}
	// Another kind of call than recorded: noted.
	if resp, err = b.Complete(ctx, llm.Request{Kind: llm.KindAction, Messages: sys}); err != nil || resp.Text != "three" {
		t.Fatalf("call 3: %+v, %v", resp, err)
	}
	// Past the end: an error, and noted.
	if _, err = b.Complete(ctx, llm.Request{Kind: llm.KindAction, Messages: sys}); err == nil || !strings.Contains(err.Error(), "past the cassette's end (3 replies recorded)") {
		t.Fatalf("call 4: %v", err)
	}
	got := p.result()
	want := []string{"call 2 (action): the prompt differs", `call 3: the run asked for a "action" reply where the recording has a "fill" one`, "call 4 (action): past the cassette's end"}
	if len(got) != len(want) {
		t.Fatalf("mismatches %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("mismatch %d = %q, want %q...", i, got[i], want[i])
		}
	}
	// A changed query is a mismatch too.
	p2 := &player{c: c}
	ctx2 := llm.WithCallInfo(withPlayer(context.Background(), p2), &llm.CallInfo{Query: "why not?"})
	if _, err := b.Complete(ctx2, llm.Request{Kind: llm.KindPlan, Messages: sys}); err != nil || len(p2.result()) != 1 {
		t.Fatalf("changed query: %v %q", err, p2.result())
	}
	// No cassette in the context: an error, not a panic.
	if _, err := b.Complete(context.Background(), llm.Request{Kind: llm.KindPlan}); err == nil {
		t.Fatal("a call without a cassette succeeded")
	}
}

func TestReplayMismatchCap(t *testing.T) {
	var replies []Reply
	for range 9 {
		replies = append(replies, Reply{Kind: llm.KindAction, PromptDigest: "recorded", Text: "x"})
	}
	p := &player{c: &Cassette{Replies: replies}}
	ctx := withPlayer(context.Background(), p)
	for range 9 {
		if _, err := (Replay{}).Complete(ctx, llm.Request{Kind: llm.KindAction}); err != nil {
			t.Fatal(err)
		}
	}
	got := p.result()
	if len(got) != maxMismatches+1 || !strings.Contains(got[maxMismatches], "only the first 5") {
		t.Fatalf("mismatches %q", got)
	}
}

func TestNoCassette(t *testing.T) {
	p := &player{c: &Cassette{Header: Header{Case: "x"}}}
	_, err := (Replay{}).Complete(withPlayer(context.Background(), p), llm.Request{Kind: llm.KindPlan})
	if err == nil || !strings.Contains(err.Error(), "the case has no cassette") {
		t.Fatalf("err = %v", err)
	}
}
