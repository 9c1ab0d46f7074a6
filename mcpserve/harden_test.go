package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/config"
)

// TestRunSchemaLimits: tact_exec's schema argument has the step API's
// depth and size limits, checked before it is compiled.
func TestRunSchemaLimits(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(nil)
	rows := []any{map[string]any{"tool": "final_answer", "args": map[string]any{"answer": "x"}}}
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 100) + `{}` + strings.Repeat(`}}`, 100)
	for _, c := range []struct{ schema, want string }{
		{deep, "schema: the schema nests 201 levels deep, at most 64"},
		{`{"description":"` + strings.Repeat("x", 70000) + `"}`, "schema: the schema takes"},
	} {
		text, isErr := call(t, cs, "tact_exec", map[string]any{"rows": rows, "schema": json.RawMessage(c.schema)})
		if !isErr || !strings.Contains(text, c.want) {
			t.Fatalf("%v %.200q, want an error holding %q", isErr, text, c.want)
		}
	}
}

// yesClient answers every elicitation "yes" (a client approving its own
// calls) and reports each question on asked.
func yesClient(asked chan<- string) *sdk.ClientOptions {
	return &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		if asked != nil {
			asked <- req.Params.Message
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
	}}
}

// TestDirectCallsGoThroughHooksAndApprover: a client's own tools/call of
// run_command, write_file or read_file meets the user's PreToolUse hooks,
// and --approve-cmd decides what it would otherwise ask the client: a
// client answering its own elicitation "yes" gets nothing the approver
// denies.
func TestDirectCallsGoThroughHooksAndApprover(t *testing.T) {
	dir := t.TempDir()
	hooksFile := filepath.Join(dir, "hooks.json")
	// Blocks any call whose input mentions "forbidden"; logs every call.
	os.WriteFile(hooksFile, []byte(`{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"in=$(cat); echo \"$TACT_RUN_ID\" >> `+dir+`/calls; case \"$in\" in *forbidden*) echo no forbidden >&2; exit 2;; esac; exit 0"}]}]}}`), 0o600)
	f := newFixture(t, func(s *config.Settings) {
		s.Hooks = hooksFile
		// Approves only writes of ok.txt.
		s.ApproveCmd = `jq -e '.path == "ok.txt"' >/dev/null`
	})
	needJQ(t)
	asked := make(chan string, 8)
	cs := f.connect(yesClient(asked))
	for _, c := range []struct {
		tool string
		args map[string]any
		want string // "" : it ran
	}{
		{"run_command", map[string]any{"command": "echo forbidden > x"}, "blocked by hook: no forbidden"},
		{"read_file", map[string]any{"path": "forbidden.txt"}, "blocked by hook: no forbidden"},
		{"write_file", map[string]any{"path": "evil.txt", "content": "x"}, "denied by --approve-cmd"},
		{"write_file", map[string]any{"path": "ok.txt", "content": "fine"}, ""},
	} {
		text, isErr := call(t, cs, c.tool, c.args)
		if c.want == "" {
			if isErr {
				t.Errorf("%s %v: %q", c.tool, c.args, text)
			}
			continue
		}
		if !isErr || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: %v %q, want an error holding %q", c.tool, c.args, isErr, text, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, "evil.txt")); err == nil {
		t.Error("evil.txt was written: the client's own yes got round --approve-cmd")
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "ok.txt")); string(b) != "fine" {
		t.Errorf("ok.txt holds %q", b)
	}
	select {
	case q := <-asked:
		t.Errorf("the client was asked %q; --approve-cmd decides", q)
	default:
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calls")); strings.Count(string(b), "\n") != 4 {
		t.Errorf("the hook saw %q, want 4 calls", b)
	}
}

func needJQ(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed: the approver is written with it")
	}
}

// TestSessionsAskIndependently: session A's unanswered question (a
// tact_exec step waiting for approval) does not hold up session B's.
func TestSessionsAskIndependently(t *testing.T) {
	f := newFixture(t, nil)
	release := make(chan struct{})
	aAsked := make(chan struct{}, 1)
	a := f.connect(&sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		select { // a denied write may be asked again: never block here
		case aAsked <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "no"}}, nil
	}})
	b := f.connect(yesClient(nil))
	rows := func(name string) []any {
		return []any{map[string]any{"tool": "write_file", "args": map[string]any{"path": name, "content": "x"}},
			map[string]any{"tool": "final_answer", "args": map[string]any{"answer": "done"}}}
	}
	aDone := make(chan struct{})
	// Answer A and let its run end before the sessions close: a client
	// closing while the server still waits on its question hangs both.
	defer func() { close(release); <-aDone }()
	go func() {
		defer close(aDone)
		a.CallTool(context.Background(), &sdk.CallToolParams{Name: "tact_exec", Arguments: map[string]any{"query": "a", "rows": rows("a.txt")}})
	}()
	<-aAsked
	// A is waiting for its client's answer; B's run asks its own.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a bound only for the failing case
	defer cancel()
	res, err := b.CallTool(ctx, &sdk.CallToolParams{Name: "tact_exec", Arguments: map[string]any{"query": "b", "rows": rows("b.txt")}})
	if err != nil {
		t.Fatalf("session B waited on session A's question: %v", err)
	}
	if text := resultText(res); res.IsError || !strings.Contains(text, "done") {
		t.Fatalf("session B: %v %q", res.IsError, text)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "b.txt")); err != nil {
		t.Errorf("b.txt: %v", err)
	}
	select {
	case <-aDone:
		t.Error("session A's run ended before its question was answered")
	default:
	}
}

// TestPartialBodyHoldsNoOne: a client that sends a new session's headers
// and part of its body does not stop another client from opening one.
func TestPartialBodyHoldsNoOne(t *testing.T) {
	f := newFixture(t, nil)
	hs := httptest.NewServer(f.srv.Handler(HTTPOptions{MaxSessions: 4}))
	defer hs.Close()
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	// The server is reading that body now; another client initializes.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a bound only for the failing case
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL}, &sdk.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatalf("a second client could not open a session while the first sent half a body: %v", err)
	}
	cs.Close()
}

// TestExecFIFOPathDoesNotHang: tact_exec of a FIFO in the workspace is
// refused at once, not opened (which waits for a writer).
func TestExecFIFOPathDoesNotHang(t *testing.T) {
	f := newFixture(t, nil)
	if err := syscall.Mkfifo(filepath.Join(f.ws, "plan.fifo"), 0o600); err != nil {
		t.Skip(err)
	}
	text, isErr := call(t, f.connect(nil), "tact_exec", map[string]any{"path": "plan.fifo"})
	if !isErr || !strings.Contains(text, "is a named pipe (FIFO), not a regular file") {
		t.Fatalf("%v %q", isErr, text)
	}
}

// TestLoopbackBySpellingOnly: only localhost and literal loopback
// addresses are loopback; a name under .localhost may resolve anywhere.
// Origins of this machine's loopback are accepted (the MCP
// specification's DNS rebinding rule), all others refused.
func TestLoopbackBySpellingOnly(t *testing.T) {
	for _, addr := range []string{"evil.localhost:8090", "lan.localhost.:1", "localhost.evil.com:1"} {
		if err := CheckAddr(addr, ""); err == nil {
			t.Errorf("CheckAddr(%q) accepted without a token", addr)
		}
	}
	f := newFixture(t, nil)
	h := f.srv.Handler(HTTPOptions{})
	for _, c := range []struct {
		host, origin string
		forbidden    bool
	}{
		{"x.localhost:8090", "", true},
		{"localhost:8090", "", false},
		{"127.0.0.1:8090", "http://localhost:3000", false},
		{"127.0.0.1:8090", "http://127.0.0.1", false},
		{"127.0.0.1:8090", "https://[::1]:8443", false},
		{"127.0.0.1:8090", "http://evil.example", true},
		{"127.0.0.1:8090", "http://x.localhost", true},
		{"127.0.0.1:8090", "http://localhost.evil.example", true},
		{"127.0.0.1:8090", "null", true},
		{"127.0.0.1:8090", "file://localhost", true},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/", strings.NewReader(`{}`))
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if (w.Code == http.StatusForbidden) != c.forbidden {
			t.Errorf("Host %q Origin %q: status %d", c.host, c.origin, w.Code)
		}
	}
}

// TestElicitationNeutralizesControls: a question naming a file whose name
// holds bidi or control characters reaches the client with them as
// \uXXXX, never raw.
func TestElicitationNeutralizesControls(t *testing.T) {
	f := newFixture(t, nil)
	asked := make(chan string, 1)
	cs := f.connect(yesClient(asked))
	name := "report\u202etxt.exe\x1b[2J"
	call(t, cs, "write_file", map[string]any{"path": name, "content": "x"})
	q := <-asked
	if strings.ContainsAny(q, "\u202e\x1b") || !strings.Contains(q, `\u202e`) {
		t.Fatalf("question %q", q)
	}
}
