package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Tool is what the reply schemas need to know of a tool.
type Tool struct {
	Name   string
	Schema json.RawMessage // arguments object schema
}

// Names of the pseudo-tools every action schema knows.
const (
	FinalAnswer = "final_answer"
	Replan      = "replan"
)

// ThoughtOptions shapes the "thought" property of plan rows and actions.
type ThoughtOptions struct {
	Required  bool
	MinLength int
}

func thoughtSchema(o ThoughtOptions) map[string]any {
	t := map[string]any{"type": "string", "description": "reasoning: what is known, what is missing, why this action"}
	if o.Required && o.MinLength > 0 {
		t["minLength"] = o.MinLength
	}
	return t
}

func branch(name string, args json.RawMessage, thought ThoughtOptions) ordered {
	args = grammarArgs(args)
	req := []string{"tool", "args"}
	if thought.Required {
		req = []string{"thought", "tool", "args"}
	}
	// Property order matters: llama.cpp's grammar emits properties in schema
	// order, and a model should reason (thought) before it acts (tool, args).
	return ordered{
		{"type", "object"},
		{"properties", ordered{
			{"thought", thoughtSchema(thought)},
			{"tool", map[string]any{"const": name}},
			{"args", args},
		}},
		{"required", req},
		{"additionalProperties", false},
	}
}

// grammarArgs is a tool's arguments schema as an action or plan schema
// embeds it: normalized, so that its $refs need not resolve where it is
// embedded and every backend's grammar can be built from it. Whatever the
// normalized schema loosened, the tool's own schema checks (MCP tools
// before each call, tact serve's step on the reply). A schema that cannot
// be normalized (not JSON) is embedded as it is.
func grammarArgs(raw json.RawMessage) json.RawMessage {
	n, err := NormalizeArgsCached(raw)
	if err != nil {
		return raw
	}
	return n.Schema
}

// ordered is a JSON object that keeps its key order (Go maps marshal sorted).
type ordered []struct {
	k string
	v any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(kv.k)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(kv.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ReplanArgs is the argument schema of the replan pseudo-action.
var ReplanArgs = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"],"additionalProperties":false}`)

func sorted(tools []Tool) []Tool {
	out := append([]Tool(nil), tools...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Action is the schema of one ReAct action: one oneOf branch per allowed tool
// (tool const plus that tool's argument schema), so a grammar built from it
// only lets a model name allowed tools with valid arguments. tools must
// include final_answer; allowReplan adds the replan pseudo-action.
func Action(tools []Tool, thought ThoughtOptions, allowReplan bool) json.RawMessage {
	var branches []any
	for _, t := range sorted(tools) {
		branches = append(branches, branch(t.Name, t.Schema, thought))
	}
	if allowReplan {
		branches = append(branches, branch(Replan, ReplanArgs, thought))
	}
	return mustJSON(map[string]any{"oneOf": branches})
}

// Plan is the planner reply schema: {"plan":[{thought, tool, args}]} with
// each row one of the tools. Argument values follow the tool's schema; the
// planner may still write "" for a string it cannot know yet.
func Plan(tools []Tool, thought ThoughtOptions, maxSteps int) json.RawMessage {
	var branches []any
	for _, t := range sorted(tools) {
		branches = append(branches, branch(t.Name, allowFill(t.Schema), thought))
	}
	arr := map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"oneOf": branches}}
	if maxSteps > 0 {
		arr["maxItems"] = maxSteps
	}
	return mustJSON(map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"plan": arr},
		"required":             []string{"plan"},
		"additionalProperties": false,
	})
}

// Fill is the schema of a fill reply: the arguments object of one tool.
func Fill(t Tool) json.RawMessage { return t.Schema }

// Fallback is the schema of the fallback answer reply.
var Fallback = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","minLength":1}},"required":["answer"],"additionalProperties":false}`)

// Summary is the schema of a compaction's summary reply; maxLength (in
// characters, 0: none) keeps it short enough for the room it gets.
func Summary(maxLength int) json.RawMessage {
	str := map[string]any{"type": "string", "minLength": 1}
	if maxLength > 0 {
		str["maxLength"] = maxLength
	}
	b, _ := json.Marshal(map[string]any{
		"type": "object", "properties": map[string]any{"summary": str},
		"required": []string{"summary"}, "additionalProperties": false,
	})
	return b
}

// Partial returns a copy of an arguments schema without "required" (at the
// top level and in top-level oneOf/anyOf branches). Plan rows are checked
// against it: arguments left to fill ("") or computed ({"$jq":...}) are
// removed before the check, and the full schema is applied once they are known.
func Partial(raw json.RawMessage) (json.RawMessage, error) {
	var m map[string]any
	if err := unmarshalNumbers(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "required")
	for _, k := range []string{"oneOf", "anyOf"} {
		if bs, ok := m[k].([]any); ok {
			var keep []any
			for _, b := range bs {
				if bm, ok := b.(map[string]any); ok {
					delete(bm, "required")
					// A branch that only existed to require a property would
					// now match anything; keep it, but oneOf would then fail
					// with several matches, so relax oneOf to anyOf.
					keep = append(keep, bm)
				}
			}
			delete(m, k)
			m["anyOf"] = keep
		}
	}
	return json.Marshal(m)
}

// allowFill lets a plan row write "" (fill from context) for any string
// argument: it drops minLength from the top-level properties.
func allowFill(raw json.RawMessage) json.RawMessage {
	var m map[string]any
	if unmarshalNumbers(raw, &m) != nil {
		return raw
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			if pm, ok := p.(map[string]any); ok {
				delete(pm, "minLength")
			}
		}
	}
	return mustJSON(m)
}

// unmarshalNumbers is json.Unmarshal keeping numbers as written
// (json.Number): a schema rewritten here keeps a bound or const of more
// than 53 bits exactly.
func unmarshalNumbers(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the schema")
	}
	return nil
}
