package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/tactcli/tact/llm"
)

// Warmed is what Warm did for one prompt.
type Warmed struct {
	Prompt string    // "planner" or "executor"
	Usage  llm.Usage // DiskCachedTokens: loaded from the prompt cache; PromptTokens: evaluated
	Took   time.Duration
}

// Warm readies the system prompts the runtime's jobs start with, the
// executor's for a run without a plan and the planner's (unless
// --no-plan), on a backend that can (llm.Warmer: the llama backend loads each
// from its prompt cache, or evaluates and saves it). tact serve calls it
// at start, so the first request does not pay for them. A backend that
// cannot warm, or no model: nothing, no error.
func (rt *Runtime) Warm(ctx context.Context) ([]Warmed, error) {
	w, ok := rt.Backend.(llm.Warmer)
	if !ok || rt.noModel != nil {
		return nil, nil
	}
	l := rt.newLife(Job{})
	type warmPrompt struct {
		name string
		msg  llm.Message
	}
	// The planner's last: with one sequence (--parallel 1) the last one
	// warmed stays in memory, and a run starts with planning.
	prompts := []warmPrompt{{"executor", rt.executor(l, nil, llm.Usage{}).SystemMessage()}}
	if !rt.S.NoPlan {
		prompts = append(prompts, warmPrompt{"planner", rt.planner.SystemMessage()})
	}
	var out []Warmed
	for _, p := range prompts {
		// The backend redacts it as it will the calls (llm.Redacting).
		start := time.Now()
		u, err := w.Warm(ctx, []llm.Message{p.msg})
		if err != nil {
			return out, fmt.Errorf("warming the %s's system prompt: %w", p.name, err)
		}
		out = append(out, Warmed{Prompt: p.name, Usage: u, Took: time.Since(start)})
	}
	return out, nil
}
