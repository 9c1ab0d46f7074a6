package llm

import (
	"errors"
	"fmt"
)

// Optional capabilities. A backend implements the ones it can; callers ask
// with a type assertion on the interface (never on a concrete backend) and
// fall back to the documented estimate.

// TokenCounter counts tokens exactly as the backend's model sees them.
type TokenCounter interface {
	// CountPrompt is the number of tokens msgs make as a prompt: chat
	// template applied and the assistant's turn opened, as Complete would
	// evaluate them.
	CountPrompt(msgs []Message) (int, error)
	// CountText is the number of tokens of text on its own.
	CountText(text string) (int, error)
}

// ContextSizer reports the backend's context window in tokens (prompt and
// reply together).
type ContextSizer interface {
	ContextSize() int
}

// ErrContextFull is wrapped by errors about a prompt or reply that does not
// fit in a backend's context window.
var ErrContextFull = errors.New("context window full")

// The estimate used when a backend cannot count: about four bytes a token,
// which is close for English text and code on real models' tokenizers, plus
// the chat template's few tokens around each message.
const (
	EstimateBytesPerToken = 4
	estimateMessageTokens = 4 // role markers around each message
	estimatePromptTokens  = 3 // the opened assistant turn
)

// EstimateText is the estimated token count of text: its bytes / 4, rounded up.
func EstimateText(text string) int {
	return (len(text) + EstimateBytesPerToken - 1) / EstimateBytesPerToken
}

// EstimatePrompt is the estimated token count of msgs as a prompt.
func EstimatePrompt(msgs []Message) int {
	n := estimatePromptTokens
	for _, m := range msgs {
		n += EstimateText(m.Content) + estimateMessageTokens
	}
	return n
}

// Counter counts with b's tokenizer when it has one, else estimates.
type Counter struct {
	tc TokenCounter
}

// CounterFor returns the counter for b.
func CounterFor(b Backend) Counter {
	tc, _ := b.(TokenCounter)
	return Counter{tc: tc}
}

// Exact reports whether counts come from the model's tokenizer.
func (c Counter) Exact() bool {
	if e, ok := c.tc.(Estimating); ok && e.EstimatedCounts() {
		return false
	}
	return c.tc != nil
}

// Estimating is a TokenCounter whose counts are estimates (a remote
// server's tokenizer is out of reach; the openai backend scales tact's
// estimate by the usage the server reports).
type Estimating interface {
	EstimatedCounts() bool
}

// Prompt counts msgs as a prompt. A tokenizer error falls back to the estimate.
func (c Counter) Prompt(msgs []Message) int {
	if c.tc != nil {
		if n, err := c.tc.CountPrompt(msgs); err == nil {
			return n
		}
	}
	return EstimatePrompt(msgs)
}

// Text counts text alone.
func (c Counter) Text(text string) int {
	if c.tc != nil {
		if n, err := c.tc.CountText(text); err == nil {
			return n
		}
	}
	return EstimateText(text)
}

// ContextSizeOf is b's context window, or 0 when b does not say.
func ContextSizeOf(b Backend) int {
	if cs, ok := b.(ContextSizer); ok {
		return cs.ContextSize()
	}
	return 0
}

// ContextTooSmallError is a prompt that must be sent whole (the system
// prompt with the tools and the query) and cannot fit in the context with
// room for the reply.
type ContextTooSmallError struct {
	What    string // what the prompt holds
	Prompt  int    // its tokens
	Reply   int    // tokens reserved for the reply
	Context int    // the context window
}

func (e *ContextTooSmallError) Error() string {
	return fmt.Sprintf("%s takes %d tokens and the reply needs room for %d, but the context window holds %d: %d tokens needed",
		e.What, e.Prompt, e.Reply, e.Context, e.Need())
}

// Need is the smallest context that holds the prompt and the reply.
func (e *ContextTooSmallError) Need() int { return e.Prompt + e.Reply }

func (e *ContextTooSmallError) Is(target error) bool { return target == ErrContextFull }
