package main

// End to end: the built bin/tact serve on the generated tiny model, on a
// free loopback port: a 3-step conversation, 16 concurrent requests,
// /healthz, /metrics, and SIGTERM ending it with exit 0.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/server/stepapi"
)

const (
	e2eSearchTool = `{"name":"code_search","description":"Search the code for a phrase.","parameters":{"type":"object","properties":{"query":{"type":"string","minLength":1}},"required":["query"],"additionalProperties":false}}`
	e2eReadTool   = `{"name":"read_file","description":"Read a file of the project.","parameters":{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}}`
)

// syncBuf collects a child's stderr while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestE2EServe(t *testing.T) {
	bin := e2eTact(t)
	model := synth.Cached(t, synth.Tiny)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "auth.js"), []byte("function login(user, password) { return check(user, password) }\n"), 0o644)
	args := []string{"serve", "--model", model, "--workspace", ws, "--addr", "127.0.0.1:0",
		"--parallel", "4", "--ctx-size", "8192", "--max-tokens", "256", "--seed", "1", "--shutdown-grace", "5s",
		// The steps offer the client's tools only: a random model's
		// ask_user (with a random answer schema) is not what this tests.
		"--no-ask"}
	srv := startServe(t, bin, dir, args)
	cmd, logs, exited, base := srv.cmd, srv.logs, srv.exited, srv.base
	// At start it readies the planner's and the executor's system prompts:
	// evaluated and saved to the prompt cache on this first start.
	for _, w := range srv.warmed(t) {
		if w.FromPromptCache != 0 || w.Evaluated < 100 {
			t.Fatalf("first start, %s: %d tokens from the prompt cache, %d evaluated; want all evaluated", w.Prompt, w.FromPromptCache, w.Evaluated)
		}
	}
	kv, _ := filepath.Glob(filepath.Join(dir, ".cache", "tact", "kv", "*.kv"))
	if len(kv) != 2 {
		t.Fatalf("prompt cache files after the warm-up: %v, want the planner's and the executor's", kv)
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	step := func(req map[string]any) (int, stepapi.Response, string) {
		body, _ := json.Marshal(req)
		resp, err := client.Post(base+"/api/agent/react_step", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0, stepapi.Response{}, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var sr stepapi.Response
		_ = json.Unmarshal(b, &sr)
		return resp.StatusCode, sr, string(b)
	}

	// Healthy, with the model loaded and 4 free sequences.
	code, body := get("/healthz")
	var h struct {
		Status      string `json:"status"`
		Backend     string `json:"backend"`
		ModelLoaded bool   `json:"model_loaded"`
		Sequences   struct{ Total, Busy, Free int }
	}
	json.Unmarshal([]byte(body), &h)
	if code != 200 || h.Status != "ok" || h.Backend != "llama" || !h.ModelLoaded || h.Sequences.Total != 4 || h.Sequences.Free != 4 {
		t.Fatalf("healthz %d %s", code, body)
	}

	// A 3-step conversation: the client runs each proposed tool and posts
	// the observation back; with no steps left the answer is direct.
	tools := []json.RawMessage{json.RawMessage(e2eSearchTool), json.RawMessage(e2eReadTool)}
	validators := map[string]*schema.Validator{}
	for _, tl := range tools {
		var d struct {
			Name       string
			Parameters json.RawMessage
		}
		json.Unmarshal(tl, &d)
		validators[d.Name] = schema.MustCompile(d.Parameters)
	}
	req := map[string]any{"user_query": "How is login implemented?", "tools": tools, "max_iterations_left": 2,
		"explicit_context_paths": []string{"auth.js"}}
	for n, left := range []int{2, 1, 0} {
		req["max_iterations_left"] = left
		code, sr, raw := step(req)
		if code != 200 || sr.IterationsRemaining != max(left-1, 0) {
			t.Fatalf("step %d: %d %s", n+1, code, raw)
		}
		switch {
		case left == 0 && sr.Status != stepapi.StatusDirectResponse:
			t.Fatalf("step %d with no steps left: %s", n+1, raw)
		case sr.Status == stepapi.StatusActionProposed:
			if _, err := validators[sr.ActionDetails.ToolName].ValidateJSON(sr.ActionDetails.ToolArgs); err != nil {
				t.Fatalf("step %d: tool_args do not validate: %v\n%s", n+1, err, raw)
			}
			req["conversation_history"] = append(sr.History, stepapi.Turn{Role: "tool_observation", Content: "auth.js: login calls check(user, password)",
				ToolResult: &stepapi.ToolResult{Success: true, Result: json.RawMessage(`"1 match"`)}})
			req["user_query"] = ""
		case sr.Status == stepapi.StatusDirectResponse:
			// An early answer: the client asks a follow-up.
			req["conversation_history"] = sr.History
			req["user_query"] = "And where is the password checked?"
		default:
			t.Fatalf("step %d: %s", n+1, raw)
		}
		req["session_id"] = sr.SessionID
	}

	// 16 concurrent requests: every one answered; at most 4 decode at once,
	// the rest wait in the queue.
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, sr, raw := step(map[string]any{"user_query": fmt.Sprintf("Where is login defined? (%d)", i), "tools": tools, "max_iterations_left": 3})
			mu.Lock()
			defer mu.Unlock()
			if code != 200 || sr.Status == stepapi.StatusError {
				t.Errorf("request %d: %d %s", i, code, raw)
			}
			statuses[sr.Status]++
		}()
	}
	wg.Wait()
	t.Logf("16 concurrent steps: %v", statuses)
	// Steps carry the client's tools in their system prompt: kept in
	// memory only, never in the prompt cache on disk.
	if after, _ := filepath.Glob(filepath.Join(dir, ".cache", "tact", "kv", "*.kv")); len(after) != len(kv) {
		t.Fatalf("prompt cache files after the steps: %v, want only the warm-up's %v", after, kv)
	}

	// The metrics count every step, the tokens, and the prompt prefix the
	// requests shared.
	code, body = get("/metrics")
	if code != 200 || !strings.Contains(body, `tact_http_requests_total{endpoint="/api/agent/react_step",status="200"} 19`) ||
		!strings.Contains(body, `tact_http_requests_total{endpoint="/healthz",status="200"} 1`) || !strings.Contains(body, "tact_queue_length 0") {
		t.Fatalf("metrics %d:\n%s", code, body)
	}
	for _, kind := range []string{"evaluated", "reused", "generated"} {
		m := regexp.MustCompile(`tact_tokens_total\{kind="` + kind + `"\} (\d+)`).FindStringSubmatch(body)
		if m == nil || m[1] == "0" {
			t.Errorf("tokens %s: %v", kind, m)
		}
	}

	// SIGTERM: stops accepting, drains, exits 0.
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("tact serve did not exit within 10 s of SIGTERM\n%s", logs.String())
	}
	if time.Since(start) > 6*time.Second {
		t.Fatalf("shutdown took %s", time.Since(start))
	}
	if n := strings.Count(logs.String(), `"msg":"request"`); n != 21 {
		t.Fatalf("%d request lines, want 21:\n%s", n, logs.String())
	}

	// A restart loads both prompts from the prompt cache instead.
	again := startServe(t, bin, dir, args)
	for _, w := range again.warmed(t) {
		if w.FromPromptCache < 100 || w.Evaluated > 64 { // the placeholder user turn: byte tokens
			t.Errorf("restart, %s: %d tokens from the prompt cache, %d evaluated; want the prompt loaded", w.Prompt, w.FromPromptCache, w.Evaluated)
		}
	}
	again.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-again.exited; err != nil {
		t.Fatalf("restart: exit after SIGTERM: %v\n%s", err, again.logs.String())
	}
}

// serveProc is a running bin/tact serve.
type serveProc struct {
	cmd    *exec.Cmd
	logs   *syncBuf
	exited chan error
	base   string // http://ADDR
}

// startServe starts bin with args, HOME and the XDG directories in dir,
// (and env), and waits for its "listening" line; the test's end kills it.
func startServe(t *testing.T, bin, dir string, args []string, env ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), runtimeEnv(), "HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(dir, ".local", "share"), "XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"), "LANG=C.UTF-8"}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, logs: &syncBuf{}, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	select {
	case a := <-addr:
		p.base = "http://" + a
	case err := <-p.exited:
		t.Fatalf("tact serve exited: %v\n%s", err, p.logs.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("tact serve did not start\n%s", p.logs.String())
	}
	return p
}

// warmLine is a "warmed" log line of tact serve.
type warmLine struct {
	Prompt          string `json:"prompt"`
	FromPromptCache int    `json:"from_prompt_cache"`
	Evaluated       int    `json:"evaluated"`
}

// warmed waits for the warm-up's two lines (executor, planner).
func (p *serveProc) warmed(t *testing.T) []warmLine {
	t.Helper()
	var out []warmLine
	failed := false
	waitFor(2*time.Minute, func() bool {
		out = out[:0]
		for _, l := range strings.Split(p.logs.String(), "\n") {
			var w warmLine
			if strings.Contains(l, `"msg":"warmed"`) && json.Unmarshal([]byte(l), &w) == nil {
				out = append(out, w)
			}
		}
		failed = strings.Contains(p.logs.String(), "warm-up failed")
		return len(out) == 2 || failed
	})
	if len(out) != 2 || failed {
		t.Fatalf("no warm-up lines:\n%s", p.logs.String())
	}
	if out[0].Prompt != "executor" || out[1].Prompt != "planner" {
		t.Fatalf("warmed %+v", out)
	}
	return out
}
