package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tactcli/tact/llm"
)

// chunk is one streamed chat.completion.chunk with content (and a finish
// reason when not "").
func chunk(content, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	c, _ := json.Marshal(content)
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":` + string(c) + `},"finish_reason":` + fr + `}]}`
}

// usageChunk is the final chunk stream_options.include_usage asks for.
func usageChunk(prompt, completion, cached int) string {
	details := ""
	if cached >= 0 {
		details = fmt.Sprintf(`,"prompt_tokens_details":{"cached_tokens":%d}`, cached)
	}
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d%s}}`,
		prompt, completion, prompt+completion, details)
}

// writeSSE streams events, each flushed, then [DONE].
func writeSSE(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// server is an httptest server recording each request's body and headers.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func (s *server) body(i int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// newServer serves /v1/chat/completions with handle(n, w, r), n counting
// requests from 0.
func newServer(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, raw)
		}
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		handle(n, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// logBuffer captures the backend's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newBackend(t *testing.T, url string, mod func(*Options)) (*Backend, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	o := Options{BaseURL: url + "/v1", Model: "tiny", Retries: 3, Timeout: 5 * time.Second,
		Log:       slog.New(slog.NewTextHandler(logs, nil)),
		BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetryAfter: 2 * time.Second}
	if mod != nil {
		mod(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, logs
}

var testSchema = json.RawMessage(`{"type":"object","properties":{"tool":{"type":"string"}},"required":["tool"]}`)

func testRequest() llm.Request {
	return llm.Request{Kind: llm.KindAction, Schema: testSchema, MaxTokens: 64,
		Sampling: llm.Sampling{Temperature: 0.2, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 7},
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "You are tact."}, {Role: llm.RoleUser, Content: "list the files"}}}
}

func okReply(_ int, w http.ResponseWriter, _ *http.Request) {
	writeSSE(w, chunk(`{"tool":`, ""), chunk(`"x"}`, "stop"), usageChunk(30, 5, 0))
}

func TestSchemaModes(t *testing.T) {
	for _, tc := range []struct {
		mode       SchemaMode
		format     string // response_format.type, "" for none
		field      bool   // top-level json_schema
		schemaHint bool   // the schema in the last message
	}{
		{SchemaJSONSchema, "json_schema", false, false},
		{"", "json_schema", false, false},
		{SchemaJSONObject, "json_object", false, true},
		{SchemaField, "", true, false},
		{SchemaNone, "", false, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			srv := newServer(t, okReply)
			b, _ := newBackend(t, srv.URL, func(o *Options) { o.SchemaMode = tc.mode })
			resp, err := b.Complete(t.Context(), testRequest())
			if err != nil || resp.Text != `{"tool":"x"}` {
				t.Fatalf("Complete = %q, %v", resp.Text, err)
			}
			body := srv.body(0)
			if body["model"] != "tiny" || body["stream"] != true {
				t.Errorf("model %v, stream %v; want tiny, true", body["model"], body["stream"])
			}
			if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
				t.Errorf("stream_options = %v, want include_usage", body["stream_options"])
			}
			rf, _ := body["response_format"].(map[string]any)
			if got, _ := rf["type"].(string); got != tc.format {
				t.Errorf("response_format = %v, want type %q", body["response_format"], tc.format)
			}
			if tc.format == "json_schema" {
				js, _ := rf["json_schema"].(map[string]any)
				if got, _ := json.Marshal(js["schema"]); !jsonEqual(got, testSchema) || js["name"] != "tact_action" {
					t.Errorf("json_schema = %v, want the request's schema named tact_action", js)
				}
			}
			if got, ok := body["json_schema"]; ok != tc.field {
				t.Errorf("top-level json_schema = %v, want present: %v", got, tc.field)
			} else if ok {
				if raw, _ := json.Marshal(got); !jsonEqual(raw, testSchema) {
					t.Errorf("top-level json_schema = %s", raw)
				}
			}
			msgs, _ := body["messages"].([]any)
			last, _ := msgs[len(msgs)-1].(map[string]any)
			if hint := strings.Contains(fmt.Sprint(last["content"]), `"required":["tool"]`); hint != tc.schemaHint {
				t.Errorf("last message %q: schema in the prompt = %v, want %v", last["content"], hint, tc.schemaHint)
			}
			first, _ := msgs[0].(map[string]any)
			if first["role"] != "system" || first["content"] != "You are tact." {
				t.Errorf("first message = %v, want the system prompt unchanged", first)
			}
		})
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

func TestSamplingAndKey(t *testing.T) {
	// The SDK's client would read OPENAI_API_KEY itself; tact sends only
	// the key it was given.
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://192.0.2.1:1/v1")
	srv := newServer(t, okReply)
	b, _ := newBackend(t, srv.URL, nil)
	if _, err := b.Complete(t.Context(), testRequest()); err != nil {
		t.Fatal(err)
	}
	body := srv.body(0)
	want := map[string]any{"temperature": 0.2, "top_p": 0.95, "seed": 7.0, "max_tokens": 64.0, "top_k": 40.0, "min_p": 0.05}
	for k, v := range want {
		got, _ := body[k].(float64)
		if d := got - v.(float64); d > 1e-6 || d < -1e-6 {
			t.Errorf("%s = %v, want %v", k, body[k], v)
		}
	}
	if h := srv.headers[0].Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none without a key", h)
	}

	// Off values are left out; a key is sent as a bearer token.
	b2, _ := newBackend(t, srv.URL, func(o *Options) { o.APIKey = "sk-test-key-1234" })
	req := testRequest()
	req.Sampling = llm.Sampling{Temperature: 0, TopK: -1, MinP: -1, Seed: -1}
	req.MaxTokens = 0
	if _, err := b2.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	body = srv.body(1)
	for _, k := range []string{"top_k", "min_p", "seed", "max_tokens", "top_p"} {
		if v, ok := body[k]; ok {
			t.Errorf("%s = %v, want it left out", k, v)
		}
	}
	if v, ok := body["temperature"]; !ok || v != 0.0 {
		t.Errorf("temperature = %v, want 0 sent (greedy)", v)
	}
	if h := srv.headers[1].Get("Authorization"); h != "Bearer sk-test-key-1234" {
		t.Errorf("Authorization = %q, want the key", h)
	}
}

// top_k and min_p are not sent to OpenAI's own hosts, which refuse unknown
// fields; every other server gets them (a look-alike name included).
func TestExtrasByHost(t *testing.T) {
	srv := newServer(t, okReply)
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Every request goes to the test server, whatever host the URL names.
	redirect := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
	for i, tc := range []struct {
		base   string
		extras bool
	}{
		{"https://api.openai.com/v1", false},
		{"https://API.OpenAI.com./v1", false},
		{"https://my-resource.openai.azure.com/v1", false},
		{"http://127.0.0.1:8080/v1", true},
		{"https://notopenai.com/v1", true},
		{"https://openai.com.example.net/v1", true},
	} {
		b, _ := newBackend(t, srv.URL, func(o *Options) { o.BaseURL, o.HTTPClient = tc.base, redirect })
		if _, err := b.Complete(t.Context(), testRequest()); err != nil {
			t.Fatalf("%s: %v", tc.base, err)
		}
		body := srv.body(i)
		_, topK := body["top_k"]
		_, minP := body["min_p"]
		if topK != tc.extras || minP != tc.extras {
			t.Errorf("%s: top_k sent %v, min_p sent %v; want %v", tc.base, topK, minP, tc.extras)
		}
		if body["top_p"] == nil {
			t.Errorf("%s: top_p not sent", tc.base)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestStreamedReply(t *testing.T) {
	srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeSSE(w, chunk("", ""), chunk(`{"tool":`, ""), chunk(` "read_file"}`, ""), chunk("", "stop"), usageChunk(120, 9, 100))
	})
	b, _ := newBackend(t, srv.URL, nil)
	req := testRequest()
	var pieces []string
	req.OnToken = func(p string) { pieces = append(pieces, p) }
	resp, err := b.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"tool": "read_file"}` || strings.Join(pieces, "|") != `{"tool":| "read_file"}` {
		t.Errorf("text %q, pieces %q", resp.Text, pieces)
	}
	// The final chunk's usage: 120 prompt tokens of which 100 cached; the
	// first content chunk's time (time to first token) more than nothing.
	if resp.Usage.FirstTokenMS <= 0 {
		t.Errorf("time to first token %v ms", resp.Usage.FirstTokenMS)
	}
	if want := (llm.Usage{PromptTokens: 20, CachedTokens: 100, CompletionTokens: 9, FirstTokenMS: resp.Usage.FirstTokenMS}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage string // "" sends none
		want  llm.Usage
	}{
		{"no cache details", usageChunk(50, 4, -1), llm.Usage{PromptTokens: 50, CompletionTokens: 4}},
		{"all cached", usageChunk(50, 4, 50), llm.Usage{CachedTokens: 50, CompletionTokens: 4}},
		{"cached above prompt", usageChunk(50, 4, 80), llm.Usage{CachedTokens: 50, CompletionTokens: 4}},
		// Estimates when the server reports nothing, so --token-budget holds.
		{"none reported", "", llm.Usage{PromptTokens: llm.EstimatePrompt(testRequest().Messages), CompletionTokens: llm.EstimateText(`{"tool":"x"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				ev := []string{chunk(`{"tool":"x"}`, "stop")}
				if tc.usage != "" {
					ev = append(ev, tc.usage)
				}
				writeSSE(w, ev...)
			})
			b, _ := newBackend(t, srv.URL, nil)
			resp, err := b.Complete(t.Context(), testRequest())
			tc.want.FirstTokenMS = resp.Usage.FirstTokenMS // streamed: TestStreamedReply
			if err != nil || resp.Usage != tc.want {
				t.Errorf("usage = %+v, %v; want %+v", resp.Usage, err, tc.want)
			}
		})
	}
}

// TestCalibration: counts are estimates until the server reports usage,
// then scaled by how far the estimate was.
func TestCalibration(t *testing.T) {
	req := testRequest()
	est := llm.EstimatePrompt(req.Messages)
	srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeSSE(w, chunk(`{"tool":"x"}`, "stop"), usageChunk(2*est, 3, 0))
	})
	b, _ := newBackend(t, srv.URL, func(o *Options) { o.CtxSize = 4096 })
	var c llm.TokenCounter = b
	if n, _ := c.CountPrompt(req.Messages); n != est {
		t.Errorf("before any call: %d, want the estimate %d", n, est)
	}
	if _, err := b.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.CountPrompt(req.Messages); n != 2*est {
		t.Errorf("after a call: %d, want the server's %d", n, 2*est)
	}
	if n, _ := c.CountText("abcdefgh"); n != 4 {
		t.Errorf("CountText = %d, want 2 estimated, doubled", n)
	}
	if llm.ContextSizeOf(b) != 4096 || llm.CounterFor(b).Exact() {
		t.Errorf("context %d, exact %v; want 4096 and estimated counts", llm.ContextSizeOf(b), llm.CounterFor(b).Exact())
	}
}

func TestNonStreamedReply(t *testing.T) {
	srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"tool\":\"x\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":6,"total_tokens":46,"prompt_tokens_details":{"cached_tokens":8}}}`)
	})
	b, _ := newBackend(t, srv.URL, nil)
	req := testRequest()
	var got string
	req.OnToken = func(p string) { got += p }
	resp, err := b.Complete(t.Context(), req)
	if err != nil || resp.Text != `{"tool":"x"}` || got != resp.Text {
		t.Fatalf("Complete = %q (pieces %q), %v", resp.Text, got, err)
	}
	// Not streamed: no time to first token.
	if want := (llm.Usage{PromptTokens: 32, CachedTokens: 8, CompletionTokens: 6}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Run("honoured", func(t *testing.T) {
		srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				w.Header().Set("Retry-After", "1")
				http.Error(w, `{"error":{"message":"slow down","type":"rate_limit"}}`, http.StatusTooManyRequests)
				return
			}
			okReply(n, w, r)
		})
		b, logs := newBackend(t, srv.URL, nil)
		start := time.Now()
		resp, err := b.Complete(t.Context(), testRequest())
		if err != nil || resp.Text != `{"tool":"x"}` {
			t.Fatalf("Complete = %q, %v", resp.Text, err)
		}
		if el := time.Since(start); el < time.Second || el > 3*time.Second {
			t.Errorf("took %v, want the 1s Retry-After", el)
		}
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "model server "+srv.URL+": 429 Too Many Requests: slow down; retry 1 of 3 in 1s") {
			t.Errorf("log = %q, want one line naming the server, the status and the wait", logs.String())
		}
	})
	t.Run("capped", func(t *testing.T) {
		srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			okReply(n, w, r)
		})
		b, _ := newBackend(t, srv.URL, func(o *Options) { o.MaxRetryAfter = 50 * time.Millisecond })
		start := time.Now()
		if _, err := b.Complete(t.Context(), testRequest()); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("took %v, want the wait capped at 50ms", el)
		}
	})
	t.Run("never past the deadline", func(t *testing.T) {
		srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		b, _ := newBackend(t, srv.URL, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := b.Complete(ctx, testRequest())
		if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "would pass the run's --timeout") {
			t.Errorf("err = %v, want the 429 and why it was not retried", err)
		}
		if el := time.Since(start); el > 400*time.Millisecond || srv.requests() != 1 {
			t.Errorf("took %v and %d requests, want one request and no wait", el, srv.requests())
		}
	})
}

func TestRetries(t *testing.T) {
	t.Run("500 then success", func(t *testing.T) {
		srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n < 2 {
				http.Error(w, `{"error":{"message":"model is loading"}}`, http.StatusServiceUnavailable)
				return
			}
			okReply(n, w, r)
		})
		b, logs := newBackend(t, srv.URL, nil)
		resp, err := b.Complete(t.Context(), testRequest())
		if err != nil || resp.Text != `{"tool":"x"}` || srv.requests() != 3 {
			t.Fatalf("Complete = %q, %v after %d requests; want success on the third", resp.Text, err, srv.requests())
		}
		if n := strings.Count(logs.String(), "503 Service Unavailable: model is loading; retry"); n != 2 {
			t.Errorf("log = %q, want two retry lines", logs.String())
		}
	})
	t.Run("gives up after --retries", func(t *testing.T) {
		srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "upstream failed", http.StatusBadGateway)
		})
		b, _ := newBackend(t, srv.URL, func(o *Options) { o.Retries = 2 })
		_, err := b.Complete(t.Context(), testRequest())
		want := "model server " + srv.URL + ": 502 Bad Gateway: upstream failed (gave up after 3 attempts)"
		if err == nil || err.Error() != want || srv.requests() != 3 {
			t.Errorf("err = %v after %d requests, want %q after 3", err, srv.requests(), want)
		}
	})
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusRequestTimeout, http.StatusConflict} {
		t.Run(fmt.Sprintf("%d not retried", status), func(t *testing.T) {
			srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprint(w, `{"error":{"message":"model \"tiny\" not found, try pulling it first","type":"invalid_request_error"}}`)
			})
			b, logs := newBackend(t, srv.URL, nil)
			_, err := b.Complete(t.Context(), testRequest())
			want := fmt.Sprintf("model server %s: %d %s: model \"tiny\" not found, try pulling it first", srv.URL, status, http.StatusText(status))
			if err == nil || err.Error() != want || srv.requests() != 1 || logs.String() != "" {
				t.Errorf("err = %v after %d requests (log %q), want %q after 1", err, srv.requests(), logs.String(), want)
			}
			if errors.Is(err, llm.ErrContextFull) {
				t.Errorf("%v is a context-full error", err)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		b, logs := newBackend(t, "http://"+addr, func(o *Options) { o.Retries = 1 })
		_, err = b.Complete(t.Context(), testRequest())
		if err == nil || !strings.HasPrefix(err.Error(), "model server http://"+addr+": connection failed: ") || !strings.Contains(err.Error(), "refused") {
			t.Errorf("err = %v, want a connection failure naming the server", err)
		}
		if strings.Count(logs.String(), "connection failed") != 1 {
			t.Errorf("log = %q, want one retry line", logs.String())
		}
	})
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body, want string
	}{
		{"chunk not JSON", "text/event-stream", "data: {\"choices\": [\n\n", "malformed reply: a reply chunk is not a chat completion chunk"},
		{"HTML page", "text/html", "<html><title>Welcome</title></html>", "malformed reply: no chat completion chunks (is the base URL an OpenAI-compatible API"},
		{"JSON not a completion", "application/json", `{"models": []}`, "malformed reply: a JSON body that is not a chat completion"},
		{"JSON garbage", "application/json", `{"choices": [`, "malformed reply: a JSON body that is not a chat completion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				fmt.Fprint(w, tc.body)
			})
			b, _ := newBackend(t, srv.URL, nil)
			_, err := b.Complete(t.Context(), testRequest())
			if err == nil || !strings.Contains(err.Error(), "model server "+srv.URL+": "+tc.want) || srv.requests() != 1 {
				t.Errorf("err = %v after %d requests, want %q and no retry", err, srv.requests(), tc.want)
			}
		})
	}
	t.Run("stream cut short", func(t *testing.T) {
		srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", chunk(`{"tool":`, ""))
				return // no finish_reason, no [DONE]
			}
			okReply(n, w, r)
		})
		b, logs := newBackend(t, srv.URL, nil)
		resp, err := b.Complete(t.Context(), testRequest())
		if err != nil || resp.Text != `{"tool":"x"}` || !strings.Contains(logs.String(), "the reply stream ended before the reply did; retry 1 of 3") {
			t.Errorf("Complete = %q, %v (log %q); want a retry after the cut stream", resp.Text, err, logs.String())
		}
	})
}

// TestStalledStream: a server that stops sending mid-reply is cut off by
// the request timeout, then retried.
func TestStalledStream(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunk(`{"tool":`, ""))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	b, logs := newBackend(t, srv.URL, func(o *Options) { o.Timeout = 200 * time.Millisecond; o.Retries = 1 })
	start := time.Now()
	_, err := b.Complete(t.Context(), testRequest())
	want := "model server " + srv.URL + ": no complete reply within --request-timeout 200ms (gave up after 2 attempts)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if el := time.Since(start); el > 2*time.Second || srv.requests() != 2 || !strings.Contains(logs.String(), "retry 1 of 1") {
		t.Errorf("took %v, %d requests, log %q; want two cut-off attempts", el, srv.requests(), logs.String())
	}
}

// TestCancel: cancelling the context stops a reply mid-stream at once.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunk(`{"tool":`, ""))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	b, _ := newBackend(t, srv.URL, func(o *Options) { o.Timeout = 0 })
	ctx, cancel := context.WithCancel(t.Context())
	req := testRequest()
	var once sync.Once
	var cancelled time.Time
	req.OnToken = func(string) {
		once.Do(func() {
			cancelled = time.Now()
			cancel()
		})
	}
	_, err := b.Complete(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if el := time.Since(cancelled); el > 500*time.Millisecond || srv.requests() != 1 {
		t.Errorf("returned %v after the cancel with %d requests, want at once and no retry", el, srv.requests())
	}
}

func TestContextLength(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"openai", 400, `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
		{"vllm", 400, `{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 3000 tokens.","type":"BadRequestError","param":null,"code":400}`},
		{"llama-server", 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`},
		{"ollama", 500, `{"error":{"message":"the input length exceeds the context length","type":"api_error"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			})
			b, _ := newBackend(t, srv.URL, nil)
			_, err := b.Complete(t.Context(), testRequest())
			if !errors.Is(err, llm.ErrContextFull) || srv.requests() != 1 || !strings.Contains(err.Error(), "model server "+srv.URL+": ") {
				t.Errorf("err = %v after %d requests, want ErrContextFull naming the server, not retried", err, srv.requests())
			}
		})
	}
	t.Run("in the stream", func(t *testing.T) {
		srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			writeSSE(w, `{"error":{"message":"the input length exceeds the context length"}}`)
		})
		b, _ := newBackend(t, srv.URL, nil)
		_, err := b.Complete(t.Context(), testRequest())
		if !errors.Is(err, llm.ErrContextFull) || srv.requests() != 1 {
			t.Errorf("err = %v after %d requests, want ErrContextFull", err, srv.requests())
		}
	})
	t.Run("other stream error", func(t *testing.T) {
		srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			writeSSE(w, chunk("{", ""), `{"error":{"message":"grammar failed"}}`)
		})
		b, _ := newBackend(t, srv.URL, nil)
		_, err := b.Complete(t.Context(), testRequest())
		want := "model server " + srv.URL + ": error in the reply stream: grammar failed"
		if err == nil || err.Error() != want || errors.Is(err, llm.ErrContextFull) {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
}

// TestKeyNeverShown: a server that echoes the request's Authorization
// header in its errors (or a proxy that does) never gets the key into
// tact's errors or logs.
func TestKeyNeverShown(t *testing.T) {
	const key = "sk-secret-test-0123456789"
	srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		status := http.StatusInternalServerError
		if n > 0 {
			status = http.StatusUnauthorized
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"bad credentials: %s","code":"%s"}}`, r.Header.Get("Authorization"), key)
	})
	b, logs := newBackend(t, strings.Replace(srv.URL, "http://", "http://user:pass1234@", 1), func(o *Options) { o.APIKey = key })
	_, err := b.Complete(t.Context(), testRequest())
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized: bad credentials: Bearer [REDACTED]") {
		t.Errorf("err = %v, want the 401 with the key hidden", err)
	}
	for _, out := range []string{err.Error(), logs.String(), b.Describe()} {
		for _, secret := range []string{key, "pass1234"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q shows %q", out, secret)
			}
		}
	}
	if srv.requests() != 2 || !strings.Contains(logs.String(), "500 Internal Server Error") {
		t.Errorf("%d requests, log %q; want the 500 logged and retried", srv.requests(), logs.String())
	}
}

// TestConcurrent: calls from several goroutines at once, as tact batch
// and tact serve make them, each get their own reply.
func TestConcurrent(t *testing.T) {
	var inFlight, peak atomic.Int32
	var srv *server
	srv = newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		msgs, _ := srv.body(n)["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		writeSSE(w, chunk(fmt.Sprint(last["content"]), "stop"), usageChunk(10, 1, 0))
	})
	b, _ := newBackend(t, srv.URL, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			req := testRequest()
			req.Messages[1].Content = fmt.Sprintf("query %d", i)
			resp, err := b.Complete(t.Context(), req)
			if err != nil || resp.Text != req.Messages[1].Content {
				t.Errorf("call %d: %q, %v", i, resp.Text, err)
			}
		})
	}
	wg.Wait()
	if peak.Load() < 2 {
		t.Errorf("at most %d calls in flight, want them concurrent", peak.Load())
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{BaseURL: "localhost:11434", Model: "m"}, "base URL: want an http:// or https:// URL"},
		{Options{BaseURL: "ftp://host/v1", Model: "m"}, "base URL: want an http:// or https:// URL"},
		{Options{BaseURL: "http://host/v1"}, "no model name"},
		{Options{BaseURL: "http://host/v1", Model: "m", SchemaMode: "grammar"}, `unknown schema mode "grammar"`},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, tc := range []struct {
		ra, ms string
		want   time.Duration
		ok     bool
	}{
		{"", "", 0, false},
		{"3", "", 3 * time.Second, true},
		{"1.5", "", 1500 * time.Millisecond, true},
		{"", "250", 250 * time.Millisecond, true},
		{"9", "100", 100 * time.Millisecond, true},
		{"Wed, 21 Oct 2015 07:28:10 GMT", "", 10 * time.Second, true},
		{"Wed, 21 Oct 2015 07:27:00 GMT", "", 0, true},
		{"-1", "", 0, false},
		{"soon", "", 0, false},
		{"NaN", "", 0, false},
	} {
		h := http.Header{}
		h.Set("Retry-After", tc.ra)
		h.Set("Retry-After-Ms", tc.ms)
		if d, ok := parseRetryAfter(h, now); d != tc.want || ok != tc.ok {
			t.Errorf("Retry-After %q, -Ms %q: %v, %v; want %v, %v", tc.ra, tc.ms, d, ok, tc.want, tc.ok)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	for _, tc := range []struct{ body, msg, code string }{
		{`{"error":{"message":"m","type":"t","code":"c"}}`, "m", "c"},
		{`{"error":{"message":"m","type":"t"}}`, "m", "t"},
		{`{"error":{"message":"m","code":400}}`, "m", "400"},
		{`{"error":"model 'x' not found"}`, "model 'x' not found", ""},
		{`{"object":"error","message":"m2","type":"BadRequestError","code":400}`, "m2", "400"},
		{`{"detail":"Not Found"}`, "Not Found", ""},
		{"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>", "502 Bad Gateway", ""},
		{"line one\n  line two\t", "line one line two", ""},
		{strings.Repeat("x", 1000), strings.Repeat("x", maxMessage) + "...", ""},
		{"", "", ""},
	} {
		if msg, code := parseErrorBody([]byte(tc.body)); msg != tc.msg || code != tc.code {
			t.Errorf("parseErrorBody(%.40q) = %q, %q; want %q, %q", tc.body, msg, code, tc.msg, tc.code)
		}
	}
}
