package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/models"
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
	var out, errOut bytes.Buffer
	cmd := newModelsCmd(&factory{IO: &iostreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Settings: s})
	cmd.SetOut(&out) // help; tact's root sets its streams
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func exitCodeOf(err error) int { return exitCode(err, 0) }

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
	if exitCodeOf(err) != 130 || err.Error() != "models list: interrupted" || time.Since(start) > 30*time.Second {
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

// testHub stands in for the Hugging Face hub: /api/models/REPO lists files,
// /REPO/resolve/REV/FILE redirects to /cdn/FILE with X-Linked-Etag set to
// declared (when not ""), and /cdn/FILE serves the bytes.
type testHub struct {
	*httptest.Server
	files    map[string][]byte // "REPO/FILE" -> bytes
	declared func(file string) string
}

func newTestHub(t *testing.T, files map[string][]byte, declared func(file string) string) *testHub {
	h := &testHub{files: files, declared: declared}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if repo, ok := strings.CutPrefix(p, "/api/models/"); ok {
			var sib []map[string]string
			for k := range h.files {
				if f, ok := strings.CutPrefix(k, repo+"/"); ok {
					sib = append(sib, map[string]string{"rfilename": f})
				}
			}
			sort.Slice(sib, func(i, j int) bool { return sib[i]["rfilename"] < sib[j]["rfilename"] })
			if sib == nil {
				http.NotFound(w, r)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"id": repo, "siblings": sib})
			return
		}
		if m := regexp.MustCompile(`^/([^/]+/[^/]+)/resolve/[^/]+/(.+)$`).FindStringSubmatch(p); m != nil {
			if _, ok := h.files[m[1]+"/"+m[2]]; !ok {
				http.NotFound(w, r)
				return
			}
			if h.declared != nil {
				if d := h.declared(m[2]); d != "" {
					w.Header().Set("X-Linked-Etag", `"`+d+`"`)
				}
			}
			http.Redirect(w, r, "/cdn/"+m[1]+"/"+m[2], http.StatusFound)
			return
		}
		if key, ok := strings.CutPrefix(p, "/cdn/"); ok {
			if b, ok := h.files[key]; ok {
				http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(b))
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(h.Close)
	return h
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func tinyModelBytes(t *testing.T) []byte {
	p := filepath.Join(t.TempDir(), "m.gguf")
	writeModelsTestGGUF(t, p, ggml.KV{"general.architecture": "llama"})
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestModelsCatalog(t *testing.T) {
	dir := t.TempDir()
	writeModelsTestGGUF(t, filepath.Join(dir, "llama3.2-1b.gguf"), ggml.KV{"general.architecture": "llama"})
	s := &config.Settings{ModelsDir: dir, HFEndpoint: "http://mirror.test/hf/"}

	out, errOut, err := runModelsCmd(t, s, "catalog")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(models.Catalog())+1 || !regexp.MustCompile(`^NAME +SIZE +LICENSE +CTX +PULLED +NOTE$`).MatchString(lines[0]) {
		t.Fatalf("catalog table:\n%s", out)
	}
	for _, want := range []string{
		`(?m)^qwen2\.5-1\.5b \* +1\.1GB +Apache-2\.0 +32768 +no +recommended on a CPU`,
		`(?m)^llama3\.2-1b +808MB +Llama 3\.2 Community License +131072 +yes +weak tool user: BFCL V2 25\.7`,
		`(?m)^qwen2\.5-3b +~2\.1GB +Qwen Research`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("catalog lacks %s:\n%s", want, out)
		}
	}
	if errOut != "* recommended on a CPU; get it with: tact models pull qwen2.5-1.5b (1.1GB download)\n" {
		t.Errorf("stderr = %q", errOut)
	}

	out, _, err = runModelsCmd(t, s, "catalog", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != len(models.Catalog()) {
		t.Fatalf("%d rows", len(rows))
	}
	byName := map[string]map[string]any{}
	for _, r := range rows {
		byName[r["name"].(string)] = r
	}
	d := byName["qwen2.5-1.5b"]
	if d["default"] != true || d["pulled"] != false || d["size"] != 1117320736.0 || d["context_length"] != 32768.0 ||
		d["sha256"] != "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e" || d["license"] != "Apache-2.0" ||
		d["url"] != "http://mirror.test/hf/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/91cad51170dc346986eccefdc2dd33a9da36ead9/qwen2.5-1.5b-instruct-q4_k_m.gguf" {
		t.Errorf("default row = %v", d)
	}
	if l := byName["llama3.2-1b"]; l["pulled"] != true || l["path"] != filepath.Join(dir, "llama3.2-1b.gguf") {
		t.Errorf("pulled row = %v", l)
	}
	if q := byName["qwen2.5-3b"]; q["size_approximate"] != true || q["sha256"] != nil {
		t.Errorf("approximate row = %v", q)
	}
	// The 2026 models: pinned commit and digest from the hub's LFS pointers.
	if q := byName["qwen3.5-4b"]; q["size"] != 2740937888.0 || q["sha256"] != "00fe7986ff5f6b463e62455821146049db6f9313603938a70800d1fb69ef11a4" ||
		q["url"] != "http://mirror.test/hf/unsloth/Qwen3.5-4B-GGUF/resolve/e87f176479d0855a907a41277aca2f8ee7a09523/Qwen3.5-4B-Q4_K_M.gguf" {
		t.Errorf("qwen3.5-4b row = %v", q)
	}

	s.HFEndpoint = "ftp://mirror"
	if _, _, err := runModelsCmd(t, s, "catalog"); exitCodeOf(err) != exitUsage || !strings.Contains(err.Error(), "HF_ENDPOINT=ftp://mirror: want an http(s) URL") {
		t.Errorf("bad HF_ENDPOINT: %v", err)
	}
}

func TestModelsPullHubForms(t *testing.T) {
	content := tinyModelBytes(t)
	good := sha256Hex(content)
	files := map[string][]byte{
		"Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf": content,
		"Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q8_0.gguf":   content,
		"o/r/Tiny-Q4_K_M.gguf":              content,
		"o/r/Tiny-Q4_K_S.gguf":              content,
		"o/r/Tiny-f16.gguf":                 content,
		"o/r/Tiny-Q8_0-00001-of-00002.gguf": content,
		"o/r/Tiny-Q8_0-00002-of-00002.gguf": content,
		"o/plain/plain.gguf":                content,
	}
	declared := map[string]string{}
	hub := newTestHub(t, files, func(f string) string { return declared[f] })

	for _, tc := range []struct {
		arg, declare, name, warn string
		code                     int
		err                      string
	}{
		{"qwen2.5-0.5b", good, "qwen2.5-0.5b", "", 0, ""},
		{"Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0", good, "qwen2.5-0.5b-instruct-q8_0", "", 0, ""},
		{"hf.co/o/r/Tiny-f16.gguf", good, "Tiny-f16", "", 0, ""},
		{"hf://o/r/Tiny-Q4_K_S.gguf", "", "Tiny-Q4_K_S", "tact: warning: Tiny-Q4_K_S.gguf is unverified: no --sha256, no pinned checksum and the server declared none (X-Linked-Etag); its sha256 is " + good + "\n", 0, ""},
		{"hf.co/o/r", strings.Repeat("0", 64), "", "", exitUsage, "the server declared " + strings.Repeat("0", 64) + " (X-Linked-Etag); the download was removed"},
		{"o/r:Q4", "", "", "", exitUsage, "pull o/r:Q4: no GGUF file of quantization Q4 (files: "},
		{"o/r:Q4_K", "", "", "", exitUsage, "pull o/r:Q4_K: no GGUF file of quantization Q4_K (files: "}, // whole words only
		{"o/r:q8_0", "", "", "", exitUsage, "pull o/r:q8_0: 2 files match (Tiny-Q8_0-00001-of-00002.gguf, Tiny-Q8_0-00002-of-00002.gguf); name one with hf.co/o/r/FILE"},
		{"nobody/none:Q4_K_M", "", "", "", exitUsage, "pull nobody/none: no such repository on " + hub.URL + " (404 Not Found)"},
		{"qwen9", "", "", "", exitUsage, `pull "qwen9": not a catalog name (known: qwen3.5-2b, `},
	} {
		dir := t.TempDir()
		s := &config.Settings{ModelsDir: dir, HFEndpoint: hub.URL + "/"} // a trailing slash is tolerated
		clear(declared)
		for f := range files {
			declared[filepath.Base(f)] = tc.declare
		}
		out, errOut, err := runModelsCmd(t, s, "pull", tc.arg)
		if tc.err != "" {
			if exitCodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v (exit %d), want exit %d with %q", tc.arg, err, exitCodeOf(err), tc.code, tc.err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s: files left behind: %v", tc.arg, entries)
			}
			continue
		}
		want := filepath.Join(dir, tc.name+".gguf")
		if err != nil || out != want+"\n" || errOut != tc.warn {
			t.Errorf("%s: err = %v, stdout = %q, stderr = %q; want %s", tc.arg, err, out, errOut, want)
		}
	}

	// A pinned catalog checksum that does not match deletes the download
	// (qwen2.5-1.5b pins the real file's digest; the hub serves a tiny model).
	files["Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf"] = content
	clear(declared)
	dir := t.TempDir()
	s := &config.Settings{ModelsDir: dir, HFEndpoint: hub.URL}
	_, _, err := runModelsCmd(t, s, "pull", "qwen2.5-1.5b")
	if exitCodeOf(err) != exitUsage || !strings.Contains(err.Error(), "sha256 mismatch: got "+good+", want 6a1a2eb6") {
		t.Errorf("pinned mismatch: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
	// --sha256 overrides the pin.
	out, _, err := runModelsCmd(t, s, "pull", "qwen2.5-1.5b", "--sha256", good)
	if err != nil || out != filepath.Join(dir, "qwen2.5-1.5b.gguf")+"\n" {
		t.Errorf("--sha256 over the pin: %v, %q", err, out)
	}
}

// runTact runs the whole CLI in-process with the environment the test set.
func runTact(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := newFactory(&iostreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	root, err := newRootCmd(f)
	if err != nil {
		t.Fatal(err)
	}
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = root.ExecuteContext(ctx)
	if cerr := f.Close(); cerr != nil {
		t.Errorf("closing: %v", cerr)
	}
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintf(&errOut, "tact: %v\n", err)
	}
	return out.String(), errOut.String(), exitCodeOf(err)
}

// `--pull` fetches the catalog model first (saying so on stderr), then runs;
// without --pull nothing is downloaded and the message names the command.
func TestRunPull(t *testing.T) {
	content := tinyModelBytes(t)
	hub := newTestHub(t, map[string][]byte{
		"Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf": content,
		"Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf": content,
	}, func(string) string { return sha256Hex(content) })
	home := t.TempDir()
	dir := filepath.Join(home, "models")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("TACT_MODELS_DIR", dir)
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("TACT_NO_INPUT", "1")
	for _, v := range []string{"TACT_MODEL", "TACT_BACKEND", "TACT_PULL", "TACT_SCRIPT"} {
		t.Setenv(v, "")
	}
	plan := filepath.Join(home, "plan.jsonl")
	os.WriteFile(plan, []byte(`{"tool":"final_answer","args":{"answer":"done"}}`+"\n"), 0o644)
	ws := t.TempDir()

	// Not pulled, no --pull: exit 2 naming the command and the size.
	_, errOut, code := runTact(t, "", "exec", "--workspace", ws, "--model", "qwen2.5-0.5b", plan)
	if code != exitUsage || errOut != "tact: --model qwen2.5-0.5b: not pulled yet: run \"tact models pull qwen2.5-0.5b\" (~491MB download) or add --pull\n" {
		t.Errorf("not pulled: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a run without --pull touched the models directory: %v", err)
	}

	// --pull: fetched (progress line on stderr), then the plan runs.
	out, errOut, code := runTact(t, "", "exec", "--workspace", ws, "--pull", "--model", "Qwen2.5-0.5B", "--backend", "none", plan)
	wantLine := "tact: pulling qwen2.5-0.5b (~491MB) from " + hub.URL + "/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf\n"
	if code != 0 || out != "done\n" || errOut != wantLine {
		t.Errorf("--pull: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "qwen2.5-0.5b.gguf")); !bytes.Equal(b, content) {
		t.Error("the pulled model is not installed as qwen2.5-0.5b.gguf")
	}
	// Pulled already: --pull downloads nothing and says nothing.
	out, errOut, code = runTact(t, "", "exec", "--workspace", ws, "--pull", "--model", "qwen2.5-0.5b", "--backend", "none", plan)
	if code != 0 || out != "done\n" || errOut != "" {
		t.Errorf("second --pull: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// No model at all: --pull fetches the recommended default, whose pinned
	// checksum the tiny file fails: exit 2, nothing left behind.
	os.RemoveAll(dir)
	_, errOut, code = runTact(t, "", "plan", "--workspace", ws, "--pull", "list the files")
	if code != exitUsage || !strings.HasPrefix(errOut, "tact: pulling qwen2.5-1.5b (1.1GB) from "+hub.URL+"/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/91cad51170dc346986eccefdc2dd33a9da36ead9/") ||
		!strings.Contains(errOut, "sha256 mismatch: got "+sha256Hex(content)+", want 6a1a2eb6") {
		t.Errorf("default --pull: exit %d, stderr %q", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}
