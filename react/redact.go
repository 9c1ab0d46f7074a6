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
	return redactingBackend{b: b, redact: redact}
}

type redactingBackend struct {
	b      llm.Backend
	redact func(string) string
}

func (r redactingBackend) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	msgs := make([]llm.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Content = r.redact(m.Content)
		msgs[i] = m
	}
	req.Messages = msgs
	return r.b.Complete(ctx, req)
}

func (r redactingBackend) Close() error { return r.b.Close() }
