package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"

	"github.com/tactcli/tact/internal/text"
)

// Tool is one MCP server tool offered as a tools.Tool named SERVER.TOOL.
type Tool struct {
	srv    *server
	name   string // SERVER.TOOL
	remote string // the server's name for it
	desc   string
	class  tools.Class
	// grammar is the argument schema the model and plans see; when the
	// server's schema uses keywords the grammar cannot express, those are
	// left out of it and full checks the arguments before each call.
	grammar json.RawMessage
	full    *schema.Validator
}

var (
	_ tools.Tool      = (*Tool)(nil)
	_ tools.Describer = (*Tool)(nil)
)

func (t *Tool) Name() string            { return t.name }
func (t *Tool) Description() string     { return t.desc }
func (t *Tool) Class() tools.Class      { return t.class }
func (t *Tool) Schema() json.RawMessage { return t.grammar }
func (t *Tool) Server() string          { return t.srv.cfg.Name }
func (t *Tool) ValidatedOnly() bool     { return t.full != nil }
func (t *Tool) Describe(_ *tools.Env, _ json.RawMessage) string {
	return fmt.Sprintf("MCP tool %q of server %s (%s)", t.remote, t.srv.cfg.Name, t.srv.where())
}

// Run calls the tool on its server. The server's text content is the
// output; isError, a dead server and a call past the server's timeout are
// failures.
func (t *Tool) Run(ctx context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return tools.Result{Err: fmt.Errorf("arguments for %s: want a JSON object", t.name)}
	}
	if t.full != nil {
		if _, err := t.full.ValidateJSON(args); err != nil {
			return tools.Result{Err: fmt.Errorf("arguments for %s: %v", t.name, err)}
		}
	}
	res, err := t.srv.call(ctx, t.remote, args)
	if err != nil {
		return tools.Result{Err: fmt.Errorf("%s: %w", t.name, err)}
	}
	out := ResultText(res)
	if res.IsError {
		return tools.Result{Output: out, Err: fmt.Errorf("%s reported an error", t.name)}
	}
	return tools.Result{Output: out}
}

// ResultText turns a tool result into the observation: text content
// joined by newlines; images, audio and resources one line each (type,
// size, URI); structured content as JSON when there is no text.
func ResultText(res *sdk.CallToolResult) string {
	var parts []string
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			hasText = true
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(int64(len(c.Data)))))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), size(int64(len(c.Data)))))
		case *sdk.ResourceLink:
			line := "[resource link: " + c.URI
			if c.MIMEType != "" {
				line += ", " + c.MIMEType
			}
			if c.Size != nil {
				line += ", " + size(*c.Size)
			}
			if c.Name != "" && c.Name != c.URI {
				line += ", " + text.OneLine(c.Name)
			}
			parts = append(parts, line+"]")
		case *sdk.EmbeddedResource:
			r := c.Resource
			if r == nil {
				parts = append(parts, "[resource]")
				continue
			}
			n := int64(len(r.Blob))
			if r.Text != "" {
				n = int64(len(r.Text))
			}
			parts = append(parts, fmt.Sprintf("[resource: %s, %s, %s]", r.URI, orUnknown(r.MIMEType), size(n)))
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// schemaProblem is the line of a schema compile error that says what is
// wrong (the validator lists every failing level, outermost first).
func schemaProblem(err error) string {
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "-"))
		if strings.HasPrefix(line, "at '") && !strings.HasSuffix(line, "failed") {
			return line
		}
	}
	return text.OneLine(err.Error())
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return text.OneLine(s)
}

func size(n int64) string { return text.BinarySize(uint64(max(n, 0))) }

// ClassOf is a tool's side-effect class: "classes" in the config wins;
// else readOnlyHint is read, an explicit destructiveHint write, anything
// else exec (the most guarded).
func ClassOf(cfg *ServerConfig, t *sdk.Tool) tools.Class {
	if c, ok := cfg.Classes[t.Name]; ok {
		return c
	}
	a := t.Annotations
	switch {
	case a == nil:
		return tools.ClassExec
	case a.ReadOnlyHint:
		return tools.ClassRead
	case a.DestructiveHint != nil && *a.DestructiveHint:
		return tools.ClassWrite
	}
	return tools.ClassExec
}

// adapt turns a server's tool list into tools, skipping (with a warning)
// names that are not usable or taken and schemas that are not valid.
func (s *server) adapt(list []*sdk.Tool) []*Tool {
	var out []*Tool
	seen := map[string]bool{}
	known := map[string]bool{}
	for _, st := range list {
		known[st.Name] = true
		name := s.cfg.Name + "." + st.Name
		switch {
		case !validToolName(st.Name):
			// Refused, not escaped: a name policy rules cannot spell (or
			// that reads as another) must not become a tool.
			s.log.Warn(fmt.Sprintf("MCP tool skipped: tool names are 1 to %d of %s", tools.MaxMCPToolName, tools.ToolNameAlphabet),
				"server", s.cfg.Name, "tool", strconv.QuoteToASCII(capText(st.Name, 200)))
			continue
		case seen[st.Name]:
			s.log.Warn("MCP tool skipped: the server lists the name twice", "tool", name)
			continue
		case s.cfg.DisabledTools[st.Name]:
			continue
		}
		seen[st.Name] = true
		grammar, full, dropped, err := toolSchema(st.InputSchema)
		if err != nil {
			s.log.Warn("MCP tool skipped: invalid input schema", "tool", name, "err", schemaProblem(err))
			continue
		}
		if len(dropped) > 0 {
			s.log.Warn("MCP tool schema uses keywords the grammar cannot express; its arguments are validated only", "tool", name, "keywords", strings.Join(dropped, ","))
		}
		desc := strings.TrimSpace(st.Description)
		if desc == "" {
			desc = st.Title
		}
		desc = capText(desc, maxDescription)
		out = append(out, &Tool{srv: s, name: name, remote: st.Name, desc: desc, class: ClassOf(s.cfg, st), grammar: grammar, full: full})
	}
	for _, t := range sortedKeys(s.cfg.Classes) {
		if !known[t] {
			s.log.Warn("MCP config: \"classes\" names a tool the server does not have", "server", s.cfg.Name, "tool", t)
		}
	}
	for _, t := range sortedKeys(s.cfg.DisabledTools) {
		if !known[t] {
			s.log.Warn("MCP config: \"disabled_tools\" names a tool the server does not have", "server", s.cfg.Name, "tool", t)
		}
	}
	return out
}

// maxDescription bounds a tool description in prompts: every tool's
// description is in every planning prompt.
const maxDescription = 1024

// capText cuts s to at most n bytes on a character boundary, marking the cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:text.RuneStart(s, n)] + "…"
}

// toolSchema checks a server's inputSchema: it must be a valid JSON Schema
// of an object. grammar is its normalized copy (schema.NormalizeArgs:
// $refs inlined, what the grammar cannot express left out and named in
// dropped); full is the validator of the whole schema when something was
// dropped, else nil.
func toolSchema(in any) (grammar json.RawMessage, full *schema.Validator, dropped []string, err error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, nil, nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return nil, nil, nil, errors.New("not a JSON object")
	}
	if t, ok := doc["type"]; ok && t != "object" {
		return nil, nil, nil, fmt.Errorf("type is %v, want \"object\"", t)
	}
	v, err := schema.Compile(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	n, err := schema.NormalizeArgs(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(n.Loosened) > 0 {
		full, dropped = v, n.Loosened
	}
	return n.Schema, full, dropped, nil
}
