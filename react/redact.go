package react

import (
	"context"

	"github.com/tactcli/tact/llm"
)

// RedactingBackend returns a backend that redacts every message before b
// sees it: give it to the planner so its prompts (the query, a replan's old
// plan) are redacted like the executor's own. redact nil returns b.
func RedactingBackend(b llm.Backend, redact func(string) string) llm.Backend {
	if redact == nil || b == nil {
		return b
	}
	rb := redactingBackend{b: b, redact: redact}
	if tc, ok := b.(llm.TokenCounter); ok {
		return redactingCounter{rb, tc}
	}
	return rb
}

type redactingBackend struct {
	b      llm.Backend
	redact func(string) string
}

func (r redactingBackend) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	req.Messages = redactMessages(req.Messages, r.redact)
	return r.b.Complete(ctx, req)
}

func (r redactingBackend) Close() error { return r.b.Close() }

// ContextSize passes the wrapped backend's on (0: it does not say).
func (r redactingBackend) ContextSize() int { return llm.ContextSizeOf(r.b) }

// redactingCounter also counts, as the wrapped backend will see the text:
// redacted.
type redactingCounter struct {
	redactingBackend
	tc llm.TokenCounter
}

func (r redactingCounter) CountPrompt(msgs []llm.Message) (int, error) {
	return r.tc.CountPrompt(redactMessages(msgs, r.redact))
}

func (r redactingCounter) CountText(text string) (int, error) { return r.tc.CountText(r.redact(text)) }

func redactMessages(in []llm.Message, redact func(string) string) []llm.Message {
	out := make([]llm.Message, len(in))
	for i, m := range in {
		m.Content = redact(m.Content)
		out[i] = m
	}
	return out
}
