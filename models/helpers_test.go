package models

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

// Chat templates as shipped in real GGUF files (tokenizer.chat_template).
const (
	chatmlJinja = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
	llama3Jinja = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

// testModel describes a tiny GGUF file for tests.
type testModel struct {
	arch     string // "" leaves general.architecture out
	ctx      uint32
	fileType uint32 // general.file_type; 0 means F32
	template string
	extra    ggml.KV
}

// writeGGUF writes a tiny llama-shaped GGUF (two F32 tensors, 48 parameters)
// to dir/name and returns its path.
func writeGGUF(t testing.TB, dir, name string, m testModel) string {
	t.Helper()
	kv := ggml.KV{"general.file_type": m.fileType}
	if m.arch != "" {
		kv["general.architecture"] = m.arch
		kv[m.arch+".context_length"] = m.ctx
		kv[m.arch+".block_count"] = uint32(1)
	} else {
		// WriteGGUF insists on an architecture; write one under another key.
		kv["general.architecture"] = "x"
	}
	if m.template != "" {
		kv["tokenizer.chat_template"] = m.template
	}
	kv["tokenizer.ggml.tokens"] = []string{"<s>", "</s>", "a", "b"}
	for k, v := range m.extra {
		kv[k] = v
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 4*32)
	ts := []*ggml.Tensor{
		{Name: "token_embd.weight", Kind: uint32(ggml.TensorTypeF32), Shape: []uint64{8, 4}, WriterTo: bytes.NewReader(data)},
		{Name: "output_norm.weight", Kind: uint32(ggml.TensorTypeF32), Shape: []uint64{16}, WriterTo: bytes.NewReader(data[:64])},
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if m.arch == "" {
		// Rename the key so the file has no general.architecture.
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte("general.architecture"), []byte("general.architectur_"), 1)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}
