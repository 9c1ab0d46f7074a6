package models

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	path := writeGGUF(t, dir, "tiny.gguf", testModel{arch: "llama", ctx: 2048, fileType: 7, template: chatmlJinja})
	info, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	want := Info{
		Name: "tiny", Path: path, Size: st.Size(), Architecture: "llama",
		ParameterCount: 48, Quantization: "Q8_0", ContextLength: 2048, ChatTemplate: chatmlJinja,
	}
	if *info != want {
		t.Errorf("Inspect =\n%+v\nwant\n%+v", *info, want)
	}
}

func TestInspectQuantizationFallback(t *testing.T) {
	// No general.file_type: the dominant 2-D tensor type names it.
	dir := t.TempDir()
	path := writeGGUF(t, dir, "m.gguf", testModel{arch: "llama", ctx: 8, extra: nil})
	b, _ := os.ReadFile(path)
	b = []byte(strings.Replace(string(b), "general.file_type", "general.file_typ_", 1))
	os.WriteFile(path, b, 0o644)
	info, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Quantization != "F32" {
		t.Errorf("Quantization = %q, want F32", info.Quantization)
	}
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeGGUF(t, dir, "good.gguf", testModel{arch: "llama", ctx: 8})
	goodBytes, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bigCount := append([]byte{}, goodBytes...)
	bigCount[16] = 0xff // n_kv low byte... make n_kv huge
	bigCount[23] = 0x7f

	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.gguf"), "no such file"},
		{"directory", dir, "is a directory"},
		{"empty", write("empty.gguf", nil), "too short"},
		{"text", write("text.gguf", []byte("this is not a model, just some text\n")), "bad magic"},
		{"header only", write("hdr.gguf", goodBytes[:24]), "truncated"},
		{"truncated metadata", write("meta.gguf", goodBytes[:60]), "truncated"},
		{"truncated data", write("data.gguf", goodBytes[:len(goodBytes)-10]), "truncated"},
		{"version 1", write("v1.gguf", append([]byte("GGUF\x01\x00\x00\x00"), goodBytes[8:]...)), "version 1"},
		{"version 9", write("v9.gguf", append([]byte("GGUF\x09\x00\x00\x00"), goodBytes[8:]...)), "unsupported GGUF version 9"},
		{"big endian", write("be.gguf", append([]byte("GGUF\x00\x00\x00\x03"), goodBytes[8:]...)), "big-endian"},
		{"huge kv count", write("count.gguf", bigCount), "metadata keys"},
		{"no architecture", writeGGUF(t, dir, "noarch.gguf", testModel{}), "no general.architecture"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := Inspect(tc.path)
			if err == nil {
				t.Fatalf("Inspect(%s) = %+v, want error", tc.name, info)
			}
			if !errors.Is(err, ErrBadModel) {
				t.Errorf("error %q does not wrap ErrBadModel", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "model "+tc.path+": ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error = %q, want one line `model %s: ...%s...`", msg, tc.path, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	os.Mkdir(models, 0o755)
	writeGGUF(t, models, "alpha.gguf", testModel{arch: "llama"})
	writeGGUF(t, models, "beta", testModel{arch: "llama"}) // no extension
	local := writeGGUF(t, dir, "local.gguf", testModel{arch: "llama"})
	t.Chdir(dir)
	// A file named like a model in the directory: the path wins.
	writeGGUF(t, dir, "alpha", testModel{arch: "llama"})

	tests := []struct {
		in, want, err string
	}{
		{in: local, want: local},
		{in: "local.gguf", want: "local.gguf"},
		{in: "alpha", want: "alpha"}, // existing file in the working directory first
		{in: "alpha.gguf", want: filepath.Join(models, "alpha.gguf")},
		{in: "beta", want: filepath.Join(models, "beta")},
		{in: "./gamma", err: "model ./gamma: no such file"},
		{in: "gamma", err: "model gamma: not found (looked for gamma, " + filepath.Join(models, "gamma") + ", " + filepath.Join(models, "gamma.gguf") + ")"},
		{in: "gamma.gguf", err: "model gamma.gguf: not found (looked for gamma.gguf, " + filepath.Join(models, "gamma.gguf") + ")"},
		{in: "models", err: "is a directory"},
	}
	for _, tc := range tests {
		got, err := Resolve(tc.in, models)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadModel) {
				t.Errorf("Resolve(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestResolveDefault(t *testing.T) {
	dir := t.TempDir()
	if _, err := Resolve("", filepath.Join(dir, "absent")); !errors.Is(err, ErrNoModel) {
		t.Errorf("missing dir: err = %v, want ErrNoModel", err)
	}
	if _, err := Resolve("", dir); !errors.Is(err, ErrNoModel) {
		t.Errorf("empty dir: err = %v, want ErrNoModel", err)
	}
	only := writeGGUF(t, dir, "only.gguf", testModel{arch: "llama"})
	if got, err := Resolve("", dir); err != nil || got != only {
		t.Errorf("one model: Resolve = %q, %v; want %q", got, err, only)
	}
	writeGGUF(t, dir, "second.gguf", testModel{arch: "llama"})
	_, err := Resolve("", dir)
	if err == nil || errors.Is(err, ErrNoModel) || !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), "only, second") {
		t.Errorf("two models: err = %v, want a bad-model error naming both", err)
	}
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	writeGGUF(t, dir, "b.gguf", testModel{arch: "llama", ctx: 4096, fileType: 15, template: llama3Jinja})
	writeGGUF(t, dir, "a.gguf", testModel{arch: "qwen2", ctx: 32768, fileType: 7, template: chatmlJinja})
	os.WriteFile(filepath.Join(dir, "broken.gguf"), []byte("GGUF\x03\x00\x00\x00garbage and more garbage"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a model"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub.gguf"), 0o755)

	infos, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range infos {
		got = append(got, in.Name+"/"+in.Architecture+"/"+in.Quantization)
	}
	// A directory named *.gguf is listed as refused, like any non-regular entry.
	if strings.Join(got, " ") != "a/qwen2/Q8_0 b/llama/Q4_K_M broken// sub//" {
		t.Errorf("List = %v", got)
	}
	if len(infos) == 4 && (!strings.Contains(infos[2].Error, "broken.gguf: ") || infos[2].Size != 32) {
		t.Errorf("broken entry = %+v, want an error and its size", infos[2])
	}
	if len(infos) == 4 && !strings.Contains(infos[3].Error, "sub.gguf: is a directory, not a regular file") {
		t.Errorf("directory entry = %+v, want it refused", infos[3])
	}
	if infos, err := List(filepath.Join(dir, "absent")); err != nil || len(infos) != 0 {
		t.Errorf("List(missing dir) = %v, %v; want empty", infos, err)
	}
}

// FuzzInspect: arbitrary bytes must give a result or an ErrBadModel error,
// never a panic or a runaway allocation.
func FuzzInspect(f *testing.F) {
	dir := f.TempDir()
	good, _ := os.ReadFile(writeGGUF(f, dir, "seed.gguf", testModel{arch: "llama", ctx: 64, template: chatmlJinja}))
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.gguf")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := Inspect(p)
		if err != nil {
			if !errors.Is(err, ErrBadModel) || strings.Contains(err.Error(), "\n") {
				t.Errorf("bad error: %q", err)
			}
			return
		}
		if info.Architecture == "" {
			t.Errorf("success without architecture: %+v", info)
		}
	})
}
