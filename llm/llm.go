// Package llm defines the small interface tact uses to talk to a language
// model, plus the model-free backends (script, none). The embedded llama.cpp
// backend lives in llm/llamacpp so that packages which only need the interface
// do not pull in cgo.
package llm

import (
	"context"
	"encoding/json"
	"errors"
)

// Kind says what a call is for. Backends may use it (the script backend
// replays replies per kind; the llama backend caches grammars per schema).
type Kind string

const (
	KindPlan     Kind = "plan"     // planner call, also used for replans
	KindAction   Kind = "action"   // next ReAct action
	KindFill     Kind = "fill"     // fill the "" arguments of a planned step
	KindFallback Kind = "fallback" // synthesize an answer when the budget ran out
	KindSummary  Kind = "summary"  // summarize older steps when the context fills (compaction)
)

// Role of a chat message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one chat turn. Backends format messages with the model's own
// chat template; a stable message prefix lets llama.cpp reuse its KV cache.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// Sampling parameters. Zero values mean "backend default".
type Sampling struct {
	Temperature float32 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float32 `json:"top_p"`
	MinP        float32 `json:"min_p"`
	Seed        int     `json:"seed"`
}

// Request is one model call.
type Request struct {
	Kind     Kind
	Messages []Message
	// Schema, when set, is a JSON Schema the reply must satisfy. Backends that
	// can constrain decoding (llama) turn it into a grammar; others ignore it
	// and the caller validates.
	Schema    json.RawMessage
	Sampling  Sampling
	MaxTokens int
	// PersistableMessages is how many leading messages are the fixed part
	// every run of the same configuration starts with (the system prompt
	// with the tool list): a backend may keep their KV state on disk for
	// later processes (the llama backend's prompt cache). Nothing a user
	// typed, no query, plan or observation may be among them; 0: none.
	PersistableMessages int
	// OnToken, when set, receives each piece of generated text as it arrives.
	OnToken func(piece string)
}

// Usage counts tokens for one call or, summed, for a run.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`     // prompt tokens evaluated by the model
	CachedTokens     int `json:"cached_tokens"`     // prompt tokens reused from the KV cache
	CompletionTokens int `json:"completion_tokens"` // tokens generated
	// DiskCachedTokens of CachedTokens were loaded from the prompt cache on
	// disk (a pinned prefix an earlier process evaluated).
	DiskCachedTokens int `json:"disk_cached_tokens,omitempty"`
	// CPUWaitMS is time spent waiting for other tact processes' model work
	// (the CPU lock, internal/cpulock); not tokens, and not in Total.
	CPUWaitMS int64 `json:"cpu_wait_ms,omitempty"`
	// FirstTokenMS is the time from the call's start to its first
	// generated token, for backends that see it (llama.cpp): one call's,
	// so Add leaves it out of totals.
	FirstTokenMS float64 `json:"first_token_ms,omitempty"`
}

// Add returns u+o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CachedTokens:     u.CachedTokens + o.CachedTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		DiskCachedTokens: u.DiskCachedTokens + o.DiskCachedTokens,
		CPUWaitMS:        u.CPUWaitMS + o.CPUWaitMS,
	}
}

// Total is evaluated prompt plus completion tokens (cached tokens cost nothing).
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Response is a model reply.
type Response struct {
	Text  string
	Usage Usage
}

// Backend is a language model. Complete must honour ctx cancellation (the
// llama backend checks it between tokens; cancelling one call ends only that
// call) and be safe to call from many goroutines at once: a runtime's jobs
// share one backend (tact batch). A backend that serves several calls at
// once says how many (Concurrent); the others may serialize them.
type Backend interface {
	Complete(ctx context.Context, req Request) (Response, error)
	Close() error
}

// ErrNoModel is returned by the none backend: the run needed a model call but
// none is configured.
var ErrNoModel = errors.New("this step needs a model, but no model backend is configured (use --model or --backend script)")
