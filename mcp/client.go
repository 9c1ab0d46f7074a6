package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/tools"
)

// State is where a server stands.
type State string

const (
	StateReady      State = "ready"
	StateFailed     State = "failed"      // did not start, or died and could not be restarted
	StateDisabled   State = "disabled"    // "disabled": true in the config
	StateNotStarted State = "not started" // not needed by this run (a saved plan names none of its tools)
)

// Options configure a Manager.
type Options struct {
	// ClientVersion is sent in the initialize handshake (client "tact").
	ClientVersion string
	// Log receives warnings (a server that does not start, skipped tools)
	// and, at debug level, the servers' stderr and log messages.
	Log *slog.Logger
	// StopGrace is how long a stdio server gets to exit after its stdin is
	// closed before its process group gets SIGTERM (and SIGKILL a second
	// later); 0 means 2s.
	StopGrace time.Duration
	// MaxMessageSize bounds one message from a server (see
	// DefaultMaxMessage, the value 0 means).
	MaxMessageSize int
}

// Status is a server's state for `tact mcp list`.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     State  `json:"state"`
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
}

// Manager holds one session per started server for the whole run.
type Manager struct {
	opts    Options
	servers []*server
}

// Start starts the servers of cfg in parallel, each bounded by its startup
// timeout, and waits for all. only, when not nil, limits the servers
// started to those it names (the others are "not started"). A server that
// fails to start is logged as one warning naming it; its tools are absent.
func Start(ctx context.Context, cfg *Config, only []string, opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 2 * time.Second
	}
	m := &Manager{opts: opts}
	var want map[string]bool
	if only != nil {
		want = map[string]bool{}
		for _, n := range only {
			want[n] = true
		}
	}
	var wg sync.WaitGroup
	for _, sc := range cfg.servers() {
		s := &server{cfg: sc, log: opts.Log, opts: &m.opts, state: StateNotStarted}
		m.servers = append(m.servers, s)
		switch {
		case sc.Disabled:
			s.state = StateDisabled
		case want != nil && !want[sc.Name]:
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.start(ctx); err != nil {
					s.fail(err)
					opts.Log.Warn(fmt.Sprintf("MCP server %s did not start; its tools are absent", sc.Name), "err", err)
				}
			}()
		}
	}
	wg.Wait()
	return m
}

func (c *Config) servers() []*ServerConfig {
	if c == nil {
		return nil
	}
	return c.Servers
}

// Tools are the tools of every ready server, by server name then tool name.
func (m *Manager) Tools() []*Tool {
	var out []*Tool
	for _, s := range m.servers {
		s.mu.Lock()
		out = append(out, s.tools...)
		s.mu.Unlock()
	}
	return out
}

// Registry is base plus the servers' tools; a tool whose name is taken is
// skipped with a warning.
func (m *Manager) Registry(base *tools.Registry) *tools.Registry {
	all := base.List()
	taken := map[string]bool{}
	for _, t := range all {
		taken[t.Name()] = true
	}
	for _, t := range m.Tools() {
		if taken[t.Name()] {
			m.opts.Log.Warn("MCP tool skipped: its name is taken", "tool", t.Name())
			continue
		}
		taken[t.Name()] = true
		all = append(all, t)
	}
	return tools.NewRegistry(all...)
}

// Status lists every configured server.
func (m *Manager) Status() []Status {
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		st := Status{Name: s.cfg.Name, Transport: s.cfg.Transport(), State: s.state, Tools: len(s.tools)}
		if s.err != nil {
			st.Error = s.err.Error()
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Close ends every session, in parallel: stdio servers get their stdin
// closed, then SIGTERM and SIGKILL for their whole process group.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.mu.Lock()
			s.closed = true
			sess, proc := s.sess, s.proc
			s.sess, s.proc = nil, nil
			s.mu.Unlock()
			stopSession(sess, proc, m.opts.StopGrace)
		}()
	}
	wg.Wait()
}

// server is one configured server and its current session.
type server struct {
	cfg  *ServerConfig
	log  *slog.Logger
	opts *Options

	mu        sync.Mutex
	state     State
	err       error
	sess      *sdk.ClientSession
	proc      *process      // stdio servers
	done      chan struct{} // closed when sess ends
	guard     *guard        // sess's limits on what the server sends
	tools     []*Tool
	restarted bool
	closed    bool
}

func (s *server) where() string {
	if s.cfg.URL != "" {
		return s.cfg.URL
	}
	return "stdio: " + s.cfg.Command
}

func (s *server) fail(err error) {
	s.mu.Lock()
	s.state, s.err = StateFailed, err
	s.mu.Unlock()
}

// start connects, lists the tools (every page) and adapts them.
func (s *server) start(ctx context.Context) error {
	// One deadline for the connection, the handshake and every page of tools.
	lctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	l, err := s.connect(lctx)
	if err != nil {
		return err
	}
	sess, proc := l.sess, l.proc
	lctx, unwatch := l.guard.watch(lctx)
	defer unwatch()
	var list []*sdk.Tool
	for t, err := range sess.Tools(lctx, nil) {
		if err != nil {
			stopSession(sess, proc, s.opts.StopGrace)
			return fmt.Errorf("listing tools: %w", s.explain(lctx, err, l.proc, l.guard))
		}
		list = append(list, t)
	}
	tools := s.adapt(list)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		stopSession(sess, proc, s.opts.StopGrace)
		return errors.New("closed while starting")
	}
	s.sess, s.proc, s.done, s.guard, s.tools = sess, proc, l.done, l.guard, tools
	s.state, s.err = StateReady, nil
	s.log.Debug("MCP server ready", "server", s.cfg.Name, "transport", s.cfg.Transport(), "tools", len(tools),
		"protocol", sess.InitializeResult().ProtocolVersion)
	return nil
}

// connect starts the transport and the handshake within the startup timeout.
func (s *server) connect(ctx context.Context) (live, error) {
	if s.cfg.expandErr != nil {
		return live{}, s.cfg.expandErr
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	// Every byte from the server passes the guard before the SDK sees it;
	// the SDK's own caps, twice as high, are only a backstop.
	g := newGuard(s.cfg.Name, s.opts.MaxMessageSize)
	cctx, unwatch := g.watch(cctx)
	defer unwatch()
	var transport sdk.Transport
	var proc *process
	if s.cfg.URL != "" {
		transport = &sdk.StreamableClientTransport{
			Endpoint:     s.cfg.URL,
			HTTPClient:   &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.cfg.Headers, guard: g}},
			MaxEventSize: 2 * g.maxSize,
		}
	} else {
		var err error
		if proc, err = startProcess(s.cfg, s.log); err != nil {
			return live{}, err
		}
		transport = &sdk.IOTransport{Reader: g.reader(proc.stdout, frameLines), Writer: proc.stdin, MaxLineLength: 2 * g.maxSize}
	}
	name := s.cfg.Name
	client := sdk.NewClient(&sdk.Implementation{Name: "tact", Version: s.opts.ClientVersion}, &sdk.ClientOptions{
		// tact offers no roots, sampling or elicitation.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.log.Debug("MCP server's tool list changed; this run keeps the tools it started with", "server", name)
		},
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			data, _ := json.Marshal(r.Params.Data)
			s.log.Debug("MCP server log", "server", name, "level", r.Params.Level, "logger", r.Params.Logger, "data", string(data))
		},
	})
	sess, err := client.Connect(cctx, transport, nil)
	if err != nil {
		stopSession(nil, proc, s.opts.StopGrace)
		return live{}, s.explain(cctx, err, proc, g)
	}
	done := make(chan struct{})
	go func() {
		_ = sess.Wait()
		close(done)
	}()
	return live{sess, proc, done, g}, nil
}

// explain words a start error: a message tact refused says so, a timeout
// names the bound, a process that exited says how, with the reason its
// stderr gave and the command that was run.
func (s *server) explain(ctx context.Context, err error, proc *process, g *guard) error {
	if r := g.err(); r != nil {
		return r
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v (startup_timeout)", s.cfg.StartTimeout)
	}
	if proc != nil {
		select {
		case <-proc.exited:
			return fmt.Errorf("%w (command: %s)", proc.exitError(), proc.commandLine)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return err
}

// call runs one tool call within the server's timeout. A server found dead
// (before or during the call) is restarted once per run; a call it died
// during is not repeated, as it may have had effects.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	l, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	wctx, unwatch := l.guard.watch(cctx)
	defer unwatch()
	params := &sdk.CallToolParams{Name: tool, Arguments: args}
	// The call carries the caller's trace (W3C traceparent in _meta) when
	// OpenTelemetry is on: the global propagator is a no-op otherwise.
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	for k, v := range carrier {
		if params.Meta == nil {
			params.Meta = sdk.Meta{}
		}
		params.Meta[k] = v
	}
	res, err := l.sess.CallTool(wctx, params)
	if err == nil {
		return res, nil
	}
	refused := l.guard.err()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case refused == nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("no result within %v (the server's timeout); the call was cancelled", s.cfg.Timeout)
	case refused == nil && !down(err) && (answered(err) || !waitDone(l.done, 500*time.Millisecond)):
		return nil, err // an error from a live server
	}
	// The server died, or tact refused what it sent and closed the
	// connection (then the server is not to blame for how it ended).
	what := fmt.Sprintf("MCP server %s stopped during the call (%s)", s.cfg.Name, deathNote(l.proc, err))
	if refused != nil {
		what = refused.Error()
	}
	if rerr := s.restart(ctx, l.sess, refused); rerr != nil {
		return nil, fmt.Errorf("%s; %v", what, rerr)
	}
	return nil, fmt.Errorf("%s; it was restarted, so the call may be tried again", what)
}

// live is a session with its process (stdio), end signal and guard.
type live struct {
	sess  *sdk.ClientSession
	proc  *process
	done  chan struct{}
	guard *guard
}

// session returns the live session, restarting a dead server once.
func (s *server) session(ctx context.Context) (live, error) {
	s.mu.Lock()
	l, err := live{s.sess, s.proc, s.done, s.guard}, s.err
	s.mu.Unlock()
	if l.sess == nil {
		if err == nil {
			err = errors.New("not running")
		}
		return live{}, fmt.Errorf("MCP server %s is not available: %v", s.cfg.Name, err)
	}
	// A session whose message tact refused is over even where the
	// transport stays open (an HTTP session's other streams).
	refused := l.guard.err()
	if refused == nil && !waitDone(l.done, 0) {
		return l, nil
	}
	what := fmt.Sprintf("MCP server %s stopped (%s)", s.cfg.Name, deathNote(l.proc, nil))
	if refused != nil {
		what = refused.Error()
	}
	if rerr := s.restart(ctx, l.sess, refused); rerr != nil {
		return live{}, fmt.Errorf("%s; %v", what, rerr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return live{}, fmt.Errorf("MCP server %s is not available: %v", s.cfg.Name, s.err)
	}
	return live{s.sess, s.proc, s.done, s.guard}, nil
}

// deathNote says how a session's server ended.
func deathNote(proc *process, err error) string {
	if proc != nil {
		select {
		case <-proc.exited:
			return proc.exitError().Error()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err != nil {
		return err.Error()
	}
	return "connection closed"
}

// restart replaces the dead session dead with a new one, once per run;
// refused is the message tact refused on it, if that is why it ended.
func (s *server) restart(ctx context.Context, dead *sdk.ClientSession, refused *RefusedError) error {
	s.mu.Lock()
	if s.sess != dead {
		// Another call restarted it already.
		ok := s.sess != nil
		s.mu.Unlock()
		if ok {
			return nil
		}
		return errors.New("its restart failed")
	}
	if s.restarted || s.closed {
		s.sess, s.state, s.err = nil, StateFailed, errors.New("stopped, and already restarted once this run")
		proc := s.proc
		s.proc = nil
		s.mu.Unlock()
		stopSession(dead, proc, s.opts.StopGrace)
		return errors.New("it was restarted once already this run, so its tools are unavailable now")
	}
	s.restarted = true
	proc := s.proc
	s.sess, s.proc = nil, nil
	s.mu.Unlock()
	stopSession(dead, proc, s.opts.StopGrace)
	if refused != nil {
		s.log.Warn("MCP server's connection closed by tact; restarting it (once per run)", "server", s.cfg.Name, "reason", refused.Error())
	} else {
		s.log.Warn("MCP server stopped; restarting it (once per run)", "server", s.cfg.Name)
	}
	l, err := s.connect(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.state, s.err = StateFailed, fmt.Errorf("restart failed: %w", err)
		return fmt.Errorf("restarting it failed: %v", err)
	}
	if s.closed {
		go stopSession(l.sess, l.proc, s.opts.StopGrace)
		return errors.New("the run is ending")
	}
	s.sess, s.proc, s.done, s.guard, s.state = l.sess, l.proc, l.done, l.guard, StateReady
	return nil
}

// down reports whether a call error says the server is gone rather than
// that it answered with an error: the connection is closed or refused, or
// an HTTP server no longer knows the session (it restarted).
func down(err error) bool {
	var ue *url.Error
	var oe *net.OpError
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ue) || errors.As(err, &oe)
}

// codeRejected is the JSON-RPC code the SDK gives a message its transport
// could not deliver (jsonrpc2.ErrRejected), as opposed to a server's answer.
const codeRejected = -32005

// answered reports whether err is the server's own JSON-RPC error reply.
func answered(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc) && rpc.Code != codeRejected
}

func waitDone(done chan struct{}, d time.Duration) bool {
	if done == nil {
		return false
	}
	if d <= 0 {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// stopSession closes a session (stdio: closes the server's stdin) and ends
// its process group.
func stopSession(sess *sdk.ClientSession, proc *process, grace time.Duration) {
	if sess != nil {
		closed := make(chan struct{})
		go func() {
			_ = sess.Close()
			close(closed)
		}()
		// Close waits for calls in flight; the process group's end below
		// ends them if the server does not.
		select {
		case <-closed:
		case <-time.After(grace):
		}
	}
	if proc != nil {
		proc.stop(grace)
	}
}

// headerTransport adds the configured headers to every request and passes
// every response body through the session's guard.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	guard   *guard
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err == nil {
		h.guard.guardBody(resp)
	}
	return resp, err
}
