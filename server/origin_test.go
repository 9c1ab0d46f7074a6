package server

// Requests from web pages are refused: a page the user opens must not be
// able to start runs on a loopback tact serve, neither by a cross-origin
// fetch (Origin, Sec-Fetch-Site) nor through DNS rebinding (a Host that
// is not loopback, checked when there is no token to stop it). The
// requests are written by hand so that every header, Host included, is
// exactly what the case says.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// rawRequest sends one HTTP request to addr as written: head is the
// request line and headers (each ending in \r\n) without the blank line;
// body follows it. It returns the first response.
func rawRequest(t *testing.T, addr, head, body string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, head+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestBrowserRequestsRefused(t *testing.T) {
	const token = "origin-test-token-value"
	// A run of a fixed plan: 200 when admitted, whatever the backend.
	runBody := toJSON(t, map[string]any{"plan": finalPlan})
	const (
		ok        = 200
		refused   = 403
		pageWhy   = "request from a web page"
		notLoopbk = "is not a loopback name or address"
	)
	type want struct {
		code int
		msg  string
	}
	for _, tc := range []struct {
		name   string
		proto  string // HTTP/1.1 unless set
		host   string // "-": no Host line; "": the listener's address
		header string // more header lines, each ending in \r\n
		// the outcome without a token (a loopback listener) and with one
		// (what a listener beyond loopback needs)
		noToken, withToken want
	}{
		{name: "plain", noToken: want{ok, ""}, withToken: want{ok, ""}},
		// Origin: browsers send it on cross-origin fetches and on every
		// POST; any value, the server's own included, is a page.
		{name: "origin null", header: "Origin: null\r\n", noToken: want{refused, `(Origin "null")`}, withToken: want{refused, `(Origin "null")`}},
		{name: "origin evil", header: "Origin: https://evil.example\r\n", noToken: want{refused, `(Origin "https://evil.example")`}, withToken: want{refused, pageWhy}},
		{name: "origin self", header: "Origin: http://127.0.0.1:8080\r\n", noToken: want{refused, pageWhy}, withToken: want{refused, pageWhy}},
		{name: "origin empty", header: "Origin: \r\n", noToken: want{refused, `(Origin "")`}, withToken: want{refused, pageWhy}},
		// Sec-Fetch-Site: "none" is the user typing the URL.
		{name: "fetch site none", header: "Sec-Fetch-Site: none\r\n", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "fetch site cross-site", header: "Sec-Fetch-Site: cross-site\r\n", noToken: want{refused, `(Sec-Fetch-Site "cross-site")`}, withToken: want{refused, pageWhy}},
		{name: "fetch site same-site", header: "Sec-Fetch-Site: same-site\r\n", noToken: want{refused, pageWhy}, withToken: want{refused, pageWhy}},
		{name: "fetch site same-origin", header: "Sec-Fetch-Site: same-origin\r\n", noToken: want{refused, pageWhy}, withToken: want{refused, pageWhy}},
		// Host: loopback names and addresses, any port, any case.
		{name: "host localhost", host: "localhost", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "host localhost port", host: "localhost:8080", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "host LOCALHOST", host: "LOCALHOST", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "host sub.localhost", host: "app.localhost:8080", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "host 127.0.0.1", host: "127.0.0.1", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "host 127.1.2.3", host: "127.1.2.3:9", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "host ::1", host: "[::1]:8080", noToken: want{ok, ""}, withToken: want{ok, ""}},
		{name: "host mapped", host: "[::ffff:127.0.0.1]:8080", noToken: want{ok, ""}, withToken: want{ok, ""}},
		// Not loopback: a rebinding page's name. With a token, the page
		// cannot authenticate, so Host is free (a proxy may keep it).
		{name: "host evil", host: "evil.example", noToken: want{refused, `Host "evil.example" ` + notLoopbk}, withToken: want{ok, ""}},
		{name: "host evil port", host: "evil.example:8080", noToken: want{refused, `Host "evil.example:8080" ` + notLoopbk}, withToken: want{ok, ""}},
		{name: "host localhost suffix", host: "localhost.evil.example", noToken: want{refused, notLoopbk}, withToken: want{ok, ""}},
		{name: "host unspecified", host: "0.0.0.0:8080", noToken: want{refused, notLoopbk}, withToken: want{ok, ""}},
		{name: "host lan", host: "192.168.1.5:8080", noToken: want{refused, notLoopbk}, withToken: want{ok, ""}},
		// HTTP/1.0 may send no Host; a browser always sends one.
		{name: "http/1.0 no host", proto: "HTTP/1.0", host: "-", noToken: want{ok, ""}, withToken: want{ok, ""}},
		// Both: the page is named first.
		{name: "origin and host", host: "evil.example", header: "Origin: http://evil.example\r\n", noToken: want{refused, pageWhy}, withToken: want{refused, pageWhy}},
	} {
		for _, withToken := range []bool{false, true} {
			name := tc.name + "/no token"
			cfg, w, auth := Config{}, tc.noToken, ""
			if withToken {
				name = tc.name + "/token"
				cfg, w, auth = Config{Token: token}, tc.withToken, "Authorization: Bearer "+token+"\r\n"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, cfg, nil, "", nil)
				addr := strings.TrimPrefix(e.http.URL, "http://")
				proto, host := "HTTP/1.1", addr
				if tc.proto != "" {
					proto = tc.proto
				}
				if tc.host != "" {
					host = tc.host
				}
				hostLine := "Host: " + host + "\r\n"
				if host == "-" {
					hostLine = ""
				}
				for _, path := range []string{"/v1/runs", "/healthz"} {
					head := fmt.Sprintf("POST %s %s\r\n%s%s%sContent-Type: application/json\r\nContent-Length: %d\r\n", path, proto, hostLine, tc.header, auth, len(runBody))
					body := runBody
					if path == "/healthz" {
						head, body = fmt.Sprintf("GET %s %s\r\n%s%s%s", path, proto, hostLine, tc.header, auth), ""
					}
					resp, got := rawRequest(t, addr, head, body)
					if resp.StatusCode != w.code {
						t.Fatalf("%s: %d %s, want %d", path, resp.StatusCode, got, w.code)
					}
					if w.code == ok {
						continue
					}
					var eb errorBody
					if err := json.Unmarshal([]byte(got), &eb); err != nil || eb.Status != "error" || !strings.Contains(eb.Error, w.msg) || strings.Count(got, "\n") != 1 {
						t.Fatalf("%s: %s, want one-line error with %q", path, got, w.msg)
					}
				}
			})
		}
	}
}

// The refusal comes before the body is read and before the token is
// checked: a client that asks "Expect: 100-continue" is told 403 without
// being asked for its body, and a page without the token hears 403, not
// 401. The refusal is logged and counted like any answer.
func TestBrowserRefusedFirst(t *testing.T) {
	const token = "origin-test-token-value"
	e := newEnv(t, Config{Token: token}, &fake{}, "", nil)
	addr := strings.TrimPrefix(e.http.URL, "http://")
	head := "POST /v1/runs HTTP/1.1\r\nHost: " + addr + "\r\nOrigin: https://evil.example\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n"
	resp, body := rawRequest(t, addr, head, "")
	if resp.StatusCode != 403 || resp.Header.Get("WWW-Authenticate") != "" || !strings.Contains(body, "web page") {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	e.fake.mu.Lock()
	calls := e.fake.calls
	e.fake.mu.Unlock()
	if calls != 0 {
		t.Fatalf("%d model calls", calls)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"status":403`) || !strings.Contains(logs, `Origin \"https://evil.example\"`) {
		t.Fatalf("log:\n%s", logs)
	}
	m := e.do("GET", "/metrics", "", "Authorization", "Bearer "+token)
	if !strings.Contains(string(m.body), `tact_http_requests_total{endpoint="other",status="403"} 1`) {
		t.Fatalf("metrics:\n%s", m.body)
	}
	// The Go client, which sends neither header, is a program.
	if r := e.do("GET", "/healthz", "", "Authorization", "Bearer "+token); r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
}

// A long Host is named, cut short, in the one-line error.
func TestRefusedHostClipped(t *testing.T) {
	e := newEnv(t, Config{}, nil, "", nil)
	addr := strings.TrimPrefix(e.http.URL, "http://")
	long := strings.Repeat("a", 5000) + ".example"
	resp, body := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: "+long+"\r\n", "")
	if resp.StatusCode != 403 || len(body) > 600 || !strings.Contains(body, "aaa…") {
		t.Fatalf("%d %d bytes: %.300s", resp.StatusCode, len(body), body)
	}
}

func TestLoopbackHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true}, {"localhost:8080", true}, {"LocalHost:1", true}, {"localhost.", true}, {"localhost.:80", true},
		{"a.localhost", true}, {"a.b.LOCALHOST:80", true}, {"127.0.0.1", true}, {"127.255.255.254:65535", true},
		{"[::1]", true}, {"[::1]:8080", true}, {"::1", true}, {"[0:0:0:0:0:0:0:1]:80", true},
		{"[::ffff:127.0.0.1]:80", true}, {"[::ffff:7f00:1]", true},
		{".localhost", false}, {"localhost.evil.example", false}, {"localhostx", false}, {"localhoſt", false}, {"LOCALHOſT", false}, {"evil-localhost", false},
		{"evil.example", false}, {"evil.example:8080", false}, {"0.0.0.0", false}, {"[::]:80", false},
		{"128.0.0.1", false}, {"127.1", false}, {"2130706433", false}, {"127.0.0.1.", false},
		{"[fe80::1%25lo]:80", false}, {"[::1%25lo]:80", false}, {"[::ffff:10.0.0.1]", false}, {"[::1", false}, {"", false},
	} {
		if got := loopbackHost(tc.host); got != tc.ok {
			t.Errorf("loopbackHost(%q) = %v, want %v", tc.host, got, tc.ok)
		}
	}
}

// FuzzLoopbackHost: any Host header; the answer never depends on case,
// and for an address it is the standard library's notion of loopback.
func FuzzLoopbackHost(f *testing.F) {
	for _, s := range []string{"localhost", "localhost:8080", "a.localhost", "127.0.0.1:80", "[::1]:8080", "[::ffff:127.0.0.1]", "evil.example:80", "[fe80::1%lo]", "0.0.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		got := loopbackHost(h)
		upper := strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, h)
		if up := loopbackHost(upper); up != got {
			t.Fatalf("loopbackHost(%q) = %v but %v in upper case", h, got, up)
		}
		host := h
		if hh, _, err := net.SplitHostPort(h); err == nil {
			host = hh
		} else if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
			host = h[1 : len(h)-1]
		}
		if ip := net.ParseIP(host); ip != nil && got != ip.IsLoopback() {
			t.Fatalf("loopbackHost(%q) = %v, net.IP says loopback %v", h, got, ip.IsLoopback())
		}
		if got && !strings.Contains(strings.ToLower(host), "localhost") && net.ParseIP(host) == nil {
			t.Fatalf("loopbackHost(%q): neither a localhost name nor an address", h)
		}
		// The name a rebinding page would use never passes.
		if _, err := url.Parse("http://" + h); err == nil && strings.HasSuffix(strings.ToLower(host), ".example") && got {
			t.Fatalf("loopbackHost(%q) = true", h)
		}
	})
}
