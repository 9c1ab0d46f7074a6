package llm

import (
	"context"
	"strings"
	"testing"
)

// plain has no optional capability; it records what it is sent.
type plain struct{ got []string }

func (b *plain) Complete(_ context.Context, req Request) (Response, error) {
	for _, m := range req.Messages {
		b.got = append(b.got, m.Content)
	}
	return Response{Text: "ok"}, nil
}
func (*plain) Close() error { return nil }

// full has every optional capability.
type full struct{ plain }

func (f *full) CountPrompt(msgs []Message) (int, error) {
	for _, m := range msgs {
		f.got = append(f.got, m.Content)
	}
	return 7, nil
}
func (f *full) CountText(text string) (int, error) { f.got = append(f.got, text); return 3, nil }
func (*full) EstimatedCounts() bool                { return true }
func (*full) ContextSize() int                     { return 4096 }
func (*full) ModelInfo() ModelInfo                 { return ModelInfo{Backend: "full", Model: "m", ContextSize: 4096} }
func (*full) Concurrency() int                     { return 4 }
func (f *full) Warm(_ context.Context, msgs []Message) (Usage, error) {
	for _, m := range msgs {
		f.got = append(f.got, m.Content)
	}
	return Usage{PromptTokens: 5}, nil
}

// counter and warmer have one of the capabilities that see prompt text.
type counter struct{ plain }

func (*counter) CountPrompt([]Message) (int, error) { return 1, nil }
func (*counter) CountText(string) (int, error)      { return 1, nil }

type warmer struct{ plain }

func (*warmer) Warm(context.Context, []Message) (Usage, error) { return Usage{}, nil }

func hide(s string) string { return strings.ReplaceAll(s, "secret", "[REDACTED]") }

// capabilities lists which optional interfaces b has. Estimating is not
// among them: the wrapper's answer is the wrapped counter's, false when it
// is not Estimating, which is what Counter.Exact reads for no answer.
func capabilities(b Backend) map[string]bool {
	has := map[string]bool{}
	_, has["TokenCounter"] = b.(TokenCounter)
	_, has["Warmer"] = b.(Warmer)
	_, has["ModelLess"] = b.(ModelLess)
	return has
}

// Every capability of the wrapped backend passes through, redacting the
// text it sees; one it lacks is not claimed.
func TestRedactingForwardsCapabilities(t *testing.T) {
	f := &full{}
	r := Redacting(f, hide)
	for name, has := range capabilities(r) {
		if want := name != "ModelLess"; has != want {
			t.Errorf("wrapping full: %s %v, want %v", name, has, want)
		}
	}
	ctx := context.Background()
	msgs := []Message{{Role: RoleSystem, Content: "a secret"}}
	if _, err := r.Complete(ctx, Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	c := CounterFor(r)
	if c.Exact() || c.Prompt(msgs) != 7 || c.Text("secret") != 3 {
		t.Errorf("counter: exact %v, prompt %d, text %d", c.Exact(), c.Prompt(msgs), c.Text("secret"))
	}
	if u, err := r.(Warmer).Warm(ctx, msgs); err != nil || u.PromptTokens != 5 {
		t.Errorf("warm: %v, %v", u, err)
	}
	if msgs[0].Content != "a secret" {
		t.Errorf("the caller's message was changed: %q", msgs[0].Content)
	}
	for _, s := range f.got {
		if strings.Contains(s, "secret") && !strings.Contains(s, "[REDACTED]") {
			t.Errorf("the backend saw %q", s)
		}
	}
	if len(f.got) != 4 {
		t.Errorf("the backend saw %d texts, want every call's", len(f.got))
	}
	if InfoOf(r) != f.ModelInfo() || ConcurrencyOf(r) != 4 || ContextSizeOf(r) != 4096 || !HasModel(r) {
		t.Errorf("info %+v, concurrency %d, context %d, model %v", InfoOf(r), ConcurrencyOf(r), ContextSizeOf(r), HasModel(r))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		b             Backend
		counts, warms bool
	}{{&plain{}, false, false}, {&counter{}, true, false}, {&warmer{}, false, true}} {
		r := Redacting(tc.b, hide)
		has := capabilities(r)
		if has["TokenCounter"] != tc.counts || has["Warmer"] != tc.warms || has["ModelLess"] {
			t.Errorf("wrapping %T: %v", tc.b, has)
		}
		if InfoOf(r) != InfoOf(tc.b) || ConcurrencyOf(r) != 1 || ContextSizeOf(r) != 0 || CounterFor(r).Exact() != tc.counts {
			t.Errorf("wrapping %T: info %+v, concurrency %d, context %d", tc.b, InfoOf(r), ConcurrencyOf(r), ContextSizeOf(r))
		}
	}
}

// A backend without a model is not wrapped: it stays ModelLess, Why and all.
func TestRedactingNone(t *testing.T) {
	r := Redacting(None{Why: "several models"}, hide)
	if HasModel(r) {
		t.Fatal("the none backend has a model")
	}
	if m, ok := r.(ModelLess); !ok || m.NoModel() != "several models" {
		t.Fatalf("%T: not ModelLess, or lost why", r)
	}
	if Redacting(&plain{}, nil) == nil || !HasModel(&plain{}) {
		t.Fatal("nil redact, or a backend with a model")
	}
}
