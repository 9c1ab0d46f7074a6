package mcpserve

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/internal/text"
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Token, when set, is the bearer token every request must send.
	Token string
	// MaxSessions bounds the sessions open at once (0: no bound); a new
	// session beyond it is refused with 503.
	MaxSessions int
	// SessionTimeout closes a session idle that long (0: never), so a
	// client that went away without ending its session frees its place.
	SessionTimeout time.Duration
}

// Handler serves the streamable HTTP transport, each session with its own
// state. It answers programs, not web pages: a request with an Origin
// other than this machine's loopback, or a cross-site Sec-Fetch-Site, is
// refused, and without a token so is a Host that is not loopback (DNS
// rebinding).
//
// Requests of protocol 2026-07-28 and later (their Mcp-Protocol-Version
// header) are served statelessly, as that revision asks: each request is
// its own, and what a run waits for lives in the run history (pause.go).
// Earlier versions keep their sessions.
func (s *Server) Handler(o HTTPOptions) http.Handler {
	get := func(*http.Request) *sdk.Server { return s.sdk }
	h := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{SessionTimeout: o.SessionTimeout})
	stateless := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true})
	return &guard{next: h, stateless: stateless, o: o, srv: s.sdk}
}

type guard struct {
	next      http.Handler
	stateless http.Handler // 2026-07-28 and later
	o         HTTPOptions
	srv       *sdk.Server
	// newSession makes new sessions one at a time, so the count of open
	// sessions checked before one is made is still true when it is.
	newSession sync.Mutex
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why := g.foreign(r); why != "" {
		http.Error(w, why, http.StatusForbidden)
		return
	}
	if g.o.Token != "" && !authorized(r, g.o.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tact"`)
		http.Error(w, "missing or wrong bearer token (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
		return
	}
	if g.o.MaxSessions > 0 && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		// The body is read whole, within a deadline, before the lock: a
		// client that sends headers and half a body must not hold every
		// other client's initialize.
		if !readBody(w, r) {
			return
		}
		g.newSession.Lock()
		defer g.newSession.Unlock()
		open := 0
		for range g.srv.Sessions() {
			open++
		}
		if open >= g.o.MaxSessions {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "tact mcp serve: "+strconv.Itoa(open)+" sessions open, the most --max-sessions allows; end one (DELETE) or try later", http.StatusServiceUnavailable)
			return
		}
	}
	if r.Header.Get("Mcp-Protocol-Version") >= mrtrVersion {
		g.stateless.ServeHTTP(w, r)
		return
	}
	g.next.ServeHTTP(w, r)
}

const (
	// bodyReadTimeout bounds reading a new session's request body.
	bodyReadTimeout = 10 * time.Second
	// maxNewSessionBody bounds a request that opens a session (an
	// initialize, a few hundred bytes).
	maxNewSessionBody = 1 << 20
)

// readBody reads r's body within bodyReadTimeout and at most
// maxNewSessionBody, and puts it back as a buffer; false: it failed and
// the answer was written.
func readBody(w http.ResponseWriter, r *http.Request) bool {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, maxNewSessionBody+1))
	_ = rc.SetReadDeadline(time.Time{})
	switch {
	case err != nil:
		http.Error(w, "tact mcp serve: reading the request body: "+err.Error(), http.StatusRequestTimeout)
		return false
	case len(body) > maxNewSessionBody:
		http.Error(w, "tact mcp serve: a request opening a session takes at most 1 MiB", http.StatusRequestEntityTooLarge)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

func authorized(r *http.Request, token string) bool {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[len(prefix):])), []byte(token)) == 1
}

// foreign says why r may come from a web page (a page can reach a
// loopback port, and with DNS rebinding even be same-origin with it), or
// "". As the MCP specification asks (and its conformance suite's
// dns-rebinding-protection checks), an Origin of this machine's loopback
// (http://localhost, 127.0.0.1 or [::1], any port) is accepted, every
// other Origin refused; without an Origin, a cross-site Sec-Fetch-Site is
// refused.
func (g *guard) foreign(r *http.Request) string {
	const why = "tact mcp serve answers MCP clients and pages of this machine's loopback, not other web pages, so that a page open in a browser cannot use its tools"
	if o := r.Header.Values("Origin"); len(o) > 0 {
		if len(o) == 1 && loopbackOrigin(o[0]) {
			return ""
		}
		return fmt.Sprintf("request from a web page (Origin %q): %s", text.Clip(o[0], 100), why)
	}
	if sf := r.Header.Get("Sec-Fetch-Site"); sf != "" && !strings.EqualFold(sf, "none") {
		return fmt.Sprintf("request from a web page (Sec-Fetch-Site %q): %s", text.Clip(sf, 100), why)
	}
	if g.o.Token == "" && r.Host != "" && !loopbackHost(r.Host) {
		return fmt.Sprintf("Host %q is not a loopback name or address: without --token-env, tact mcp serve answers only requests addressed to localhost, 127.0.0.0/8 or [::1]", text.Clip(r.Host, 100))
	}
	return ""
}

// loopbackHost reports whether a Host (with or without a port) names this
// machine's loopback: the name localhost or a literal address in
// 127.0.0.0/8 or ::1. Nothing else is judged by its spelling: a name
// "under .localhost" may resolve (through /etc/hosts) to a LAN address,
// where tact would then listen without a token.
func loopbackHost(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(strings.TrimSuffix(h, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// loopbackOrigin reports whether an Origin header is a page of this
// machine's loopback: http or https, host localhost, 127.0.0.0/8 or [::1],
// any port, nothing more.
func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	return loopbackHost(u.Host)
}

// CheckAddr refuses to listen beyond loopback without a token: anyone who
// can reach the port could use the tools in the workspace.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %s: %v (want HOST:PORT, e.g. 127.0.0.1:8090)", addr, err)
	}
	if token != "" || loopbackHost(host) {
		return nil
	}
	what := host
	if host == "" {
		what = "every interface"
	}
	return fmt.Errorf("--http %s listens on %s, beyond loopback: give --token-env NAME, the environment variable holding a bearer token that every request must send", addr, what)
}
