// Package server is `tact serve`: the ReAct step service (POST
// /api/agent/react_step), whole runs (POST /v1/runs), /healthz and
// /metrics over HTTP, on one agent.Runtime whose model stays loaded. The
// engine does the work (agent.Runtime.Run; package stepapi answers a step on
// it); this package is the HTTP contract around it: authentication, body
// limits, the bounded queue in front of the model's parallel sequences,
// timeouts, status codes, metrics, one log line per request and graceful
// shutdown. docs/serve.md documents it.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/telemetry"
)

// Config is how the server listens and admits requests.
type Config struct {
	// Token, when set, must come as "Authorization: Bearer TOKEN" on every
	// request. A non-loopback address needs one (CheckAddr).
	Token string
	// MaxBody bounds a request body in bytes (413 beyond).
	MaxBody int64
	// Parallel requests run at once (the model's sequences); Queue more
	// may wait for one (429 beyond).
	Parallel, Queue int
	// RequestTimeout bounds one request, queueing included (504); 0: none.
	RequestTimeout time.Duration
	// WriteTimeout bounds each write to a client (of at most writeChunk
	// bytes): a client that stops reading is cut when a write blocks
	// that long, and its request cancelled, so it cannot hold a
	// sequence; 0: none.
	WriteTimeout time.Duration
	// ShutdownGrace is how long in-flight requests may take to finish once
	// Serve's context ends; then they are cancelled.
	ShutdownGrace time.Duration
	// Log receives one line per request (nil: slog.Default()).
	Log *slog.Logger
}

// CheckAddr refuses to listen beyond loopback without a token: anyone who
// can reach the port could run tools in the workspace.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %v (want HOST:PORT, e.g. 127.0.0.1:8080)", addr, err)
	}
	if token != "" || isLoopback(host) {
		return nil
	}
	what := host
	if host == "" {
		what = "every interface"
	}
	return fmt.Errorf("--addr %s listens on %s, beyond loopback: give --token-env NAME, the environment variable holding a bearer token that every request must send", addr, what)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server serves one runtime.
type Server struct {
	rt  *agent.Runtime
	cfg Config
	log *slog.Logger
	adm *admission
	m   *metrics
	mux *http.ServeMux
	// base is every request's parent context: cancelling it ends the
	// model calls and runs still going when the shutdown grace is over.
	base       context.Context
	cancelBase context.CancelFunc
}

// New makes a server for rt.
func New(rt *agent.Runtime, cfg Config) (*Server, error) {
	switch {
	case cfg.MaxBody <= 0:
		return nil, fmt.Errorf("--max-body %d: must be at least 1", cfg.MaxBody)
	case cfg.Parallel < 1:
		return nil, fmt.Errorf("--parallel %d: must be at least 1", cfg.Parallel)
	case cfg.Queue < 0:
		return nil, fmt.Errorf("--queue %d: must not be negative", cfg.Queue)
	case cfg.WriteTimeout < 0:
		return nil, fmt.Errorf("--write-timeout %s: must not be negative", cfg.WriteTimeout)
	}
	s := &Server{rt: rt, cfg: cfg, log: cfg.Log, adm: newAdmission(cfg.Parallel, cfg.Queue), mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.m = newMetrics(s.adm, rt.Model())
	s.mux.HandleFunc("POST /api/agent/react_step", s.step)
	s.mux.HandleFunc("POST /v1/runs", s.runs)
	s.mux.HandleFunc("POST /v1/runs/{id}/answer", s.answer)
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.Handle("GET /metrics", s.m.handler())
	return s, nil
}

// reqInfo is what a handler tells the request's log line and metrics.
type reqInfo struct {
	usage   llm.Usage
	session string
	runID   string
	err     string
}

type infoKey struct{}

func info(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// writeChunk is the most one write to a client may carry: a large
// answer goes out in pieces, each with its own deadline, so the write
// timeout bounds a stall, not how long a slow link takes for the whole.
const writeChunk = 32 << 10

// statusWriter remembers the status sent and bounds every write to the
// client by the write timeout. A write that fails (the deadline passed,
// the client left) cancels the request, whose run then ends, and is
// remembered: later writes fail at once, and net/http closes the
// connection once the handler returns.
type statusWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	cut     func() // cancels the request
	status  int
	werr    error
}

func newStatusWriter(w http.ResponseWriter, timeout time.Duration, cut func()) *statusWriter {
	return &statusWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout, cut: cut}
}

// arm gives the next write to the client the write timeout. Deadlines
// are absolute, so each write needs its own; the connection may not
// support them (a test's recorder), which only leaves writes unbounded.
func (w *statusWriter) arm() {
	if w.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *statusWriter) failed(err error) error {
	if w.werr == nil {
		w.werr = err
		w.cut()
	}
	return err
}

// WriteHeader arms too: net/http may send the header only after the
// handler returns, under the last deadline set.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.werr != nil {
		return 0, w.werr
	}
	n := 0
	for len(b) > 0 {
		w.arm()
		m, err := w.ResponseWriter.Write(b[:min(len(b), writeChunk)])
		n += m
		if err != nil {
			return n, w.failed(err)
		}
		b = b[m:]
	}
	return n, nil
}

// FlushError is what http.ResponseController.Flush calls: the flush is a
// write to the client as well.
func (w *statusWriter) FlushError() error {
	if w.werr != nil {
		return w.werr
	}
	w.arm()
	if err := w.rc.Flush(); err != nil {
		return w.failed(err)
	}
	return nil
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeFailure says, for the log, why an answer did not reach its client.
func (s *Server) writeFailure(err error) string {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Sprintf("the client did not read the answer: a write blocked for --write-timeout %s; the connection was closed and the request cancelled", s.cfg.WriteTimeout)
	}
	return "the client went away while the answer was written: " + err.Error()
}

// statusClientGone is logged and counted for a request whose client went
// away before the answer (nginx's convention; nothing is sent).
const statusClientGone = 499

// ServeHTTP refuses requests from web pages (foreign), authenticates,
// routes, and writes the request's log line and metrics. Bodies and
// headers are never logged, but for the clipped Host, Origin or
// Sec-Fetch-Site value a 403 names.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ri := &reqInfo{}
	// An incoming traceparent is continued by the request's run (telemetry).
	ctx, cut := context.WithCancel(context.WithValue(telemetry.Extract(r.Context(), r.Header), infoKey{}, ri))
	defer cut()
	r = r.WithContext(ctx)
	sw := newStatusWriter(w, s.cfg.WriteTimeout, cut)
	// Before the token and the body: a refused request costs nothing.
	if why := s.foreign(r); why != "" {
		s.fail(sw, r, http.StatusForbidden, why)
	} else if s.cfg.Token != "" && !s.authorized(r) {
		sw.Header().Set("WWW-Authenticate", `Bearer realm="tact"`)
		s.fail(sw, r, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer TOKEN)")
	} else {
		s.mux.ServeHTTP(sw, r)
	}
	status := sw.status
	if status == 0 {
		status = statusClientGone
	}
	if sw.werr != nil {
		// The answer did not arrive: counted as a client gone, whatever
		// status its header had.
		status = statusClientGone
		ri.err = strings.TrimPrefix(ri.err+"; "+s.writeFailure(sw.werr), "; ")
	}
	endpoint := r.Pattern
	if i := strings.IndexByte(endpoint, ' '); i >= 0 {
		endpoint = endpoint[i+1:]
	}
	if endpoint == "" {
		endpoint = "other"
	}
	took := time.Since(start)
	s.m.observe(endpoint, status, took, ri.usage)
	attrs := []any{"method", r.Method, "path", r.URL.Path, "status", status, "duration_ms", took.Milliseconds(),
		"prompt_tokens", ri.usage.PromptTokens, "cached_tokens", ri.usage.CachedTokens, "generated_tokens", ri.usage.CompletionTokens}
	if ri.session != "" {
		attrs = append(attrs, "session_id", ri.session)
	}
	if ri.runID != "" {
		attrs = append(attrs, "run_id", ri.runID)
	}
	if ri.err != "" {
		attrs = append(attrs, "error", ri.err)
	}
	s.log.Info("request", attrs...)
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[len(prefix):])), []byte(s.cfg.Token)) == 1
}

// foreign says why r may come from a web page rather than from a
// program, or "" when it does not. A page the user opens can send
// requests to a loopback port: a cross-origin fetch with an untyped body
// needs no CORS preflight, and a page whose DNS name the attacker points
// at 127.0.0.1 (DNS rebinding) is even same-origin with it. Browsers mark
// such requests (Origin, Sec-Fetch-Site) and always send the page's own
// name as Host; programs (curl, SDKs, scripts) send neither header and
// the name they dialled. Without a token, nothing else stands between a
// page and the tools, so Host must name loopback too; with one, a page
// cannot send the token, so Host is left free (a TLS proxy in front may
// keep the client's Host).
func (s *Server) foreign(r *http.Request) string {
	const why = "tact serve answers programs (curl, SDKs, scripts), not web pages, so that a page open in a browser cannot use it"
	if o := r.Header.Values("Origin"); len(o) > 0 {
		return fmt.Sprintf("request from a web page (Origin %s): %s", quoteClipped(o[0]), why)
	}
	if sf := r.Header.Get("Sec-Fetch-Site"); sf != "" && !strings.EqualFold(sf, "none") {
		return fmt.Sprintf("request from a web page (Sec-Fetch-Site %s): %s", quoteClipped(sf), why)
	}
	if s.cfg.Token == "" && r.Host != "" && !loopbackHost(r.Host) {
		return fmt.Sprintf("Host %s is not a loopback name or address: without --token-env, tact serve answers only requests addressed to localhost, 127.0.0.0/8 or [::1], so that a web page whose DNS name points at this machine cannot use it", quoteClipped(r.Host))
	}
	return ""
}

// quoteClipped quotes a header value for an error message, cut short:
// the value is the client's and may be long.
func quoteClipped(v string) string { return strconv.Quote(text.Clip(v, 100)) }

// loopbackHost reports whether a request's Host (a name or an address,
// with or without a port) names this machine's loopback: localhost and
// names under .localhost (RFC 6761: never delegated, so no attacker can
// point them elsewhere), 127.0.0.0/8, ::1 and ::ffff:127.x.x.x.
func loopbackHost(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	// ASCII case only: Unicode folding would take "localhoſt" for a
	// loopback name.
	name := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, strings.TrimSuffix(h, "."))
	if name == "localhost" || (strings.HasSuffix(name, ".localhost") && len(name) > len(".localhost")) {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// errorBody is every error response: status "error" as a step response
// has it, and the message.
type errorBody struct {
	Status string `json:"status"`
	Error  string `json:"error"`
}

// fail answers with an error status and message (already free of secrets).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	msg = s.rt.Redactor.Redact(msg)
	info(r).err = msg
	writeJSON(w, code, errorBody{Status: "error", Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := text.JSON(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"status":"error","error":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// contentTypeError says which header to send instead of mt. A form or
// text body is refused even when it holds JSON: those are the types a web
// page may post to any site without a CORS preflight, so accepting them
// would widen what a page the user opens can send to a loopback server.
func contentTypeError(mt string) string {
	msg := fmt.Sprintf("Content-Type %q: the body must be JSON sent with the header \"Content-Type: application/json\"", mt)
	if strings.EqualFold(mt, "application/x-www-form-urlencoded") {
		// What curl -d sends unless told otherwise.
		msg += " (with curl: -H 'Content-Type: application/json' -d BODY, or --json BODY)"
	}
	return msg
}

// readBody reads a JSON body of at most MaxBody bytes; on failure it has
// answered (413, 415, 400) and returns nil.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) []byte {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := strings.Cut(ct, ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
			s.fail(w, r, http.StatusUnsupportedMediaType, contentTypeError(strings.TrimSpace(mt)))
			return nil
		}
	}
	if r.ContentLength > s.cfg.MaxBody {
		s.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes: at most %d (--max-body)", r.ContentLength, s.cfg.MaxBody))
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes (--max-body)", s.cfg.MaxBody))
		return nil
	case err != nil:
		s.fail(w, r, http.StatusBadRequest, "reading the request body: "+err.Error())
		return nil
	}
	return body
}

// requestContext bounds a request by --request-timeout, under the
// server's base context (shutdown) and the client's connection.
func (s *Server) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.base, cancel)
	if s.cfg.RequestTimeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, s.cfg.RequestTimeout)
		return ctx, func() { cancelT(); stop(); cancel() }
	}
	return ctx, func() { stop(); cancel() }
}

// admit takes a sequence for the request, waiting in the queue; on
// failure it has answered (429 with Retry-After, 504, 503) and returns nil.
func (s *Server) admit(ctx context.Context, w http.ResponseWriter, r *http.Request) func() {
	release, err := s.adm.acquire(ctx)
	if err == nil {
		return release
	}
	if errors.Is(err, errDraining) {
		s.fail(w, r, http.StatusServiceUnavailable, "the server is shutting down; the request did not start")
		return nil
	}
	if errors.Is(err, errQueueFull) {
		w.Header().Set("Retry-After", strconv.Itoa(s.adm.retryAfter()))
		s.fail(w, r, http.StatusTooManyRequests, fmt.Sprintf("%v (%d running, %d waiting); retry later", err, s.adm.total(), s.cfg.Queue))
		return nil
	}
	s.contextFailed(ctx, w, r, "while waiting for a free sequence")
	return nil
}

// contextFailed answers a request whose context ended: 504 past the
// request timeout, 503 when the server is shutting down, nothing when the
// client went away.
func (s *Server) contextFailed(ctx context.Context, w http.ResponseWriter, r *http.Request, when string) {
	switch {
	case s.base.Err() != nil:
		s.fail(w, r, http.StatusServiceUnavailable, "the server is shutting down; the request was cancelled "+when)
	case r.Context().Err() != nil:
		info(r).err = "the client went away " + when
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.fail(w, r, http.StatusGatewayTimeout, fmt.Sprintf("the request took longer than --request-timeout %s (%s)", s.cfg.RequestTimeout, when))
	default:
		info(r).err = "cancelled " + when
	}
}

// engineFailed answers an engine error by its kind.
func (s *Server) engineFailed(ctx context.Context, w http.ResponseWriter, r *http.Request, err error) {
	switch agent.KindOf(err) {
	case agent.ErrBadInput, agent.ErrContextTooSmall:
		s.fail(w, r, http.StatusBadRequest, err.Error())
	case agent.ErrNeedsModel:
		s.fail(w, r, http.StatusServiceUnavailable, err.Error())
	case agent.ErrTimeout, agent.ErrCancelled:
		s.contextFailed(ctx, w, r, "during the model call")
	default:
		s.fail(w, r, http.StatusInternalServerError, err.Error())
	}
}

// Health is the /healthz body.
type Health struct {
	Status      string `json:"status"` // "ok" or "shutting_down"
	Backend     string `json:"backend"`
	Model       string `json:"model,omitempty"`
	ModelLoaded bool   `json:"model_loaded"`
	Sequences   struct {
		Total int `json:"total"`
		Busy  int `json:"busy"`
		Free  int `json:"free"`
	} `json:"sequences"`
	Queue struct {
		Length   int `json:"length"`
		Capacity int `json:"capacity"`
	} `json:"queue"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	mi := s.rt.Model()
	h := Health{Status: "ok", Backend: mi.Backend, Model: mi.Model, ModelLoaded: s.rt.HasModel()}
	h.Sequences.Total, h.Sequences.Busy = s.adm.total(), s.adm.busy()
	h.Sequences.Free = h.Sequences.Total - h.Sequences.Busy
	h.Queue.Length, h.Queue.Capacity = s.adm.queued(), s.cfg.Queue
	code := http.StatusOK
	if s.adm.isDraining() {
		h.Status, code = "shutting_down", http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

// Serve answers requests on ln until ctx ends, then shuts down: it stops
// accepting, lets in-flight requests finish within ShutdownGrace, cancels
// the ones still going (their model calls and runs end) and returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		// No BaseContext: requestContext ties each request's work to the
		// base context, and r.Context() keeps meaning "the client is
		// still there", so an answer finished during shutdown is sent.
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		// statusWriter gives each write of a handler its deadline; this
		// one bounds the writes net/http makes before it (100 Continue,
		// its own error answers). net/http clears deadlines between the
		// requests of a connection.
		WriteTimeout: s.cfg.WriteTimeout,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.cancelBase()
		return err
	case <-ctx.Done():
	}
	s.adm.drain()
	s.log.Info("shutting down", "grace", s.cfg.ShutdownGrace.String(), "in_flight", s.adm.busy(), "queued", s.adm.queued())
	// In-flight requests get the grace less a margin in which cancelled
	// ones write their answers, so everything ends within the grace.
	margin := min(s.cfg.ShutdownGrace/4, 2*time.Second)
	finish, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace-margin)
	err := srv.Shutdown(finish)
	cancel()
	if err != nil {
		s.log.Warn("shutdown grace over; cancelling the requests still running", "in_flight", s.adm.busy())
		s.cancelBase()
		last, cancel := context.WithTimeout(context.Background(), margin)
		if srv.Shutdown(last) != nil {
			srv.Close()
		}
		cancel()
	}
	s.cancelBase()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
