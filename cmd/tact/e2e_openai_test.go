package main

// End-to-end test of the openai backend against a real OpenAI-compatible
// server: ollama (the Go module tact already depends on, built by `make
// ollama` into a cache directory) serving a generated tiny model on a free
// loopback port. tact run (plan and ReAct loop) and tact batch --parallel 2
// talk to it through /v1/chat/completions with response_format json_schema,
// so every reply must be valid.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/synth"
)

// ollamaVersion is the ollama the Makefile builds (OLLAMA_VERSION): the
// version go.mod already requires.
const ollamaVersion = "v0.17.4"

// ollamaCtx is the context ollama gives each sequence; tact's --ctx-size
// matches it (ollama would silently cut a longer prompt).
const ollamaCtx = 16384

// ollamaBinary is the ollama `make ollama` builds: TACT_TEST_OLLAMA (make
// test and make gotest set it), else the Makefile's default path, built
// here when missing. It skips only when ollama cannot be built (-short, or
// no module download outside CI); in CI it fails instead.
func ollamaBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test against a real ollama server; skipped with -short")
	}
	bin := os.Getenv("TACT_TEST_OLLAMA")
	if bin == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(cache, "tact", "ollama-"+ollamaVersion, "ollama")
	}
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("make", "-C", root, "ollama", "OLLAMA_DIR="+filepath.Dir(bin)).CombinedOutput()
	if err == nil {
		if _, err = os.Stat(bin); err == nil {
			return bin
		}
	}
	msg := fmt.Sprintf("cannot build ollama %s into %s (make ollama): %v\n%s", ollamaVersion, bin, err, out)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// ollamaServer is a running `ollama serve` with one model.
type ollamaServer struct {
	baseURL string // http://127.0.0.1:PORT/v1
	model   string
}

// startOllama serves a generated tiny model as "tiny" on a free loopback
// port, until the test ends. parallel is OLLAMA_NUM_PARALLEL.
func startOllama(t *testing.T, bin string, parallel int) *ollamaServer {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir, // ollama keeps its key pair in ~/.ollama
		"OLLAMA_HOST=" + host,
		"OLLAMA_MODELS=" + filepath.Join(dir, "models"),
		fmt.Sprintf("OLLAMA_CONTEXT_LENGTH=%d", ollamaCtx),
		fmt.Sprintf("OLLAMA_NUM_PARALLEL=%d", parallel),
		"OLLAMA_KEEP_ALIVE=-1",
	}
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	serve := exec.Command(bin, "serve")
	serve.Env, serve.Stdout, serve.Stderr = env, logFile, logFile
	// Its own process group: the model runners it starts end with it.
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = serve.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-serve.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = syscall.Kill(-serve.Process.Pid, syscall.SIGKILL) // runners left behind, if any
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("ollama serve log:\n%s", tail(string(log), 4000))
		}
	})
	exited := false
	up := waitFor(2*time.Minute, func() bool {
		select {
		case <-done:
			exited = true
			return true
		default:
		}
		resp, err := http.Get("http://" + host + "/api/version")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if exited {
		log, _ := os.ReadFile(logPath)
		t.Fatalf("ollama serve exited at start:\n%s", tail(string(log), 4000))
	}
	if !up {
		t.Fatalf("ollama serve did not answer on %s within 2 minutes", host)
	}
	modelfile := filepath.Join(dir, "Modelfile")
	if err := os.WriteFile(modelfile, []byte("FROM "+synth.Cached(t, synth.Tiny)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	create := exec.CommandContext(ctx, bin, "create", "tiny", "-f", modelfile)
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("ollama create: %v\n%s", err, out)
	}
	return &ollamaServer{baseURL: "http://" + host + "/v1", model: "tiny"}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// terminationCodes are the exit codes of a run that ended for a reason
// tact documents: not 1 (an internal error) or 2 (bad input).
var terminationCodes = map[int]bool{0: true, 3: true, 4: true, 5: true, 6: true, 8: true}

// traceEvents reads a JSONL trace.
func traceEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("trace line is not JSON: %v\n%s", err, sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

// assertRepliesValid: the server constrained every reply with its schema,
// so no plan or action was invalid and every model call was made to it.
func assertRepliesValid(t *testing.T, evs []map[string]any) {
	t.Helper()
	calls := 0
	for _, ev := range evs {
		switch ev["event"] {
		case "plan_invalid", "invalid_action":
			t.Errorf("invalid reply from the server: %v", ev)
		case "model_call":
			calls++
		case "run_start":
			if ev["backend"] != "openai" {
				t.Errorf("run_start backend = %v, want openai", ev["backend"])
			}
		}
	}
	if calls == 0 {
		t.Error("no model_call in the trace")
	}
}

func TestE2EOpenAIBackendOllama(t *testing.T) {
	bin := ollamaBinary(t)
	srv := startOllama(t, bin, 2)
	const secret = "planted-api-key-5f3a9c"
	common := func(c *e2eCase) []string {
		return []string{"--base-url", srv.baseURL, "--api-model", srv.model, "--api-key-env", "MY_LLM",
			"--workspace", c.ws, "--ctx-size", fmt.Sprint(ollamaCtx), "--seed", "1",
			// What the schema guarantees (a thought that is JSON, not one
			// judged substantive): the test is about the server's replies.
			"--require-thought=false"}
	}

	t.Run("run", func(t *testing.T) {
		c := newE2E(t)
		// A variable whose name does not look secret: the key must still
		// be redacted everywhere.
		c.env = append(c.env, "MY_LLM="+secret)
		c.file("ws/notes.txt", "tact talks to ollama\n")
		args := append([]string{"run", "--json", "--trace", c.trace}, common(c)...)
		p := c.run(append(args, "list the files in the workspace and say how many there are")...)
		code := p.wait(3 * time.Minute)
		if !terminationCodes[code] {
			t.Fatalf("exit %d, want a termination reason's code\nstdout: %s\nstderr: %s", code, p.stdout.String(), p.stderr.String())
		}
		res := p.result()
		if res.TerminationReason == "" || res.TerminationReason == "error" {
			t.Errorf("termination_reason %q, want a proper one\nstdout: %s", res.TerminationReason, p.stdout.String())
		}
		evs := c.events()
		assertRepliesValid(t, evs)
		if plan := findEvent(evs, "plan"); plan == nil || plan["source"] != "planner" {
			t.Errorf("plan event = %v, want a plan made by the model", plan)
		}
		if len(res.Trace.Steps) == 0 {
			t.Errorf("no ReAct steps ran\nstdout: %s", p.stdout.String())
		}
		c.assertTerminated(res.TerminationReason)
		trace, _ := os.ReadFile(c.trace)
		for what, out := range map[string][]byte{"stdout": p.stdout.Bytes(), "stderr": p.stderr.Bytes(), "trace": trace} {
			if bytes.Contains(out, []byte(secret)) {
				t.Errorf("the API key shows in %s", what)
			}
		}
	})

	t.Run("batch --parallel 2", func(t *testing.T) {
		c := newE2E(t)
		c.file("ws/a.txt", "alpha\n")
		queries := c.file("queries.txt", "list the files\nread a.txt and quote it\n{\"id\": \"q3\", \"query\": \"how many files are there?\"}\n")
		args := append([]string{"batch", "--parallel", "2", "--no-plan", "--max-iterations", "3", "--trace", c.trace}, common(c)...)
		p := c.run(append(args, queries)...)
		code := p.wait(3 * time.Minute)
		if code != 0 && code != exitBatchFailed {
			t.Fatalf("exit %d, want 0 or %d\nstdout: %s\nstderr: %s", code, exitBatchFailed, p.stdout.String(), p.stderr.String())
		}
		ids := map[string]bool{}
		for line := range strings.Lines(p.stdout.String()) {
			var r struct {
				ID                any    `json:"id"`
				ExitCode          int    `json:"exit_code"`
				TerminationReason string `json:"termination_reason"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("stdout line is not JSON: %v\n%s", err, line)
			}
			ids[fmt.Sprint(r.ID)] = true
			if !terminationCodes[r.ExitCode] || r.TerminationReason == "error" {
				t.Errorf("query %v: exit %d (%s), want a termination reason's code\nstderr: %s", r.ID, r.ExitCode, r.TerminationReason, p.stderr.String())
			}
		}
		if len(ids) != 3 || !ids["1"] || !ids["2"] || !ids["q3"] {
			t.Errorf("results for %v, want queries 1, 2 and q3\nstdout: %s", ids, p.stdout.String())
		}
		evs := traceEvents(t, c.trace)
		assertRepliesValid(t, evs)
		if !runsOverlapped(evs) {
			t.Error("no two runs overlapped: --parallel 2 ran them one at a time")
		}
	})
}

// runsOverlapped reports whether some run started before another ended.
func runsOverlapped(evs []map[string]any) bool {
	live := 0
	for _, ev := range evs {
		switch ev["event"] {
		case "run_start":
			live++
			if live > 1 {
				return true
			}
		case "termination":
			live--
		}
	}
	return false
}
