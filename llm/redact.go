package llm

import "context"

// Redacting returns a backend that redacts every message before b sees it:
// the one place prompts are redacted (the runtime wraps its backend once,
// so the planner, the executor, warming and the step service all send
// through it). Redaction is per message and deterministic, so a stable
// message prefix stays stable and the KV cache reuse built on it is kept.
//
// The wrapper has each optional capability of b, and only those: the ones
// every helper has a neutral answer for (Describer, Concurrent,
// ContextSizer, and Estimating for a counter) are forwarded through those
// helpers; the ones that see prompt text (TokenCounter, Warmer) redact it
// too and are claimed only when b has them. A backend without a model (ModelLess)
// is returned as it is: no prompt reaches a model. redact nil returns b.
func Redacting(b Backend, redact func(string) string) Backend {
	if redact == nil || b == nil || !HasModel(b) {
		return b
	}
	r := &redacting{b: b, redact: redact}
	r.tc, _ = b.(TokenCounter)
	r.w, _ = b.(Warmer)
	switch {
	case r.tc != nil && r.w != nil:
		return redactingCounterWarmer{redactingCounter{r}}
	case r.tc != nil:
		return redactingCounter{r}
	case r.w != nil:
		return redactingWarmer{r}
	}
	return r
}

// RedactMessages is msgs with each message's content redacted (a copy).
func RedactMessages(msgs []Message, redact func(string) string) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Content = redact(m.Content)
		out[i] = m
	}
	return out
}

type redacting struct {
	b      Backend
	redact func(string) string
	tc     TokenCounter // nil: b cannot count
	w      Warmer       // nil: b cannot warm
}

func (r *redacting) Complete(ctx context.Context, req Request) (Response, error) {
	req.Messages = RedactMessages(req.Messages, r.redact)
	resp, err := r.b.Complete(ctx, req)
	// Every call of a runtime passes here, its prompt redacted: the one
	// place a run's replies are reported (CallInfo).
	if c := CallInfoOf(ctx); err == nil && c != nil && c.OnReply != nil {
		c.OnReply(req, resp)
	}
	return resp, err
}

func (r *redacting) Close() error { return r.b.Close() }

// ModelInfo is b's (InfoOf: what its other capabilities tell when it does
// not describe itself, which is what InfoOf tells of the wrapper too).
func (r *redacting) ModelInfo() ModelInfo { return InfoOf(r.b) }

// Concurrency is b's (1 when it does not say, as ConcurrencyOf assumes).
func (r *redacting) Concurrency() int { return ConcurrencyOf(r.b) }

// ContextSize is b's (0 when it does not say, as ContextSizeOf assumes).
func (r *redacting) ContextSize() int { return ContextSizeOf(r.b) }

// redactingCounter counts as b will see the text: redacted.
type redactingCounter struct{ *redacting }

func (r redactingCounter) CountPrompt(msgs []Message) (int, error) {
	return r.tc.CountPrompt(RedactMessages(msgs, r.redact))
}

func (r redactingCounter) CountText(text string) (int, error) { return r.tc.CountText(r.redact(text)) }

// EstimatedCounts is b's: its counts stay estimates through the wrapper;
// false for a counter that is not Estimating, as Counter.Exact reads it.
func (r redactingCounter) EstimatedCounts() bool {
	e, ok := r.tc.(Estimating)
	return ok && e.EstimatedCounts()
}

// redactingWarmer readies the prefix as the calls will send it: redacted.
type redactingWarmer struct{ *redacting }

func (r redactingWarmer) Warm(ctx context.Context, msgs []Message) (Usage, error) {
	return r.w.Warm(ctx, RedactMessages(msgs, r.redact))
}

type redactingCounterWarmer struct{ redactingCounter }

func (r redactingCounterWarmer) Warm(ctx context.Context, msgs []Message) (Usage, error) {
	return redactingWarmer{r.redacting}.Warm(ctx, msgs)
}
