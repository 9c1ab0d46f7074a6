package llm

import (
	"context"
	"math"
)

// More optional capabilities (see context.go): what a backend is, how
// many calls it serves at once, and whether it can ready a prefix ahead.

// ModelInfo says which backend and model answer the calls: for plan
// headers, traces and front ends that show or report it.
type ModelInfo struct {
	Backend string // "llama", "script", "none", ...
	Model   string // the model's name ("" when there is no model)
	Script  string // the script backend's replies file ("" for the others)
	// ContextSize is the window one call's prompt and reply share, in
	// tokens (0: the backend sets no bound).
	ContextSize int
	// Parallel is how many sequences of one context the backend decodes
	// together (llama's --parallel); 0 when it has no such thing.
	Parallel int
}

// Header is the info as plan headers and traces record it: backend, then
// model or script, empty ones left out.
func (m ModelInfo) Header() map[string]any {
	h := map[string]any{}
	if m.Backend != "" {
		h["backend"] = m.Backend
	}
	if m.Model != "" {
		h["model"] = m.Model
	}
	if m.Script != "" {
		h["script"] = m.Script
	}
	return h
}

// Describer is a backend that says what it is.
type Describer interface {
	ModelInfo() ModelInfo
}

// InfoOf is b's ModelInfo; for a backend that does not describe itself,
// only what the other capabilities tell.
func InfoOf(b Backend) ModelInfo {
	if d, ok := b.(Describer); ok {
		return d.ModelInfo()
	}
	return ModelInfo{ContextSize: ContextSizeOf(b)}
}

// Concurrent is a backend that says how many calls it serves at once.
// Every backend must be safe for concurrent calls; calls beyond this
// number wait for one to finish.
type Concurrent interface {
	Concurrency() int
}

// Unbounded is the Concurrency of a backend whose calls never wait for
// one another.
const Unbounded = math.MaxInt

// ConcurrencyOf is how many calls b serves at once: its Concurrency, or 1
// for a backend that does not say (it may serialize its calls).
func ConcurrencyOf(b Backend) int {
	if c, ok := b.(Concurrent); ok {
		if n := c.Concurrency(); n > 0 {
			return n
		}
	}
	return 1
}

// Warmer is a backend that can ready the KV state of a prompt prefix ahead
// of the calls that start with it (tact serve at start): it loads the
// prefix from its prompt cache or evaluates it, and keeps it for them.
// msgs must be persistable (Request.PersistableMessages): configuration,
// never anything a user typed. Backends whose calls cost nothing to
// prepare (a remote server, a script) do not implement it.
type Warmer interface {
	Warm(ctx context.Context, msgs []Message) (Usage, error)
}
