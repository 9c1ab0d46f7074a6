package main

// End-to-end tests of `tact models` on the built binary: FIFOs and other
// non-regular files named *.gguf never hang a command, and a pull stops on
// SIGINT/SIGTERM with 130/143, keeps its partial file, refuses a second
// concurrent pull of the same name and never prints credentials.

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"
)

// e2eModelsDir is a models directory under c's scratch root holding only a
// FIFO named fifo.gguf.
func e2eModelsDir(t *testing.T, c *e2eCase) string {
	t.Helper()
	dir := filepath.Join(c.dir, "models")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.gguf"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestE2EModelsFIFONeverHangs: before the fix each of these blocked forever
// opening the FIFO (and ignored SIGTERM); now each refuses it at once, naming it.
func TestE2EModelsFIFONeverHangs(t *testing.T) {
	c := newE2E(t)
	dir := e2eModelsDir(t, c)
	fifo := filepath.Join(dir, "fifo.gguf")
	refusal := "model " + fifo + ": is a named pipe (FIFO), not a regular file; refused"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"list", []string{"models", "list", "--models-dir", dir}, 0, "fifo", "tact: warning: " + refusal},
		{"list --json", []string{"models", "list", "--json", "--models-dir", dir}, 0, `"error":"` + refusal, ""},
		{"show by name", []string{"models", "show", "fifo", "--models-dir", dir}, 2, "", "tact: " + refusal},
		{"show by path", []string{"models", "show", fifo}, 2, "", "tact: " + refusal},
		{"show default", []string{"models", "show", "--models-dir", dir}, 2, "", "tact: " + refusal},
		{"run --model", []string{"run", "--workspace", c.ws, "--model", fifo, "hello"}, 2, "", "tact: " + refusal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := c.run(tc.args...)
			code := p.wait(10 * time.Second)
			if code != tc.code || !strings.Contains(p.stdout.String(), tc.stdout) || !strings.Contains(p.stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s\nwant stdout with %q and stderr with %q",
					code, tc.code, p.stdout.String(), p.stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
	t.Run("run with TACT_MODELS_DIR", func(t *testing.T) {
		c.env = append(c.env, "TACT_MODELS_DIR="+dir)
		defer func() { c.env = c.env[:len(c.env)-1] }()
		p := c.run("run", "--workspace", c.ws, "hello")
		code := p.wait(10 * time.Second)
		if code != 2 || !strings.Contains(p.stderr.String(), refusal) {
			t.Errorf("exit %d, want 2 naming the FIFO\nstderr: %s", code, p.stderr.String())
		}
	})
}

// stallingModelServer answers every GET with part of a model, then sends
// nothing more until the test ends; arrived is closed once a body started.
func stallingModelServer(t *testing.T) (srv *httptest.Server, arrived chan struct{}) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.gguf")
	writeModelsTestGGUF(t, src, ggml.KV{"general.architecture": "llama"})
	content, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	arrived = make(chan struct{})
	var once sync.Once
	release := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e2e"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(content)))
		w.WriteHeader(http.StatusOK)
		w.Write(content[:100])
		w.(http.Flusher).Flush()
		once.Do(func() { close(arrived) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, arrived
}

// waitPartial waits until the partial download holds bytes.
func waitPartial(t *testing.T, p *proc, partial string) {
	t.Helper()
	if !waitFor(time.Minute, func() bool { st, err := os.Stat(partial); return err == nil && st.Size() > 0 }) {
		t.Fatalf("no partial download after a minute\nstderr: %s", p.stderr.String())
	}
}

func TestE2EModelsPullSignals(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			c := newE2E(t)
			srv, _ := stallingModelServer(t)
			dir := filepath.Join(c.dir, "models")
			partial := filepath.Join(dir, "tiny.gguf.partial")
			p := c.run("models", "pull", "--models-dir", dir, srv.URL+"/tiny.gguf")
			waitPartial(t, p, partial)
			sent := time.Now()
			p.signal(tc.sig)
			code := p.wait(5 * time.Second)
			// Generous for a busy machine; the server stalls forever.
			if el := p.exited.Sub(sent); el > 10*time.Second {
				t.Errorf("tact exited %s after %v, want within 10s", el.Round(time.Millisecond), tc.sig)
			}
			if code != tc.want || !strings.Contains(p.stderr.String(), "interrupted") || !strings.Contains(p.stderr.String(), partial+" is kept") {
				t.Errorf("exit %d after %v, want %d saying the partial is kept\nstderr: %s", code, tc.sig, tc.want, p.stderr.String())
			}
			if b, err := os.ReadFile(partial); err != nil || len(b) != 100 {
				t.Errorf("partial: %d bytes, %v; want the 100 received kept", len(b), err)
			}
			if _, err := os.Stat(filepath.Join(dir, "tiny.gguf.lock")); !os.IsNotExist(err) {
				t.Errorf("lock file left after the signal: %v", err)
			}
		})
	}
}

// TestE2EModelsPullLockAndStall: a second pull of the same name fails at once
// (exit 1) while the first runs; the first gives up after --stall-timeout
// (exit 1), keeping the partial; credentials in the URL never show.
func TestE2EModelsPullLockAndStall(t *testing.T) {
	c := newE2E(t)
	srv, _ := stallingModelServer(t)
	dir := filepath.Join(c.dir, "models")
	partial := filepath.Join(dir, "tiny.gguf.partial")
	url := strings.Replace(srv.URL, "http://", "http://alice:hunter2pass@", 1) + "/tiny.gguf?access_token=TOKsecret1"
	first := c.run("models", "pull", "--models-dir", dir, "--stall-timeout", "2s", url)
	waitPartial(t, first, partial)

	second := c.run("models", "pull", "--models-dir", dir, url)
	code := second.wait(5 * time.Second)
	lock := filepath.Join(dir, "tiny.gguf.lock")
	if code != 1 || !strings.Contains(second.stderr.String(), "another tact models pull of tiny is running (it holds "+lock+")") {
		t.Errorf("second pull: exit %d, want 1 saying another pull runs\nstderr: %s", code, second.stderr.String())
	}

	code = first.wait(10 * time.Second)
	if code != 1 || !strings.Contains(first.stderr.String(), "no data for 2s") || !strings.Contains(first.stderr.String(), partial+" is kept") {
		t.Errorf("first pull: exit %d, want 1 with a stall message\nstderr: %s", code, first.stderr.String())
	}
	meta, _ := os.ReadFile(partial + ".meta")
	for _, out := range [][]byte{first.stdout.Bytes(), first.stderr.Bytes(), second.stdout.Bytes(), second.stderr.Bytes(), meta} {
		for _, secret := range []string{"hunter2pass", "TOKsecret1", "alice"} {
			if bytes.Contains(out, []byte(secret)) {
				t.Errorf("credential %q shown: %s", secret, out)
			}
		}
	}
	if !bytes.Contains(meta, []byte(`"etag":"\"e2e\""`)) {
		t.Errorf("resume record = %s, want the server's ETag", meta)
	}
}
