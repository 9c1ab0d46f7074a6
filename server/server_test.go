package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
)

// syncBuffer is a log destination safe for concurrent requests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fake is a backend whose replies and pace the test sets; it counts the
// calls running at once and the ones cancelled.
type fake struct {
	mu                sync.Mutex
	active, maxActive int
	calls             int
	delay             time.Duration
	reply             func(n int, req llm.Request) string
	cancelled         atomic.Int32
	started           chan struct{} // when set, gets a value as each call starts
	stubborn          bool          // the delay runs out whatever the context
	last              llm.Request
}

func (f *fake) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.active++
	f.calls++
	n := f.calls
	f.maxActive = max(f.maxActive, f.active)
	f.last = req
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		done := ctx.Done()
		if f.stubborn {
			done = nil
		}
		select {
		case <-done:
			f.cancelled.Add(1)
			return llm.Response{}, ctx.Err()
		case <-t.C:
		}
	}
	text := `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"done"}}`
	if f.reply != nil {
		text = f.reply(n, req)
	}
	return llm.Response{Text: text, Usage: llm.Usage{PromptTokens: 10, CachedTokens: 5, CompletionTokens: 3}}, nil
}

func (f *fake) Close() error { return nil }

func (f *fake) ModelInfo() llm.ModelInfo { return llm.ModelInfo{Backend: "fake", Model: "test"} }

type testEnv struct {
	t    *testing.T
	rt   *agent.Runtime
	srv  *Server
	http *httptest.Server
	logs *syncBuffer
	fake *fake
	dir  string
}

// newEnv opens a runtime on the script backend (script: its JSONL) and a
// server on it; with fk set, the fake backend answers the steps.
func newEnv(t *testing.T, cfg Config, fk *fake, script string, mod func(*config.Settings)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	s := config.Defaults()
	s.Workspace = filepath.Join(dir, "ws")
	s.Policy = filepath.Join(dir, "policy.json")
	s.NoInput = true
	if err := os.MkdirAll(s.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	if script == "" {
		script = `{"kind":"plan","text":"{}"}` + "\n"
	}
	s.Script = filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(s.Script, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(s)
	}
	rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "serve", Secrets: []string{cfg.Token}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if fk != nil {
		rt.Backend = fk
	}
	logs := &syncBuffer{}
	cfg.Log = slog.New(slog.NewJSONHandler(logs, nil))
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	srv, err := New(rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testEnv{t: t, rt: rt, srv: srv, http: hs, logs: logs, fake: fk, dir: dir}
}

type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%d %s: %v", r.code, r.body, err)
	}
}

func (e *testEnv) do(method, path, body string, header ...string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{code: resp.StatusCode, header: resp.Header, body: b}
}

func (e *testEnv) post(path, body string, header ...string) reply {
	e.t.Helper()
	return e.do("POST", path, body, header...)
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Beyond loopback a token is required; with one, requests without it get 401.
func TestAuth(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true}, {"localhost:0", "", true}, {"[::1]:8080", "", true},
		{"0.0.0.0:8080", "", false}, {":8080", "", false}, {"192.168.1.5:80", "", false}, {"0.0.0.0:8080", "tok", true},
		{"nonsense", "", false},
	} {
		if err := CheckAddr(tc.addr, tc.token); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %q) = %v", tc.addr, tc.token, err)
		}
	}
	const token = "s3cret-bearer-token-value"
	e := newEnv(t, Config{Token: token}, &fake{}, "", nil)
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", token}, {"Authorization", "Basic " + token}} {
		r := e.post("/api/agent/react_step", `{"user_query": "q"}`, h...)
		if r.code != 401 || r.header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%v: %d %s", h, r.code, r.body)
		}
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if r := e.do("GET", path, ""); r.code != 401 {
			t.Fatalf("%s without token: %d", path, r.code)
		}
	}
	if r := e.post("/api/agent/react_step", `{"user_query": "q"}`, "Authorization", "Bearer "+token); r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if r := e.do("GET", "/healthz", "", "Authorization", "bearer "+token); r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	// The token is a secret: a run that would print it shows [REDACTED].
	if strings.Contains(e.logs.String(), token) || e.rt.Redactor.Redact("x "+token) != "x [REDACTED]" {
		t.Fatalf("token not secret:\n%s", e.logs.String())
	}
}

// user_api_keys and the Authorization header never show in logs,
// responses or the trace.
func TestKeysNeverLogged(t *testing.T) {
	const token, key = "bearer-token-9876543210", "sk-user-key-0123456789"
	trace := ""
	fk := &fake{reply: func(int, llm.Request) string {
		return `{"thought":"echo the key ` + key + ` back","tool":"final_answer","args":{"answer":"your key is ` + key + `"}}`
	}}
	e := newEnv(t, Config{Token: token}, fk, "", func(s *config.Settings) { trace = s.Workspace + "/../trace.jsonl"; s.Trace = trace })
	auth := []string{"Authorization", "Bearer " + token, "X-Api-Key", key}
	r := e.post("/api/agent/react_step", toJSON(t, map[string]any{"user_query": "my key is " + key, "user_api_keys": map[string]string{"llmKey": key},
		"conversation_history": []map[string]any{{"role": "user", "content": key}}}), auth...)
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	bad := e.post("/api/agent/react_step", toJSON(t, map[string]any{"user_api_keys": map[string]string{"llmKey": key},
		"conversation_history": []map[string]any{{"role": key}}}), auth...)
	if bad.code != 400 {
		t.Fatalf("%d %s", bad.code, bad.body)
	}
	run := e.post("/v1/runs", toJSON(t, map[string]any{"query": "print " + token, "plan": `{"tool":"final_answer","args":{"answer":"` + token + `"}}`}), auth...)
	if run.code != 200 {
		t.Fatalf("%d %s", run.code, run.body)
	}
	traceText, _ := os.ReadFile(trace)
	for what, text := range map[string]string{"step response": string(r.body), "error response": string(bad.body), "run response": string(run.body),
		"logs": e.logs.String(), "trace": string(traceText), "model prompt": toJSON(t, fk.last.Messages)} {
		if strings.Contains(text, key) || strings.Contains(text, token) {
			t.Errorf("%s shows a secret:\n%s", what, text)
		}
	}
	if !strings.Contains(string(r.body), "[REDACTED]") || !strings.Contains(string(run.body), "[REDACTED]") || len(traceText) == 0 {
		t.Fatalf("%s\n%s\n%s", r.body, run.body, traceText)
	}
}

// One structured line per request: method, path, status, duration, tokens.
func TestRequestLog(t *testing.T) {
	e := newEnv(t, Config{}, &fake{}, "", nil)
	e.post("/api/agent/react_step", `{"user_query": "q", "session_id": "abc"}`)
	e.post("/api/agent/react_step", `{"bad": 1}`)
	e.do("GET", "/healthz", "")
	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("log:\n%s", e.logs.String())
	}
	var first, second map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if first["msg"] != "request" || first["method"] != "POST" || first["path"] != "/api/agent/react_step" || first["status"] != 200.0 ||
		first["prompt_tokens"] != 10.0 || first["cached_tokens"] != 5.0 || first["generated_tokens"] != 3.0 || first["session_id"] != "abc" {
		t.Fatalf("%s", lines[0])
	}
	if _, ok := first["duration_ms"]; !ok {
		t.Fatalf("%s", lines[0])
	}
	if second["status"] != 400.0 || !strings.Contains(fmt.Sprint(second["error"]), "bad: unknown field") {
		t.Fatalf("%s", lines[1])
	}
}

// Up to Parallel requests reach the model at once; Queue more wait; the
// rest get 429 with Retry-After.
func TestQueue(t *testing.T) {
	fk := &fake{delay: 300 * time.Millisecond}
	e := newEnv(t, Config{Parallel: 2, Queue: 2}, fk, "", nil)
	var wg sync.WaitGroup
	codes := make(chan reply, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- e.post("/api/agent/react_step", `{"user_query": "q"}`)
		}()
	}
	wg.Wait()
	close(codes)
	n := map[int]int{}
	for r := range codes {
		n[r.code]++
		if r.code == 429 {
			if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
				t.Fatalf("429 without Retry-After: %v", r.header)
			}
		}
	}
	if n[200] != 4 || n[429] != 4 || fk.maxActive != 2 {
		t.Fatalf("codes %v, at most %d at once", n, fk.maxActive)
	}
	// With no queue at all, a busy server refuses at once.
	fk2 := &fake{delay: 300 * time.Millisecond, started: make(chan struct{}, 1)}
	e2 := newEnv(t, Config{Parallel: 1, Queue: 0}, fk2, "", nil)
	done := make(chan reply)
	go func() { done <- e2.post("/api/agent/react_step", `{"user_query": "q"}`) }()
	<-fk2.started
	if r := e2.post("/api/agent/react_step", `{"user_query": "q"}`); r.code != 429 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if r := <-done; r.code != 200 {
		t.Fatalf("%d", r.code)
	}
}

// Queued requests get a sequence in the order they arrived.
func TestQueueOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	fk := &fake{delay: 100 * time.Millisecond, started: make(chan struct{}, 8)}
	fk.reply = func(_ int, req llm.Request) string {
		mu.Lock()
		defer mu.Unlock()
		for _, q := range []string{"first", "second", "third", "fourth", "fifth"} {
			for _, m := range req.Messages {
				if m.Role == llm.RoleUser && strings.Contains(m.Content, "query "+q) {
					order = append(order, q)
				}
			}
		}
		return `{"thought":"t","tool":"final_answer","args":{"answer":"done"}}`
	}
	e := newEnv(t, Config{Parallel: 1, Queue: 8}, fk, "", nil)
	var wg sync.WaitGroup
	for i, q := range []string{"first", "second", "third", "fourth", "fifth"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.post("/api/agent/react_step", `{"user_query": "query `+q+`"}`); r.code != 200 {
				t.Errorf("%s: %d %s", q, r.code, r.body)
			}
		}()
		if i == 0 {
			<-fk.started
			continue
		}
		waitUntil(t, q+" to queue", func() bool { return e.srv.adm.queued() == i })
	}
	wg.Wait()
	if got := strings.Join(order, ","); got != "first,second,third,fourth,fifth" {
		t.Fatalf("served in the order %s", got)
	}
}

// Past --request-timeout: 504, whether waiting in the queue or in the
// model call; a client that goes away cancels its model call.
func TestTimeoutsAndCancel(t *testing.T) {
	// The call would take a minute: ending within the bound below is the
	// timeout's doing, with room for a busy machine.
	fk := &fake{delay: time.Minute, started: make(chan struct{}, 4)}
	e := newEnv(t, Config{Parallel: 1, Queue: 4, RequestTimeout: 200 * time.Millisecond}, fk, "", nil)
	start := time.Now()
	r := e.post("/api/agent/react_step", `{"user_query": "q"}`)
	if r.code != 504 || !strings.Contains(string(r.body), "--request-timeout 200ms (during the model call)") {
		t.Errorf("%d %s", r.code, r.body)
	}
	if time.Since(start) > 30*time.Second || fk.cancelled.Load() != 1 {
		t.Fatalf("took %s, cancelled %d", time.Since(start), fk.cancelled.Load())
	}
	// Waiting in the queue behind a call that does not end.
	fk.stubborn, fk.delay = true, time.Second
	go e.post("/api/agent/react_step", `{"user_query": "q"}`)
	<-fk.started
	<-fk.started
	r = e.post("/api/agent/react_step", `{"user_query": "q"}`)
	if r.code != 504 || !strings.Contains(string(r.body), "(while waiting for a free sequence)") {
		t.Errorf("%d %s", r.code, r.body)
	}
	// The client goes away: its model call ends.
	e2 := newEnv(t, Config{Parallel: 1, Queue: 4}, &fake{delay: 10 * time.Second, started: make(chan struct{}, 1)}, "", nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e2.http.URL+"/api/agent/react_step", strings.NewReader(`{"user_query": "q"}`))
	go func() {
		<-e2.fake.started
		cancel()
	}()
	if _, err := e2.http.Client().Do(req); err == nil {
		t.Fatal("request not cancelled")
	}
	// The fake model call runs 10 s unless cancelled: a cancellation is
	// seen well before that, however slow the machine.
	waitUntil(t, "the model call to be cancelled", func() bool { return e2.fake.cancelled.Load() != 0 })
	if e2.fake.cancelled.Load() != 1 {
		t.Fatal("the model call went on after the client left")
	}
	if !eventually(func() bool { return strings.Contains(e2.logs.String(), `"status":499`) }) {
		t.Fatalf("log: %s", e2.logs.String())
	}
}

// Without a model, steps get 503 and say how to get one.
func TestNoModel(t *testing.T) {
	e := newEnv(t, Config{}, nil, "", func(s *config.Settings) { s.Script, s.Backend = "", "none" })
	if r := e.post("/api/agent/react_step", `{"user_query": "q"}`); r.code != 503 || !strings.Contains(string(r.body), "needs a model") {
		t.Fatalf("%d %s", r.code, r.body)
	}
	var h Health
	r := e.do("GET", "/healthz", "")
	r.json(t, &h)
	if r.code != 200 || h.ModelLoaded || h.Backend != "none" {
		t.Fatalf("%s", r.body)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	fk := &fake{delay: 300 * time.Millisecond, started: make(chan struct{}, 1)}
	e := newEnv(t, Config{Parallel: 3, Queue: 7}, fk, "", nil)
	done := make(chan reply)
	go func() { done <- e.post("/api/agent/react_step", `{"user_query": "q"}`) }()
	<-fk.started
	var h Health
	r := e.do("GET", "/healthz", "")
	r.json(t, &h)
	if r.code != 200 || h.Status != "ok" || !h.ModelLoaded || h.Backend != "fake" || h.Model != "test" || h.Sequences.Total != 3 || h.Sequences.Busy != 1 ||
		h.Sequences.Free != 2 || h.Queue.Length != 0 || h.Queue.Capacity != 7 {
		t.Fatalf("%s", r.body)
	}
	<-done
	e.post("/api/agent/react_step", `{"oops": 1}`)
	r = e.do("GET", "/metrics", "")
	m := string(r.body)
	for _, want := range []string{
		`tact_http_requests_total{endpoint="/api/agent/react_step",status="200"} 1`,
		`tact_http_requests_total{endpoint="/api/agent/react_step",status="400"} 1`,
		`tact_http_requests_total{endpoint="/healthz",status="200"} 1`,
		`tact_http_request_duration_seconds_bucket{endpoint="/api/agent/react_step",le="+Inf"} 2`,
		`tact_http_request_duration_seconds_count{endpoint="/api/agent/react_step"} 2`,
		`tact_tokens_total{kind="evaluated"} 10`, `tact_tokens_total{kind="reused"} 5`, `tact_tokens_total{kind="generated"} 3`,
		"tact_queue_length 0", "tact_sequences 3", "tact_sequences_busy 0", `tact_model_info{backend="fake",model="test"} 1`,
		"# TYPE tact_http_request_duration_seconds histogram",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %v\n%s", r.code, r.header, m)
	}
}

const finalPlan = `{"tool":"final_answer","args":{"answer":"planned answer"}}`

// POST /v1/runs: a query or a JSONL plan, answered as the run --json object.
func TestRuns(t *testing.T) {
	script := `{"kind":"plan","text":"{\"plan\":[{\"thought\":\"answer right away\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"from the planner\"}}]}"}` + "\n"
	e := newEnv(t, Config{}, nil, script, func(s *config.Settings) { s.MaxTokens = 256 })
	r := e.post("/v1/runs", `{"query": "say hi", "id": "run-1"}`)
	var res map[string]any
	r.json(t, &res)
	if r.code != 200 || res["success"] != true || res["final_answer"] != "from the planner" || res["run_id"] != "run-1" || res["termination_reason"] != "success" {
		t.Fatalf("%d %s", r.code, r.body)
	}
	r = e.post("/v1/runs", toJSON(t, map[string]any{"plan": finalPlan}))
	r.json(t, &res)
	if r.code != 200 || res["final_answer"] != "planned answer" {
		t.Fatalf("%d %s", r.code, r.body)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"query": "q", "yes": true}`, "yes: unknown field"},
		{`{"query": "q", "workspace": "/"}`, "workspace: unknown field"},
		{`{}`, "query: empty, and no plan given"},
		{`{"query": "q", "max_iterations": 0}`, "max_iterations: minimum"},
		{`{"query": "q", "allow_tools": ["rm_rf"]}`, `allow_tools[0]: unknown tool "rm_rf"`},
		{`{"query": "q", "max_tokens": 1000}`, "max_tokens: 1000 is more than the server's --max-tokens 256"},
		{`{"plan": "{\"tool\":\"nope\",\"args\":{}}"}`, "plan:1: unknown tool"},
	} {
		r := e.post("/v1/runs", tc.body)
		var eb errorBody
		r.json(t, &eb)
		if r.code != 400 || !strings.Contains(eb.Error, tc.want) {
			t.Errorf("%s: %d %s", tc.body, r.code, r.body)
		}
	}
}

// "stream": true answers server-sent events: the trace events, then the result.
func TestRunsStream(t *testing.T) {
	e := newEnv(t, Config{}, nil, "", nil)
	resp, err := e.http.Client().Post(e.http.URL+"/v1/runs", "application/json", strings.NewReader(toJSON(t, map[string]any{"plan": finalPlan, "stream": true})))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var events []string
	var result map[string]any
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			events = append(events, event)
		case strings.HasPrefix(line, "data: "):
			var v map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if event == "result" {
				result = v
			} else if v["event"] != event || v["run_id"] == "" {
				t.Fatalf("event %s: %s", event, line)
			}
		}
	}
	got := strings.Join(events, ",")
	if !strings.HasPrefix(got, "run_start,") || !strings.HasSuffix(got, ",termination,result") || !strings.Contains(got, ",step,") ||
		result["final_answer"] != "planned answer" {
		t.Fatalf("events %s, result %v", got, result)
	}
	// An error once the stream began is its last event.
	resp2, err := e.http.Client().Post(e.http.URL+"/v1/runs", "application/json", strings.NewReader(`{"plan": "{\"tool\":\"nope\",\"args\":{}}", "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if !strings.Contains(string(b), "event: error\ndata: {\"status\":\"error\",\"error\":\"plan:1: unknown tool") {
		t.Fatalf("%s", b)
	}
}

// A run past --request-timeout: 504 with the result.
func TestRunsTimeout(t *testing.T) {
	e := newEnv(t, Config{RequestTimeout: 300 * time.Millisecond}, nil, "", func(s *config.Settings) { s.Sandbox, s.Yes = "off", true })
	// The command would take a minute; the bound is generous beside the
	// 300 ms timeout and far below the minute.
	plan := `{"tool":"run_command","args":{"command":"sleep 60"}}` + "\n" + finalPlan
	start := time.Now()
	r := e.post("/v1/runs", toJSON(t, map[string]any{"plan": plan}))
	var res map[string]any
	r.json(t, &res)
	if r.code != 504 || res["termination_reason"] != "timeout" || time.Since(start) > 30*time.Second {
		t.Fatalf("%d %s after %s", r.code, r.body, time.Since(start))
	}
}

// serving runs e's server on a loopback listener through Serve (the
// shutdown path), returning its URL, the shutdown trigger and Serve's result.
func (e *testEnv) serving() (url string, shutdown context.CancelFunc, served chan error) {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	served = make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), cancel, served
}

// postAsync posts body to url and sends the reply on the returned channel
// (code -1: no reply).
func postAsync(url, body string) chan reply {
	got := make(chan reply, 1)
	go func() {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			got <- reply{code: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- reply{code: resp.StatusCode, header: resp.Header, body: b}
	}()
	return got
}

// Serve: on the context's end it stops accepting, lets in-flight requests
// finish within the grace, cancels the rest, and returns nil.
func TestGracefulShutdown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		code  int
	}{
		{"finishes within the grace", 300 * time.Millisecond, 200},
		{"cancelled after the grace", 2 * time.Minute, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fake{delay: tc.delay, started: make(chan struct{}, 1)}
			e := newEnv(t, Config{ShutdownGrace: time.Second}, fk, "", nil)
			url, shutdown, served := e.serving()
			got := postAsync(url+"/api/agent/react_step", `{"user_query": "q"}`)
			<-fk.started
			start := time.Now()
			shutdown()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			// The grace and room for a busy machine, far below the
			// cancelled call's two minutes.
			if took := time.Since(start); took > 30*time.Second {
				t.Fatalf("shutdown took %s with a grace of 1s", took)
			}
			if r := <-got; r.code != tc.code {
				t.Fatalf("in-flight request: %d %s", r.code, r.body)
			}
			if _, err := http.Get(url + "/healthz"); err == nil {
				t.Fatal("still accepting after shutdown")
			}
		})
	}
}

// A request still waiting in the queue when shutdown begins is refused at
// once (503) and never reaches the model, while the running one finishes;
// /healthz says shutting_down meanwhile.
func TestShutdownRefusesQueued(t *testing.T) {
	// The running call takes 5 s: a 503 well before it ends is "at once".
	fk := &fake{delay: 5 * time.Second, started: make(chan struct{}, 2)}
	e := newEnv(t, Config{Parallel: 1, Queue: 2, ShutdownGrace: time.Minute}, fk, "", nil)
	url, shutdown, served := e.serving()
	running := postAsync(url+"/api/agent/react_step", `{"user_query": "first"}`)
	<-fk.started
	queued := postAsync(url+"/api/agent/react_step", `{"user_query": "second"}`)
	waitUntil(t, "the second request to queue", func() bool { return e.srv.adm.queued() == 1 })
	start := time.Now()
	shutdown()
	r := <-queued
	if r.code != 503 || !strings.Contains(string(r.body), "shutting down; the request did not start") {
		t.Fatalf("queued request: %d %s", r.code, r.body)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("the queued request waited %s for its 503", took)
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/healthz", nil))
	var h Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil || rec.Code != 503 || h.Status != "shutting_down" || h.Sequences.Busy != 1 {
		t.Fatalf("healthz while draining: %d %s", rec.Code, rec.Body)
	}
	if r := <-running; r.code != 200 {
		t.Fatalf("running request: %d %s", r.code, r.body)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if fk.calls != 1 {
		t.Fatalf("%d model calls; the queued request must not start", fk.calls)
	}
}

// A /v1/runs run still going when the grace is over is cancelled: 503 with
// its result, ended cancelled, its command stopped.
func TestShutdownCancelsRun(t *testing.T) {
	e := newEnv(t, Config{ShutdownGrace: time.Second}, nil, "", func(s *config.Settings) { s.Sandbox, s.Yes = "off", true })
	url, shutdown, served := e.serving()
	plan := `{"tool":"run_command","args":{"command":"sleep 120"}}` + "\n" + finalPlan
	got := postAsync(url+"/v1/runs", toJSON(t, map[string]any{"plan": plan}))
	waitUntil(t, "the run to start", func() bool { return e.srv.adm.busy() == 1 })
	start := time.Now()
	shutdown()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	r := <-got
	var res map[string]any
	r.json(t, &res)
	if r.code != 503 || res["termination_reason"] != "cancelled" || res["success"] != false {
		t.Fatalf("%d %s", r.code, r.body)
	}
	// The grace and room for a busy machine, far below the command's 2 min.
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("shutdown took %s with a grace of 1s", took)
	}
}
