// Package openai is the backend for servers that speak OpenAI's chat
// completions API: ollama, llama-server, vLLM, OpenAI itself. It is built on
// the official Go SDK (requests, server-sent events, response types) and adds
// what tact needs around it: the reply's JSON Schema in the form the server
// wants, its own retry policy, a bound on every request, token usage mapped
// to tact's, and errors that name the server, never its credentials.
package openai

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tactcli/tact/llm"
)

// SchemaMode is how a call's JSON Schema reaches the server.
type SchemaMode string

const (
	// SchemaJSONSchema sends response_format {"type": "json_schema"}: OpenAI,
	// ollama, vLLM and current llama-server constrain the reply with it.
	SchemaJSONSchema SchemaMode = "json_schema"
	// SchemaJSONObject sends response_format {"type": "json_object"} (any
	// JSON object) and the schema in the prompt, for servers without
	// json_schema support.
	SchemaJSONObject SchemaMode = "json_object"
	// SchemaField sends the schema as llama-server's own top-level
	// "json_schema" field (older llama-server builds).
	SchemaField SchemaMode = "json_schema_field"
	// SchemaNone sends the schema in the prompt only.
	SchemaNone SchemaMode = "none"
)

// SchemaModes lists the modes, for messages.
var SchemaModes = []SchemaMode{SchemaJSONSchema, SchemaJSONObject, SchemaField, SchemaNone}

// ParseSchemaMode checks a --schema-mode value ("" is json_schema).
func ParseSchemaMode(s string) (SchemaMode, error) {
	if s == "" {
		return SchemaJSONSchema, nil
	}
	for _, m := range SchemaModes {
		if SchemaMode(s) == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown schema mode %q (want json_schema, json_object, json_schema_field or none)", s)
}

// Options configure a Backend.
type Options struct {
	BaseURL string // e.g. http://127.0.0.1:11434/v1
	Model   string // the server's model name
	// APIKey is sent as a bearer token when not empty. The caller reads it
	// from the environment; it never appears in an error.
	APIKey     string
	SchemaMode SchemaMode    // "": json_schema
	Retries    int           // retries after a failed attempt (connection errors, 429, 5xx)
	Timeout    time.Duration // bound of one attempt, a stalled stream included (0: none)
	CtxSize    int           // the context window, for the context budget (0: unknown)
	Log        *slog.Logger  // retries are logged here (nil: slog.Default())
	HTTPClient *http.Client  // nil: a client of its own

	// Backoff between retries: BaseDelay doubling up to MaxDelay, with
	// jitter; a server's Retry-After is honoured up to MaxRetryAfter.
	// Zero takes the default (500ms, 8s, 60s).
	BaseDelay, MaxDelay, MaxRetryAfter time.Duration
}

// Default backoff.
const (
	DefaultBaseDelay     = 500 * time.Millisecond
	DefaultMaxDelay      = 8 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
)

// maxPlainBody bounds a non-streamed reply read into memory.
const maxPlainBody = 32 << 20

// Backend talks to one server and model. It is safe for concurrent calls:
// each is its own HTTP request.
type Backend struct {
	o      Options
	server string // scheme://host, for messages
	svc    openai.ChatCompletionService
	client *http.Client
	extras bool // send top_k and min_p (servers other than OpenAI's accept them)

	mu    sync.Mutex
	ratio float64 // the server's prompt tokens / the estimate, from the last reported usage
}

// New checks the options and makes a backend; it does not contact the server.
func New(o Options) (*Backend, error) {
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("base URL: want an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1")
	}
	if strings.TrimSpace(o.Model) == "" {
		return nil, errors.New("no model name: the server needs one (e.g. the NAME of ollama create NAME)")
	}
	if o.SchemaMode, err = ParseSchemaMode(string(o.SchemaMode)); err != nil {
		return nil, err
	}
	if o.Retries < 0 {
		return nil, errors.New("retries must not be negative")
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	b := &Backend{o: o, server: Server(u), client: o.HTTPClient, ratio: 1}
	if b.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// tact batch and tact serve make many calls at once.
		t.MaxIdleConnsPerHost = 64
		b.client = &http.Client{Transport: t}
	}
	b.extras = !isOpenAIHost(u.Hostname())
	opts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithHTTPClient(b.client),
		option.WithMaxRetries(0), // retries are ours: the policy is tact's, and each is logged
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	// The service alone, not openai.NewClient: the client also reads
	// OPENAI_API_KEY, OPENAI_BASE_URL and more from the environment, and
	// tact sends only the key the user named.
	b.svc = openai.NewChatCompletionService(opts...)
	return b, nil
}

// Server is u as messages show it: scheme://host[:port], no credentials,
// path or query.
func Server(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}

// Describe names the server and model, for logs.
func (b *Backend) Describe() string {
	return fmt.Sprintf("%s model %s (schema mode %s)", b.server, b.o.Model, b.o.SchemaMode)
}

// Close releases idle connections.
func (b *Backend) Close() error {
	b.client.CloseIdleConnections()
	return nil
}

// ContextSize is --ctx-size: the server does not say its window in the
// chat completions API.
func (b *Backend) ContextSize() int { return b.o.CtxSize }

// CountPrompt estimates msgs' tokens: tact's estimate scaled by how far it
// was from the server's count on the last call that reported usage.
func (b *Backend) CountPrompt(msgs []llm.Message) (int, error) {
	return b.scale(llm.EstimatePrompt(msgs)), nil
}

// CountText estimates text's tokens, scaled as CountPrompt.
func (b *Backend) CountText(text string) (int, error) { return b.scale(llm.EstimateText(text)), nil }

// EstimatedCounts reports that counts are estimates, not the tokenizer's.
func (b *Backend) EstimatedCounts() bool { return true }

func (b *Backend) scale(n int) int {
	b.mu.Lock()
	r := b.ratio
	b.mu.Unlock()
	return int(float64(n)*r + 0.999)
}

// calibrate learns the ratio of the server's prompt tokens to the estimate.
func (b *Backend) calibrate(msgs []llm.Message, promptTotal int) {
	est := llm.EstimatePrompt(msgs)
	if promptTotal <= 0 || est <= 0 {
		return
	}
	// Bounded: one odd report (a server counting only new tokens) must not
	// make every later count absurd.
	r := min(max(float64(promptTotal)/float64(est), 0.25), 4)
	b.mu.Lock()
	b.ratio = r
	b.mu.Unlock()
}

// Complete sends one chat completion request, streamed, retrying failures
// that may pass (connection errors, 429, 5xx, a stalled or cut stream) up
// to Retries times.
func (b *Backend) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	params := b.params(req)
	for attempt := 0; ; attempt++ {
		resp, err := b.attempt(ctx, req, params)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return llm.Response{}, fmt.Errorf("%s call: %w", req.Kind, ctx.Err())
		}
		wait, ok := b.retryWait(err, attempt)
		if !ok {
			return llm.Response{}, err
		}
		if attempt >= b.o.Retries {
			if attempt == 0 {
				return llm.Response{}, err // --retries 0
			}
			return llm.Response{}, fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		}
		if deadline, has := ctx.Deadline(); has && time.Until(deadline) < wait {
			return llm.Response{}, fmt.Errorf("%w (not retried: waiting %s would pass the run's --timeout)", err, wait.Round(time.Millisecond))
		}
		b.log().Warn(fmt.Sprintf("%v; retry %d of %d in %s", err, attempt+1, b.o.Retries, wait.Round(time.Millisecond)))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return llm.Response{}, fmt.Errorf("%s call: %w", req.Kind, ctx.Err())
		case <-t.C:
		}
	}
}

func (b *Backend) log() *slog.Logger {
	if b.o.Log != nil {
		return b.o.Log
	}
	return slog.Default()
}

// retryWait says whether err may pass on a retry, and after how long: the
// server's Retry-After (capped), else exponential backoff with jitter.
func (b *Backend) retryWait(err error, attempt int) (time.Duration, bool) {
	var se *StatusError
	switch {
	case errors.As(err, &se):
		if !se.retryable() {
			return 0, false
		}
		if se.RetryAfter > 0 {
			return min(se.RetryAfter, b.o.MaxRetryAfter), true
		}
	case errors.Is(err, errRetryable):
	default:
		return 0, false
	}
	d := b.o.BaseDelay << min(attempt, 20)
	if d <= 0 || d > b.o.MaxDelay {
		d = b.o.MaxDelay
	}
	// Half fixed, half random: many tact processes hitting one server
	// apart, never all at once.
	return d/2 + rand.N(d/2+1), true
}

// errRetryable marks failures that may pass: the connection, a stall, a
// stream cut short.
var errRetryable = errors.New("retryable")

type retryableError struct{ msg string }

func (e *retryableError) Error() string        { return e.msg }
func (e *retryableError) Is(target error) bool { return target == errRetryable }

// params is the request body for req.
func (b *Backend) params(req llm.Request) openai.ChatCompletionNewParams {
	hint := ""
	if len(req.Schema) > 0 && (b.o.SchemaMode == SchemaJSONObject || b.o.SchemaMode == SchemaNone) {
		// Only the last message carries it, so the conversation before it
		// stays a stable prefix for the server's prompt cache.
		hint = "\n\nReply with one JSON object valid against this JSON Schema:\n" + string(req.Schema)
	}
	msgs := make([]openai.ChatCompletionMessageParamUnion, len(req.Messages))
	for i, m := range req.Messages {
		content := m.Content
		if i == len(req.Messages)-1 {
			content += hint
		}
		switch m.Role {
		case llm.RoleSystem:
			msgs[i] = openai.SystemMessage(content)
		case llm.RoleAssistant:
			msgs[i] = openai.ChatCompletionMessageParamOfAssistant(content)
		default:
			msgs[i] = openai.UserMessage(content)
		}
	}
	p := openai.ChatCompletionNewParams{
		Model:         b.o.Model,
		Messages:      msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	s := req.Sampling
	p.Temperature = openai.Float(float64(s.Temperature))
	if s.TopP > 0 {
		p.TopP = openai.Float(float64(s.TopP))
	}
	if s.Seed >= 0 {
		p.Seed = openai.Int(int64(s.Seed))
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	extra := map[string]any{}
	if b.extras && s.TopK > 0 {
		extra["top_k"] = s.TopK
	}
	if b.extras && s.MinP > 0 {
		extra["min_p"] = s.MinP
	}
	if len(req.Schema) > 0 {
		switch b.o.SchemaMode {
		case SchemaJSONSchema:
			name := "tact_" + string(req.Kind)
			if req.Kind == "" {
				name = "tact_reply"
			}
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: req.Schema}}}
		case SchemaJSONObject:
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
		case SchemaField:
			extra["json_schema"] = req.Schema
		}
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return p
}

// attempt makes one request and reads its reply.
func (b *Backend) attempt(ctx context.Context, req llm.Request, params openai.ChatCompletionNewParams) (llm.Response, error) {
	start := time.Now()
	actx, cancel := ctx, context.CancelFunc(func() {})
	if b.o.Timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, b.o.Timeout)
	}
	defer cancel()
	// A server that answers with one JSON object instead of a stream (some
	// proxies ignore "stream") is read whole; error statuses become a
	// StatusError here, where the body and headers are at hand.
	var plain []byte
	mw := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err != nil {
			return nil, err
		}
		if res.StatusCode >= 400 {
			return nil, b.statusError(res)
		}
		if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
			body, err := io.ReadAll(io.LimitReader(res.Body, maxPlainBody))
			res.Body.Close()
			if err != nil {
				return nil, err
			}
			plain = append([]byte{}, body...)
			res.Body = io.NopCloser(strings.NewReader(""))
		}
		return res, nil
	}
	stream := b.svc.NewStreaming(actx, params, option.WithMiddleware(mw))
	defer stream.Close()

	var text strings.Builder
	var usage *openai.CompletionUsage
	var firstToken time.Duration // the first content chunk's, from the request
	chunks, finish := 0, ""
	for stream.Next() {
		ch := stream.Current()
		chunks++
		if ch.JSON.Usage.Valid() {
			u := ch.Usage
			usage = &u
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			if piece := c.Delta.Content; piece != "" {
				if firstToken == 0 {
					firstToken = time.Since(start)
				}
				text.WriteString(piece)
				if req.OnToken != nil {
					req.OnToken(piece)
				}
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return llm.Response{}, b.streamErr(ctx, actx, err)
	}
	if ctx.Err() != nil {
		return llm.Response{}, ctx.Err()
	}
	if plain != nil {
		var cc openai.ChatCompletion
		if err := cc.UnmarshalJSON(plain); err != nil || len(cc.Choices) == 0 {
			return llm.Response{}, fmt.Errorf("model server %s: %w: a JSON body that is not a chat completion", b.server, errMalformed)
		}
		text.WriteString(cc.Choices[0].Message.Content)
		if req.OnToken != nil && text.Len() > 0 {
			req.OnToken(text.String())
		}
		finish = cmp.Or(cc.Choices[0].FinishReason, "stop")
		if cc.JSON.Usage.Valid() {
			usage = &cc.Usage
		}
	} else if chunks == 0 {
		return llm.Response{}, fmt.Errorf("model server %s: %w: no chat completion chunks (is the base URL an OpenAI-compatible API, e.g. http://HOST:PORT/v1?)", b.server, errMalformed)
	} else if finish == "" {
		return llm.Response{}, &retryableError{fmt.Sprintf("model server %s: the reply stream ended before the reply did", b.server)}
	}
	resp := llm.Response{Text: text.String()}
	if usage != nil && (usage.PromptTokens > 0 || usage.CompletionTokens > 0) {
		cached := min(max(usage.PromptTokensDetails.CachedTokens, 0), usage.PromptTokens)
		resp.Usage = llm.Usage{PromptTokens: int(usage.PromptTokens - cached), CachedTokens: int(cached), CompletionTokens: int(usage.CompletionTokens)}
		b.calibrate(req.Messages, int(usage.PromptTokens))
	} else {
		// No usage reported: estimates, so --token-budget still holds.
		p, _ := b.CountPrompt(req.Messages)
		c, _ := b.CountText(resp.Text)
		resp.Usage = llm.Usage{PromptTokens: p, CompletionTokens: c}
	}
	resp.Usage.FirstTokenMS = float64(firstToken.Microseconds()) / 1000 // 0: not streamed
	return resp, nil
}

// statusError reads an error reply: its body (bounded) and Retry-After.
func (b *Backend) statusError(res *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	msg, code := parseErrorBody(body)
	msg, code = b.scrub(msg), b.scrub(code)
	e := &StatusError{Server: b.server, Status: res.StatusCode, Message: msg, Code: code}
	e.contextLen = (res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusRequestEntityTooLarge ||
		res.StatusCode == http.StatusUnprocessableEntity || res.StatusCode >= 500) && isContextLength(msg, code)
	if d, ok := parseRetryAfter(res.Header, time.Now()); ok {
		e.RetryAfter = d
	}
	return e
}

// scrub hides the API key in what a server says: one that echoes the
// request's headers into its error must not put the key in tact's errors.
func (b *Backend) scrub(s string) string {
	if b.o.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, b.o.APIKey, "[REDACTED]")
}

// streamErr types what ended a stream: the caller's cancellation, the
// attempt's time limit (a stall), an error status, an error event, a
// chunk that is not JSON, or the connection.
func (b *Backend) streamErr(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if actx.Err() != nil {
		return &retryableError{fmt.Sprintf("model server %s: no complete reply within --request-timeout %s", b.server, b.o.Timeout)}
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se
	}
	var sse *ssestream.StreamError
	if errors.As(err, &sse) {
		msg, code := parseErrorBody(sse.Event.Data)
		msg, code = b.scrub(msg), b.scrub(code)
		return &streamError{server: b.server, message: msg, code: code, contextLen: isContextLength(msg, code)}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return fmt.Errorf("model server %s: %w: a reply chunk is not a chat completion chunk: %v", b.server, errMalformed, err)
	}
	// The URL in a *url.Error may hold a query the user put in --base-url.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		// Not a passing failure: retrying cannot make the certificate valid.
		return fmt.Errorf("model server %s: %v", b.server, err)
	}
	var ne net.Error
	what := "connection failed"
	if errors.As(err, &ne) && ne.Timeout() {
		what = "connection timed out"
	}
	return &retryableError{fmt.Sprintf("model server %s: %s: %v", b.server, what, err)}
}

// ModelInfo: the server's model name and --ctx-size.
func (b *Backend) ModelInfo() llm.ModelInfo {
	return llm.ModelInfo{Backend: llm.BackendOpenAI, Model: b.o.Model, ContextSize: b.o.CtxSize}
}

// Concurrency: every call is its own HTTP request; the server decides how
// many it serves at once and queues the rest.
func (b *Backend) Concurrency() int { return llm.Unbounded }

// isOpenAIHost reports whether host is OpenAI's (or Azure OpenAI's), whose
// API refuses fields it does not know, such as top_k and min_p.
func isOpenAIHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, domain := range []string{"openai.com", "openai.azure.com"} {
		if host == domain || strings.HasSuffix(host, "."+domain) {
			return true
		}
	}
	return false
}
