package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/tactcli/tact/config"
)

// hostile is outside text with what a terminal would act on: colour, a
// window title and a clipboard write (OSC 0 and 52, BEL-terminated), a C1
// CSI, a bidi override, DEL, a line separator, a cursor move, a tab and a
// newline.
const hostile = "ok \x1b[31mred\x1b]0;title\x07\x1b]52;c;ZWNobw==\x07\u009b2J\u202eevil\x7f\u2028\x1b[2A\tcol\nrow"

func TestTermCell(t *testing.T) {
	got := termCell(hostile)
	want := `ok \u001b[31mred\u001b]0;title\u0007\u001b]52;c;ZWNobw==\u0007\u009b2J\u202eevil\u007f \u001b[2A col row`
	if got != want {
		t.Errorf("termCell:\n got %q\nwant %q", got, want)
	}
	if line := termLine(hostile); line != `ok \u001b[31mred\u001b]0;title\u0007\u001b]52;c;ZWNobw==\u0007\u009b2J\u202eevil\u007f\u2028\u001b[2A`+"\tcol" {
		t.Errorf("termLine: %q", line)
	}
	if text := termText(hostile); !strings.Contains(text, "\tcol\nrow") || strings.ContainsAny(text, "\x1b\x07\u009b\u202e\x7f") {
		t.Errorf("termText: %q", text)
	}
}

// termJSON escapes what json.Encoder leaves raw (C1, U+2028/9, bidi) and
// the value stays the same.
func TestTermJSON(t *testing.T) {
	in := map[string]any{"description": hostile, "name": "caf\u00e9 \u0430 \U0001F600", "n": 1}
	var raw bytes.Buffer
	enc := json.NewEncoder(termJSONWriter{&raw})
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	out := raw.Bytes()
	if bytes.ContainsAny(out, "\x1b\x07\x7f\u009b\u202e\u2028") {
		t.Errorf("raw control characters left: %q", out)
	}
	if !bytes.Contains(out, []byte("caf\u00e9 \u0430 \U0001F600")) {
		t.Errorf("printable text was escaped: %s", out)
	}
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("not JSON: %v: %s", err, out)
	}
	in["n"] = float64(1)
	if !reflect.DeepEqual(back, in) {
		t.Errorf("value changed:\n got %q\nwant %q", back, in)
	}
}

// Model names and metadata come from files: `tact models list` and `show`
// print them sanitized (the file name, the architecture and the chat
// template here carry escapes), in the table, the warnings and --json.
func TestModelsOutputSanitized(t *testing.T) {
	dir := t.TempDir()
	evil := "m\x1b]0;title\x07\u202e"
	writeModelsTestGGUF(t, filepath.Join(dir, evil+".gguf"), ggml.KV{
		"general.architecture": "llama\x1b[31m", "general.file_type": uint32(7),
		"llama.context_length": uint32(2048), "tokenizer.chat_template": "{{ x }}\x1b]52;c;ZWNobw==\x07\u009b2J",
	})
	os.WriteFile(filepath.Join(dir, "x\x1b[2J.gguf"), []byte("not a model"), 0o644)
	s := &config.Settings{ModelsDir: dir}
	for _, args := range [][]string{{"list"}, {"list", "--json"}, {"show", evil}} {
		out, errOut, err := runModelsCmd(t, s, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, text := range []string{out, errOut} {
			if strings.ContainsAny(text, "\x1b\x07\u009b\u202e") {
				t.Errorf("%v: raw control characters in %q", args, text)
			}
		}
		if !strings.Contains(out, `m\u001b]0;title\u0007\u202e`) {
			t.Errorf("%v: the name is not shown escaped:\n%s", args, out)
		}
	}
}
