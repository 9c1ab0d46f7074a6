package runrecord

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
)

// ResultJSON is rec's --json result document, one line ending in a
// newline: as recorded when the run ended, else built from its steps.
func (b *Book) ResultJSON(ctx context.Context, rec history.Record) ([]byte, error) {
	if rec.Result != "" {
		return []byte(strings.TrimRight(rec.Result, "\n") + "\n"), nil
	}
	res, err := b.interrupted(ctx, rec)
	if err != nil {
		return nil, err
	}
	out, err := text.JSON(res)
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Result is rec's result document decoded: the one recorded, else the one
// built from its steps.
func (b *Book) Result(ctx context.Context, rec history.Record) (*react.Result, error) {
	if rec.Result == "" {
		return b.interrupted(ctx, rec)
	}
	var res react.Result
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		return nil, fmt.Errorf("run %s: its recorded result is not a result document: %w", rec.ID, err)
	}
	return &res, nil
}

// interrupted is the result document of a run without one (it never
// ended): what the record and its steps hold, in --json's shape.
func (b *Book) interrupted(ctx context.Context, rec history.Record) (*react.Result, error) {
	steps, err := b.st.Steps(ctx, rec.ID)
	if err != nil {
		return nil, readError(err)
	}
	usage := rec.Usage
	if usage == (history.Usage{}) { // totals come with the end it never had
		for _, s := range steps {
			usage = usage.Add(s.Usage)
		}
	}
	res := &react.Result{
		RunID:             rec.ID,
		FinalAnswer:       rec.Answer,
		TerminationReason: react.Reason(rec.Reason),
		Iterations:        len(steps),
		TokenUsage:        llmUsage(usage),
		ExecutionTimeMS:   rec.Duration.Milliseconds(),
	}
	res.Trace.Steps = make([]react.StepTrace, 0, len(steps))
	for _, s := range steps {
		res.Trace.Steps = append(res.Trace.Steps, stepTrace(s))
	}
	return res, nil
}

// stepTrace is a stored step in the result document's trace.steps shape
// (storedStep's inverse).
func stepTrace(s history.Step) react.StepTrace {
	var args json.RawMessage
	if json.Valid([]byte(s.Args)) {
		args = json.RawMessage(s.Args)
	}
	return react.StepTrace{
		Iteration:   s.Index + 1,
		Thought:     s.Thought,
		Action:      react.ToolCall{Tool: s.Tool, Args: args},
		Observation: s.Observation,
		ExitCode:    s.ExitCode,
		Decision:    s.Decision,
		Timestamp:   s.StartedAt,
		TokenUsage:  llmUsage(s.Usage),
	}
}

func llmUsage(u history.Usage) llm.Usage {
	return llm.Usage{PromptTokens: int(u.Prompt), CompletionTokens: int(u.Completion), CachedTokens: int(u.Cached)}
}
