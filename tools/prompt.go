package tools

import (
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/schema"
)

// PromptSchemaBudget is the most of a prompt one tool's arguments schema
// takes (bytes, about 2,000 tokens): a larger schema is shown as an
// outline (schema.Outline), while the grammar and the validator hold all
// of it.
const PromptSchemaBudget = 6 << 10

// PromptTools describes tools for prompts.
func PromptTools(list []Tool) []prompt.Tool {
	out := make([]prompt.Tool, len(list))
	for i, t := range list {
		out[i] = prompt.Tool{Name: t.Name(), Class: string(t.Class()), Description: t.Description(), Schema: schema.Outline(t.Schema(), PromptSchemaBudget)}
	}
	return out
}

// SchemaTools converts tools for the schema builders.
func SchemaTools(list []Tool) []schema.Tool {
	out := make([]schema.Tool, len(list))
	for i, t := range list {
		out[i] = schema.Tool{Name: t.Name(), Schema: t.Schema()}
	}
	return out
}
