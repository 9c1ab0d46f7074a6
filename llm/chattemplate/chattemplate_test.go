package chattemplate

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/models"
)

// Chat templates as shipped in real GGUF files (tokenizer.chat_template).
const (
	chatmlJinja = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
	llama3Jinja = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

const gemma3Jinja = "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n    {%- if messages[0]['content'] is string -%}\n        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n    {%- else -%}\n        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n    {%- endif -%}\n    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n    {%- set first_user_prefix = \"\" -%}\n    {%- set loop_messages = messages -%}\n{%- endif -%}\n{%- for message in loop_messages -%}\n    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n    {%- else -%}\n        {%- set role = message['role'] -%}\n    {%- endif -%}\n    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n    {%- elif message['content'] is iterable -%}\n        {%- for item in message['content'] -%}\n            {%- if item['type'] == 'image' -%}\n                {{ '<start_of_image>' }}\n            {%- elif item['type'] == 'text' -%}\n                {{ item['text'] | trim }}\n            {%- endif -%}\n        {%- endfor -%}\n    {%- else -%}\n        {{ raise_exception(\"Invalid content type\") }}\n    {%- endif -%}\n    {{ '<end_of_turn>\n' }}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n    {{'<start_of_turn>model\n'}}\n{%- endif -%}\n"

// A Qwen2.5-style template: long (tool-calling branch), so it can only be
// recognised by its markers.
var qwenJinja = "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n" + strings.Repeat("    {#- tool calling instructions, long enough to defeat edit distance #}\n", 40) +
	"{%- endif %}\n{%- for message in messages %}\n    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n"

// The turn markers of Google's Gemma 4 template (llama.cpp's
// models/templates/google-gemma-4-31B-it.jinja): far too long for edit
// distance, recognised by <|turn>.
var gemma4Jinja = "{{- bos_token -}}\n" + strings.Repeat("{#- tool declarations and thinking channels #}\n", 60) +
	"{%- for message in messages -%}{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}{{- '<|turn>' + role + '\\n' -}}{{- message['content'] | trim -}}{{- '<turn|>\\n' -}}{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}{%- if not enable_thinking | default(false) -%}{{- '<|channel>thought\\n<channel|>' -}}{%- endif -%}{%- endif -%}"

var conversation = []llm.Message{
	{Role: llm.RoleSystem, Content: "You are terse."},
	{Role: llm.RoleUser, Content: "List files."},
	{Role: llm.RoleAssistant, Content: `{"tool":"list_dir"}`},
	{Role: llm.RoleUser, Content: "Observation: a.txt\nb.txt"},
	{Role: llm.RoleUser, Content: "Continue."}, // same role twice: must not merge
	{Role: llm.RoleAssistant, Content: "Done."},
}

func TestNewFormatter(t *testing.T) {
	tests := []struct {
		name, template, want string
		warn                 bool
	}{
		{"chatml", chatmlJinja, "chatml", false},
		{"llama3", llama3Jinja, "llama3-instruct", false},
		{"gemma3", gemma3Jinja, "gemma3-instruct", false},
		{"qwen long", qwenJinja, "chatml", false},
		{"gemma4", gemma4Jinja, "gemma4", false},
		{"llama3 long", strings.Repeat(" ", 3000) + llama3Jinja, "llama3-instruct", false},
		{"empty", "", "chatml", true},
		{"garbage", "{{ this is not a chat template at all, nothing like one }}", "chatml", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, warning := NewFormatter(&models.Info{Name: "m", ChatTemplate: tc.template})
			if f.Name() != tc.want {
				t.Errorf("Name = %q, want %q", f.Name(), tc.want)
			}
			if (warning != "") != tc.warn || (tc.warn && !strings.Contains(warning, "ChatML")) {
				t.Errorf("warning = %q, want warning: %v", warning, tc.warn)
			}
		})
	}
	if f, w := NewFormatter(nil); f.Name() != "chatml" || w == "" {
		t.Errorf("NewFormatter(nil) = %s, %q", f.Name(), w)
	}
}

func TestFormatOutput(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "S"},
		{Role: llm.RoleUser, Content: "U"},
		{Role: llm.RoleAssistant, Content: "A"},
		{Role: llm.RoleUser, Content: "V"},
	}
	tests := []struct{ name, want string }{
		{"chatml", "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nV<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3-instruct", "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nA<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nV<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"gemma3-instruct", "<start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\nA<end_of_turn>\n<start_of_turn>user\nV<end_of_turn>\n<start_of_turn>model\n"},
		{"phi-3", "<|system|>\nS<|end|>\n<|user|>\nU<|end|>\n<|assistant|>\nA<|end|>\n<|user|>\nV<|end|>\n<|assistant|>\n"},
		{"gemma4", "<|turn>system\nS<turn|>\n<|turn>user\nU<turn|>\n<|turn>model\n<|channel>thought\n<channel|>A<turn|>\n<|turn>user\nV<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"},
	}
	for _, tc := range tests {
		f, err := FormatterByName(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Format(msgs, true)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
		noGen, _ := f.Format(msgs, false)
		if !strings.HasSuffix(got, tc.want[len(noGen):]) || noGen == got {
			t.Errorf("%s: Format(false) = %q should be Format(true) minus the generation prompt", tc.name, noGen)
		}
	}
	if _, err := FormatterByName("nonesuch"); err == nil {
		t.Error("FormatterByName(nonesuch) succeeded")
	}
}

// TestFormatPrefixStable checks what KV-cache reuse relies on, for every
// formatter NewFormatter can pick by name.
func TestFormatPrefixStable(t *testing.T) {
	for _, name := range []string{"chatml", "llama3-instruct", "gemma3-instruct", "gemma4", "phi-3"} {
		t.Run(name, func(t *testing.T) {
			f, err := FormatterByName(name)
			if err != nil {
				t.Fatal(err)
			}
			for n := 0; n < len(conversation); n++ {
				cur, err := f.Format(conversation[:n], false)
				if err != nil {
					t.Fatal(err)
				}
				next, _ := f.Format(conversation[:n+1], false)
				if !strings.HasPrefix(next, cur) {
					t.Errorf("Format(msgs[:%d]) is not a prefix of Format(msgs[:%d]):\n%q\n%q", n, n+1, cur, next)
				}
				if conversation[n].Role == llm.RoleAssistant {
					// The prompt that produced reply n is a prefix of the
					// history that includes it.
					prompt, _ := f.Format(conversation[:n], true)
					if !strings.HasPrefix(next, prompt+conversation[n].Content) {
						t.Errorf("generation prompt + reply %d is not a prefix of the next history:\n%q\n%q", n, prompt, next)
					}
				}
			}
			full, _ := f.Format(conversation, false)
			if !strings.Contains(full, "Observation: a.txt\nb.txt") || !strings.Contains(full, "Continue.") {
				t.Errorf("messages lost or merged: %q", full)
			}
		})
	}
}

func BenchmarkNewFormatterLong(b *testing.B) {
	info := &models.Info{ChatTemplate: qwenJinja}
	for b.Loop() {
		NewFormatter(info)
	}
}

// TestOllamaTemplates runs every jinja template in ollama's table (copied
// from github.com/ollama/ollama/template/index.json): each must map to its
// own formatter without a warning, and keep the message prefix property.
// The generation prompt of a few families ends just before a space that the
// rendered reply starts with (" A"), so for them only the message property
// is checked.
func TestOllamaTemplates(t *testing.T) {
	b, err := os.ReadFile("testdata/ollama-chat-templates.json")
	if err != nil {
		t.Fatal(err)
	}
	var table []struct{ Name, Template string }
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	spaceBeforeReply := map[string]bool{"openchat": true, "mistral-instruct": true, "llama2-chat": true,
		"codellama-70b-instruct": true, "chatqa": true, "command-r": true}
	for i, e := range table {
		f, warning := NewFormatter(&models.Info{Name: e.Name, ChatTemplate: e.Template})
		if f.Name() != e.Name || warning != "" {
			t.Errorf("template %d (%s): got %s, warning %q", i, e.Name, f.Name(), warning)
			continue
		}
		for n := 0; n < len(conversation); n++ {
			cur, err := f.Format(conversation[:n], false)
			if err != nil {
				t.Fatalf("%s: %v", e.Name, err)
			}
			next, _ := f.Format(conversation[:n+1], false)
			if !strings.HasPrefix(next, cur) {
				t.Errorf("%s: Format(msgs[:%d]) is not a prefix of Format(msgs[:%d])", e.Name, n, n+1)
			}
			if conversation[n].Role == llm.RoleAssistant && !spaceBeforeReply[e.Name] {
				prompt, _ := f.Format(conversation[:n], true)
				if !strings.HasPrefix(next, prompt+conversation[n].Content) {
					t.Errorf("%s: generation prompt + reply %d is not a prefix of the next history", e.Name, n)
				}
			}
		}
	}
}
