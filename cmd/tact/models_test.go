package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/tactcli/tact/config"
)

const modelsTestChatML = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

// writeModelsTestGGUF writes a tiny GGUF (48 F32 parameters) to path.
func writeModelsTestGGUF(t *testing.T, path string, kv ggml.KV) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 4*48)
	ts := []*ggml.Tensor{{Name: "token_embd.weight", Kind: uint32(ggml.TensorTypeF32), Shape: []uint64{8, 6}, WriterTo: bytes.NewReader(data)}}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		t.Fatal(err)
	}
}

func runModelsCmd(t *testing.T, s *config.Settings, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newModelsCmd(s)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func exitCodeOf(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return exitInternal
	}
	return 0
}

func modelsTestDir(t *testing.T) string {
	dir := t.TempDir()
	writeModelsTestGGUF(t, filepath.Join(dir, "tiny.gguf"), ggml.KV{
		"general.architecture": "llama", "general.file_type": uint32(7),
		"llama.context_length": uint32(2048), "tokenizer.chat_template": modelsTestChatML,
	})
	writeModelsTestGGUF(t, filepath.Join(dir, "plain.gguf"), ggml.KV{
		"general.architecture": "gpt2", "general.file_type": uint32(1), "gpt2.context_length": uint32(1024),
	})
	os.WriteFile(filepath.Join(dir, "broken.gguf"), []byte("not a model at all, only text"), 0o644)
	return dir
}

func TestModelsList(t *testing.T) {
	dir := modelsTestDir(t)
	s := &config.Settings{ModelsDir: dir}
	out, errOut, err := runModelsCmd(t, s, "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"NAME", "ARCH", "PARAMS", "QUANT", "CTX", "SIZE"},
		{"broken", "?", "?", "?", "?", "29B"},
		{"plain", "gpt2", "48", "F16", "1024"},
		{"tiny", "llama", "48", "Q8_0", "2048"},
	}
	if len(lines) != len(want) {
		t.Fatalf("list output:\n%s", out)
	}
	for i, w := range want {
		f := strings.Fields(lines[i])
		if len(f) != 6 || strings.Join(f[:len(w)], " ") != strings.Join(w, " ") {
			t.Errorf("line %d = %q, want fields %q", i, lines[i], w)
		}
	}
	if !strings.Contains(errOut, "broken.gguf: not a GGUF file") {
		t.Errorf("stderr = %q, want the broken file's error", errOut)
	}

	out, _, err = runModelsCmd(t, s, "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		names = append(names, m["name"].(string))
		if m["name"] == "tiny" && (m["quantization"] != "Q8_0" || m["context_length"] != 2048.0 || m["parameter_count"] != 48.0) {
			t.Errorf("tiny = %v", m)
		}
		if m["name"] == "broken" && m["error"] == nil {
			t.Errorf("broken has no error field: %v", m)
		}
	}
	if strings.Join(names, ",") != "broken,plain,tiny" {
		t.Errorf("names = %v", names)
	}

	out, errOut, err = runModelsCmd(t, &config.Settings{ModelsDir: t.TempDir()}, "list")
	if err != nil || out != "" || !strings.Contains(errOut, "no models in") {
		t.Errorf("empty dir: %q, %q, %v", out, errOut, err)
	}
}

func TestModelsShow(t *testing.T) {
	dir := modelsTestDir(t)
	s := &config.Settings{ModelsDir: dir}
	out, _, err := runModelsCmd(t, s, "show", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name:           tiny\n", "architecture:   llama\n", "parameters:     48 (48)\n",
		"quantization:   Q8_0\n", "context length: 2048\n", "chat format:    chatml\n", "chat template:\n  {% for message"} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}

	out, _, err = runModelsCmd(t, s, "show", "--json", "plain")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d["architecture"] != "gpt2" || d["chat_format"] != "chatml" || !strings.Contains(d["chat_format_warning"].(string), "no chat template") {
		t.Errorf("show --json = %v", d)
	}

	for _, tc := range []struct{ arg, want string }{
		{"missing", "model missing: not found (looked for missing, "},
		{"broken", "broken.gguf: not a GGUF file"},
	} {
		_, _, err := runModelsCmd(t, s, "show", tc.arg)
		if exitCodeOf(err) != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("show %s: err = %v (exit %d), want exit 2 with %q", tc.arg, err, exitCodeOf(err), tc.want)
		}
	}
}

func TestModelsPull(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.gguf")
	writeModelsTestGGUF(t, src, ggml.KV{"general.architecture": "llama"})
	content, _ := os.ReadFile(src)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "x.gguf", time.Time{}, bytes.NewReader(content))
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "models")
	s := &config.Settings{ModelsDir: dir}

	out, _, err := runModelsCmd(t, s, "pull", srv.URL+"/files/Tiny-Q8_0.gguf?download=1")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "Tiny-Q8_0.gguf")
	if out != want+"\n" {
		t.Errorf("stdout = %q, want the path", out)
	}
	if b, _ := os.ReadFile(want); !bytes.Equal(b, content) {
		t.Error("installed file differs")
	}

	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pull", srv.URL + "/files/Tiny-Q8_0.gguf"}, exitUsage, "--force"},
		{[]string{"pull", srv.URL + "/a.gguf", "--name", "a", "--sha256", strings.Repeat("0", 64)}, exitUsage, "sha256 mismatch"},
		{[]string{"pull", "not a url"}, exitUsage, "not an http(s) URL"},
		{[]string{"pull", "http://127.0.0.1:1/x.gguf"}, exitInternal, "pull http://127.0.0.1:1/x.gguf: "},
	}
	for _, tc := range tests {
		_, _, err := runModelsCmd(t, s, tc.args...)
		if exitCodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v (exit %d), want exit %d with %q", tc.args, err, exitCodeOf(err), tc.code, tc.want)
		}
	}
	if _, _, err := runModelsCmd(t, s, "pull", "--force", srv.URL+"/files/Tiny-Q8_0.gguf"); err != nil {
		t.Errorf("pull --force: %v", err)
	}
}

func TestFmtParamCount(t *testing.T) {
	for n, want := range map[uint64]string{48: "48", 12_300: "12K", 248_000_000: "248M", 1_240_000_000: "1.2B", 7_600_000_000: "7.6B"} {
		if got := fmtParamCount(n); got != want {
			t.Errorf("fmtParamCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestModelsHelpText: the help says what the commands do. `models show` has
// no --model flag (the default comes from TACT_MODEL), and it prints the
// listed fields, not "all metadata".
func TestModelsHelpText(t *testing.T) {
	s := &config.Settings{ModelsDir: t.TempDir()}
	out, _, err := runModelsCmd(t, s, "show", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "--model/") || strings.Contains(out, "--model ") || strings.Contains(out, "all metadata") {
		t.Errorf("show help names a --model flag it lacks or claims all metadata:\n%s", out)
	}
	for _, want := range []string{"TACT_MODEL", "Other metadata keys\nare not printed", "context length", "chat template"} {
		if !strings.Contains(out, want) {
			t.Errorf("show help lacks %q:\n%s", want, out)
		}
	}
	_, _, err = runModelsCmd(t, s, "show", "--model", "x")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --model") {
		t.Errorf("show --model: err = %v, want unknown flag", err)
	}

	out, _, _ = runModelsCmd(t, s, "pull", "--help")
	for _, want := range []string{"If-Range", "--stall-timeout duration", "(default 1m0s)", "exit 130", "exit 143", "NAME.gguf.lock", "[REDACTED]"} {
		if !strings.Contains(out, want) {
			t.Errorf("pull help lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runModelsCmd(t, s, "list", "--help")
	if !strings.Contains(out, "not a regular file") {
		t.Errorf("list help does not say how non-regular files are listed:\n%s", out)
	}
}

// TestModelsNonRegular: a FIFO named *.gguf is listed as refused and `show`
// names it (exit 2); neither hangs.
func TestModelsNonRegular(t *testing.T) {
	dir := modelsTestDir(t)
	fifo := filepath.Join(dir, "fifo.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &config.Settings{ModelsDir: dir}
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, errOut, err := runModelsCmd(t, s, "list")
		if err != nil || !regexp.MustCompile(`(?m)^fifo +\? +\? +\? +\? +-$`).MatchString(out) ||
			!strings.Contains(errOut, "tact: warning: model "+fifo+": is a named pipe (FIFO), not a regular file; refused") {
			t.Errorf("list: %v\nstdout: %s\nstderr: %s", err, out, errOut)
		}
		_, _, err = runModelsCmd(t, s, "show", "fifo")
		if exitCodeOf(err) != exitUsage || err.Error() != "model "+fifo+": is a named pipe (FIFO), not a regular file; refused" {
			t.Errorf("show fifo: err = %v (exit %d)", err, exitCodeOf(err))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("BUG: models list/show blocked on a FIFO named *.gguf")
	}
}

// TestUntilCancelled: a models command blocked in a call returns exit 130 as
// soon as its context ends (tactMain reports 143 for SIGTERM).
func TestUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	err := untilCancelled(ctx, "models list", func() error { <-block; return nil })
	if exitCodeOf(err) != 130 || err.Error() != "models list: interrupted" || time.Since(start) > 5*time.Second {
		t.Errorf("err = %v (exit %d) after %s", err, exitCodeOf(err), time.Since(start))
	}
	if err := untilCancelled(context.Background(), "x", func() error { return badInputf("bad") }); exitCodeOf(err) != exitUsage {
		t.Errorf("fn's error not passed through: %v", err)
	}
}

// TestModelsPullFlagsAndErrors: --stall-timeout is validated; a stalled or
// busy pull is exit 1; credentials in the URL never show in the error.
func TestModelsPullFlagsAndErrors(t *testing.T) {
	s := &config.Settings{ModelsDir: t.TempDir()}
	for _, v := range []string{"0", "-1s"} {
		_, _, err := runModelsCmd(t, s, "pull", "--stall-timeout", v, "http://127.0.0.1:1/x.gguf")
		if exitCodeOf(err) != exitUsage || !strings.HasPrefix(err.Error(), "--stall-timeout ") {
			t.Errorf("--stall-timeout %s: err = %v (exit %d), want exit 2 naming the flag", v, err, exitCodeOf(err))
		}
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	url := strings.Replace(srv.URL, "http://", "http://alice:hunter2pass@", 1) + "/x.gguf?token=TOKsecret1&X-Amz-Signature=SIGsecret2"
	_, errOut, err := runModelsCmd(t, s, "pull", "--stall-timeout", "200ms", url)
	if exitCodeOf(err) != exitInternal || !strings.Contains(err.Error(), "no data for 200ms before the server answered") {
		t.Errorf("stalled pull: err = %v (exit %d)", err, exitCodeOf(err))
	}
	for _, secret := range []string{"hunter2pass", "TOKsecret1", "SIGsecret2"} {
		if strings.Contains(err.Error(), secret) || strings.Contains(errOut, secret) {
			t.Errorf("credential %q shown: %v %s", secret, err, errOut)
		}
	}
	if want := "pull http://[REDACTED]@" + strings.TrimPrefix(srv.URL, "http://") + "/x.gguf?token=[REDACTED]&X-Amz-Signature=[REDACTED]: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want it to start with %q", err, want)
	}
}
