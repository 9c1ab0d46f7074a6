package tools

import (
	"context"
	"encoding/json"
)

// FinalAnswerTool is the final_answer tool: calling it ends the run with
// the given answer.
type FinalAnswerTool struct{}

var finalAnswerSchema = schemaObject(map[string]any{
	"answer": map[string]any{"type": "string", "minLength": 1, "description": "The complete answer to the user's query."},
}, "answer")

func (FinalAnswerTool) Name() string { return FinalAnswer }
func (FinalAnswerTool) Description() string {
	return "Finish the task and give the final answer to the user."
}
func (FinalAnswerTool) Class() Class            { return ClassRead }
func (FinalAnswerTool) Schema() json.RawMessage { return finalAnswerSchema }
func (FinalAnswerTool) Declare() Decl           { return Decl{} }

func (t FinalAnswerTool) Run(_ context.Context, _ *Env, raw json.RawMessage) Result {
	var answer string
	if err := decodeArgs(t.Name(), raw, argSpec{name: "answer", required: true, dst: &answer}); err != nil {
		return toolFail(err)
	}
	return Result{Output: answer}
}

// Builtins returns a fresh instance of every built-in tool, in a stable
// order (final_answer first, then read, write and exec tools).
func Builtins() []Tool {
	return []Tool{
		FinalAnswerTool{},
		ReadFile{},
		ListFiles{},
		SearchFiles{},
		Jq{},
		StatPath{},
		WriteFile{},
		EditFile{},
		RunCommand{},
	}
}

// DefaultRegistry is a registry of all built-in tools.
func DefaultRegistry() *Registry { return NewRegistry(Builtins()...) }

// Interface checks: the write and exec tools describe themselves for
// approval prompts.
var (
	_ Describer = RunCommand{}
	_ Describer = WriteFile{}
	_ Describer = EditFile{}
)
