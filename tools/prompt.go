package tools

import (
	"bytes"
	"encoding/json"

	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/schema"
)

// PromptTools describes tools for prompts.
func PromptTools(list []Tool) []prompt.Tool {
	out := make([]prompt.Tool, len(list))
	for i, t := range list {
		var compact bytes.Buffer
		_ = json.Compact(&compact, t.Schema())
		out[i] = prompt.Tool{Name: t.Name(), Class: string(t.Class()), Description: t.Description(), Schema: compact.String()}
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
