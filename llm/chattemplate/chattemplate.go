// Package chattemplate renders chat messages into a model's prompt text:
// the model's jinja chat template matched to one of ollama's Go templates.
// It is pure Go (no llama.cpp), so every backend and test can use it.
package chattemplate

import (
	"fmt"
	"strings"
	"sync"
	gotemplate "text/template"
	"text/template/parse"

	"github.com/ollama/ollama/template"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/models"
)

// Formatter renders chat messages into the prompt text a model was trained on.
//
// Formatters are prefix-stable: Format(msgs[:n], false) is a prefix of
// Format(msgs[:n+1], false), which is what lets the llama backend reuse its
// KV cache from one call to the next. For chatml, llama3, gemma, phi-3 and
// most other families Format(msgs[:n], true)+reply is also a prefix of the
// history that includes the reply; a few (mistral, llama2, openchat,
// command-r, chatqa, codellama-70b) put a space before the reply that their
// generation prompt leaves out. Messages are never merged or reordered.
// The text has no BOS token: the tokenizer adds it.
type Formatter interface {
	// Format renders msgs with the chat template; addGenerationPrompt appends the assistant header.
	Format(msgs []llm.Message, addGenerationPrompt bool) (string, error)
	Name() string // the template's name, e.g. "chatml", "llama3-instruct", "gemma3-instruct"
}

// NewFormatter picks a formatter for the model's tokenizer.chat_template. The
// jinja template is matched to one of ollama's Go templates (by edit distance,
// then by its turn markers); an empty or unknown template falls back to
// ChatML, and warning says so. info may be nil (ChatML, with a warning).
func NewFormatter(info *models.Info) (f Formatter, warning string) {
	if info == nil || strings.TrimSpace(info.ChatTemplate) == "" {
		return chatML(), "model has no chat template; using ChatML"
	}
	if name, text := matchTemplate(info.ChatTemplate); name != "" {
		if f, err := formatter(name, text); err == nil {
			return f, ""
		}
		// A template ollama knows but that cannot be split into body and
		// generation prompt: fall through to ChatML.
	}
	return chatML(), fmt.Sprintf("model %s: chat template not recognised; using ChatML", info.Name)
}

// FormatterByName returns one of the formatters NewFormatter can pick by
// family marker: "chatml", "llama3-instruct", "gemma3-instruct", "gemma4" or
// "phi-3".
func FormatterByName(name string) (Formatter, error) {
	if text, ok := overrides[name]; ok {
		return formatter(name, text)
	}
	jinja, ok := knownJinja[name]
	if !ok {
		return nil, fmt.Errorf("unknown chat template %q", name)
	}
	t, err := template.Named(jinja)
	if err != nil || t.Name != name {
		return nil, fmt.Errorf("unknown chat template %q", name)
	}
	return formatter(name, string(t.Bytes))
}

// matchTemplate maps a jinja chat template to an ollama template name and
// the Go template text to render it with ("" when unknown).
func matchTemplate(jinja string) (name, text string) {
	// ollama's own table of known jinja templates, by edit distance. That is
	// quadratic in the template length, so skip it for long templates that
	// could never be within its distance limit (100) of a table entry.
	if len(jinja) < 2000 {
		if t, err := template.Named(jinja); err == nil {
			if o, ok := overrides[t.Name]; ok {
				return t.Name, o
			}
			return t.Name, string(t.Bytes)
		}
	}
	// Long templates (tool-calling variants, for one) rarely match by edit
	// distance, but their turn markers give the family away.
	var family string
	switch {
	case strings.Contains(jinja, "<|turn>"):
		family = "gemma4"
	case strings.Contains(jinja, "<|im_start|>"):
		family = "chatml"
	case strings.Contains(jinja, "<|start_header_id|>"):
		family = "llama3-instruct"
	case strings.Contains(jinja, "<start_of_turn>"):
		family = "gemma3-instruct"
	case strings.Contains(jinja, "<|assistant|>") && strings.Contains(jinja, "<|end|>"):
		family = "phi-3"
	default:
		return "", ""
	}
	if o, ok := overrides[family]; ok {
		return family, o
	}
	if t, err := template.Named(knownJinja[family]); err == nil && t.Name == family {
		return family, string(t.Bytes)
	}
	return "", ""
}

// overrides replace ollama templates that are not prefix-stable, and add
// families ollama's table lacks. gemma3's emits the generation prompt inside
// its message loop, after any last message; this one is the same format
// with the prompt after the loop.
//
// gemma4 is Gemma 4's turn format (<|turn>ROLE ... <turn|>, the assistant
// called model), which ollama v0.17.4's table predates. With thinking off,
// Google's template opens the model's turn with an empty thinking channel
// (<|channel>thought\n<channel|>) and strips thinking from earlier replies;
// here earlier replies keep that empty channel, so the prompt that produced
// a reply plus the reply is a prefix of the next history (prefix reuse).
var overrides = map[string]string{
	"gemma4": `{{- range .Messages }}<|turn>
{{- if eq .Role "assistant" }}model
<|channel>thought
<channel|>
{{- else }}{{ .Role }}
{{ end }}
{{- .Content }}<turn|>
{{ end }}<|turn>model
<|channel>thought
<channel|>`,
	"gemma3-instruct": `{{- $system := "" }}
{{- range .Messages }}
{{- if eq .Role "system" }}
{{- if not $system }}{{ $system = .Content }}
{{- else }}{{ $system = printf "%s\n\n%s" $system .Content }}
{{- end }}
{{- continue }}
{{- else if eq .Role "user" }}<start_of_turn>user
{{ if $system }}{{ $system }}

{{ $system = "" }}
{{- end }}
{{- else if eq .Role "assistant" }}<start_of_turn>model
{{ end }}
{{- .Content }}<end_of_turn>
{{ end }}<start_of_turn>model
`,
}

// knownJinja holds one jinja template per family from ollama's own table,
// used to fetch that family's Go template by name (template.Named only
// maps jinja to Go templates).
var knownJinja = map[string]string{
	"chatml":          "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
	"llama3-instruct": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
	"phi-3":           "{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}",
}

var (
	formatterMu    sync.Mutex
	formatterCache = map[string]*goFormatter{}
)

func chatML() Formatter {
	f, err := FormatterByName("chatml")
	if err != nil {
		panic("models: built-in chatml template: " + err.Error()) // embedded; a test covers it
	}
	return f
}

// formatter builds (once per name) the formatter for a Go template.
func formatter(name, text string) (*goFormatter, error) {
	formatterMu.Lock()
	defer formatterMu.Unlock()
	if f, ok := formatterCache[name]; ok {
		return f, nil
	}
	f, err := newGoFormatter(name, text)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", name, err)
	}
	formatterCache[name] = f
	return f, nil
}

// goFormatter renders an ollama Go template split in two: the body (up to
// and including the range over .Messages) and the generation prompt (what
// the template emits after the loop). Messages go to the template as given:
// ollama's own Execute merges consecutive same-role messages, which would
// rewrite earlier text and break prefix stability.
type goFormatter struct {
	name string
	body *gotemplate.Template
	gen  *gotemplate.Template
}

func newGoFormatter(name, text string) (*goFormatter, error) {
	t, err := template.Parse(text)
	if err != nil {
		return nil, err
	}
	root := t.Template.Tree.Root
	last := -1
	for i, n := range root.Nodes {
		if _, ok := n.(*parse.RangeNode); ok {
			last = i
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("template has no loop over .Messages")
	}
	list := func(nodes []parse.Node) *parse.Tree {
		l := root.CopyList()
		l.Nodes = nil
		for _, n := range nodes {
			l.Nodes = append(l.Nodes, n.Copy())
		}
		return &parse.Tree{Name: name, Root: l}
	}
	body, err := t.Template.New(name+".body").AddParseTree(name+".body", list(root.Nodes[:last+1]))
	if err != nil {
		return nil, err
	}
	gen, err := t.Template.New(name+".gen").AddParseTree(name+".gen", list(root.Nodes[last+1:]))
	if err != nil {
		return nil, err
	}
	return &goFormatter{name: name, body: body, gen: gen}, nil
}

func (f *goFormatter) Name() string { return f.name }

// tmplMessage has every field ollama's templates may reference.
type tmplMessage struct {
	Role       string
	Content    string
	Thinking   string
	Images     []any
	ToolCalls  []any
	ToolName   string
	ToolCallID string
}

func (f *goFormatter) Format(msgs []llm.Message, addGenerationPrompt bool) (string, error) {
	var system []string
	tm := make([]tmplMessage, len(msgs))
	for i, m := range msgs {
		tm[i] = tmplMessage{Role: string(m.Role), Content: m.Content}
		if m.Role == llm.RoleSystem {
			system = append(system, m.Content)
		}
	}
	data := map[string]any{
		"System":     strings.Join(system, "\n\n"),
		"Messages":   tm,
		"Tools":      nil,
		"Prompt":     "",
		"Suffix":     "",
		"Response":   "",
		"Think":      false,
		"ThinkLevel": "",
		"IsThinkSet": false,
	}
	var b strings.Builder
	if err := f.body.Execute(&b, data); err != nil {
		return "", fmt.Errorf("chat template %s: %w", f.name, err)
	}
	if addGenerationPrompt {
		if err := f.gen.Execute(&b, data); err != nil {
			return "", fmt.Errorf("chat template %s: %w", f.name, err)
		}
	}
	return b.String(), nil
}
