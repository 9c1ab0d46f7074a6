package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/tactcli/tact/internal/testwait"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/internal/mcptest"
	"github.com/tactcli/tact/tools"
)

// The test binary doubles as the test MCP server (internal/mcptest).
func TestMain(m *testing.M) {
	if v := os.Getenv(mcptest.EnvServe); v != "" {
		os.Exit(mcptest.Main(mcptest.Args(v)))
	}
	os.Exit(m.Run())
}

// logBuf collects a Manager's log lines.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLog(level slog.Level) (*slog.Logger, *logBuf) {
	b := &logBuf{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: level})), b
}

// serverJSON is a config entry that runs this test binary as the server.
func stdioEntry(t *testing.T, extra string, serverArgs ...string) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env, _ := json.Marshal(map[string]string{mcptest.EnvServe: mcptest.EnvValue(serverArgs...)})
	q, _ := json.Marshal(self)
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`{"command": %s, "env": %s%s}`, q, env, extra)
}

func startConfig(t *testing.T, servers map[string]string, lookup map[string]string) (*Manager, *logBuf) {
	t.Helper()
	var parts []string
	for name, entry := range servers {
		parts = append(parts, fmt.Sprintf("%q: %s", name, entry))
	}
	cfg, err := Parse([]byte(`{"mcpServers": {`+strings.Join(parts, ",")+`}}`), "mcp.json", lookupFrom(lookup))
	if err != nil {
		t.Fatal(err)
	}
	log, buf := newLog(slog.LevelDebug)
	m := Start(t.Context(), cfg, nil, Options{ClientVersion: "9.9.9", Log: log, StopGrace: 500 * time.Millisecond})
	t.Cleanup(m.Close)
	return m, buf
}

func toolMap(m *Manager) map[string]*Tool {
	out := map[string]*Tool{}
	for _, t := range m.Tools() {
		out[t.Name()] = t
	}
	return out
}

func run(t *testing.T, tool *Tool, args string) tools.Result {
	t.Helper()
	if tool == nil {
		t.Fatal("no such tool")
	}
	return tool.Run(t.Context(), &tools.Env{}, json.RawMessage(args))
}

func TestStdioServer(t *testing.T) {
	m, log := startConfig(t, map[string]string{
		"t": stdioEntry(t, `"classes": {"run_thing": "read", "missing_tool": "write"}, "disabled_tools": ["pid"]`, "-extra", "30", "-page-size", "7"),
	}, nil)
	byName := toolMap(m)
	// 13 tools + 30 extra, listed 7 a page; bad_schema skipped, pid disabled.
	if len(byName) != 41 {
		t.Fatalf("%d tools: %v\nlog:\n%s", len(byName), m.Tools(), log)
	}
	if st := m.Status(); len(st) != 1 || st[0] != (Status{Name: "t", Transport: "stdio", State: StateReady, Tools: 41}) {
		t.Errorf("status %+v", st)
	}
	for name, class := range map[string]tools.Class{"t.echo": tools.ClassRead, "t.write_note": tools.ClassWrite, "t.run_thing": tools.ClassRead, "t.media": tools.ClassRead} {
		if got := byName[name].Class(); got != class {
			t.Errorf("%s class %s, want %s", name, got, class)
		}
	}
	if byName["t.extra_30"] == nil || byName["t.pid"] != nil || byName["t.bad_schema"] != nil {
		t.Errorf("tools: %v", m.Tools())
	}
	if d := byName["t.echo"].Description(); d != "Echo the text back." {
		t.Errorf("description %q", d)
	}
	for _, want := range []string{
		`msg="MCP tool skipped: invalid input schema" tool=t.bad_schema`,
		`msg="MCP tool schema uses keywords the grammar cannot express; its arguments are validated only" tool=t.code keywords=pattern`,
		`msg="MCP config: \"classes\" names a tool the server does not have" server=t tool=missing_tool`,
		`msg="MCP server stderr" server=t line="mcptest: serving"`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}

	tests := []struct {
		tool, args, out, err string
	}{
		{"t.echo", `{"text":"hi there"}`, "hi there", ""},
		{"t.add", `{"a":2,"b":40}`, "42", ""},
		{"t.whoami", `{}`, "client: tact 9.9.9; authorization: none", ""},
		{"t.fail", `{}`, "something broke", "t.fail reported an error"},
		{"t.media", `{}`, "here:\n[image: image/png, 2 KiB]\n[audio: audio/wav, 10 bytes]\n[resource link: file:///tmp/a.txt, text/plain, 42 bytes, a.txt]\n[resource: mem://b, text/plain, 5 bytes]", ""},
		{"t.code", `{"code":"ABC"}`, "code ABC", ""},
		{"t.code", `{"code":"abc"}`, "", "arguments for t.code: at /code: "},
		{"t.echo", `[1]`, "", "arguments for t.echo: want a JSON object"},
	}
	for _, tt := range tests {
		res := run(t, byName[tt.tool], tt.args)
		errText := ""
		if res.Err != nil {
			errText = res.Err.Error()
		}
		if res.Output != tt.out || (tt.err == "") != (errText == "") || !strings.Contains(errText, tt.err) {
			t.Errorf("%s %s: output %q err %q; want %q, %q", tt.tool, tt.args, res.Output, errText, tt.out, tt.err)
		}
	}
	// The grammar's schema leaves the pattern out; plans and the model see the rest.
	if s := string(byName["t.code"].Schema()); strings.Contains(s, "pattern") || !strings.Contains(s, `"code"`) {
		t.Errorf("grammar schema %s", s)
	}
}

// A server that dies during a call: the call is an error observation, the
// server is restarted once, later calls work; a second death leaves its
// tools failing with a clear error.
func TestCrashRestartsOnce(t *testing.T) {
	m, log := startConfig(t, map[string]string{"t": stdioEntry(t, "")}, nil)
	tools := toolMap(m)
	pid1 := run(t, tools["t.pid"], `{}`).Output
	res := run(t, tools["t.crash"], `{}`)
	want := "t.crash: MCP server t stopped during the call (exited with status 3: mcptest: crashing on purpose); it was restarted, so the call may be tried again"
	if res.Err == nil || res.Err.Error() != want {
		t.Fatalf("crash: %v\nwant %s\nlog:\n%s", res.Err, want, log)
	}
	pid2 := run(t, tools["t.pid"], `{}`).Output
	if pid2 == "" || pid2 == pid1 {
		t.Fatalf("after restart: pid %q (was %q)", pid2, pid1)
	}
	if got := run(t, tools["t.echo"], `{"text":"back"}`); got.Output != "back" || got.Err != nil {
		t.Fatalf("echo after restart: %+v", got)
	}
	res = run(t, tools["t.crash"], `{}`)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "it was restarted once already this run, so its tools are unavailable now") {
		t.Fatalf("second crash: %v", res.Err)
	}
	res = run(t, tools["t.echo"], `{"text":"x"}`)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "MCP server t is not available: stopped, and already restarted once this run") {
		t.Fatalf("after second crash: %v", res.Err)
	}
	if st := m.Status()[0]; st.State != StateFailed {
		t.Errorf("state %s", st.State)
	}
	if n := strings.Count(log.String(), "level=WARN msg=\"MCP server stopped; restarting it (once per run)\""); n != 1 {
		t.Errorf("%d restart warnings:\n%s", n, log)
	}
}

// A call past the server's timeout is cancelled and reported; the server
// stays usable.
func TestSlowCallTimesOut(t *testing.T) {
	m, _ := startConfig(t, map[string]string{"t": stdioEntry(t, `"timeout": 1`)}, nil)
	tools := toolMap(m)
	start := time.Now()
	res := run(t, tools["t.slow"], `{"seconds": 30}`)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v", d)
	}
	if res.Err == nil || res.Err.Error() != "t.slow: no result within 1s (the server's timeout); the call was cancelled" {
		t.Fatalf("slow: %v", res.Err)
	}
	if got := run(t, tools["t.echo"], `{"text":"alive"}`); got.Output != "alive" {
		t.Fatalf("echo after timeout: %+v", got)
	}
}

// A server that does not start is one warning naming it; the others run.
func TestStartFailures(t *testing.T) {
	m, log := startConfig(t, map[string]string{
		"ok":      stdioEntry(t, ""),
		"boom":    stdioEntry(t, "", "-fail-start"),
		"nocmd":   `{"command": "/nonexistent/mcp-server"}`,
		"mute":    `{"command": "sleep", "args": ["60"], "startup_timeout": "1s"}`,
		"novar":   `{"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TACT_TEST_UNSET_VAR}"}}`,
		"refused": `{"url": "http://127.0.0.1:1/mcp", "startup_timeout": 3}`,
		"off":     `{"command": "x", "disabled": true}`,
	}, nil)
	got := map[string]Status{}
	for _, s := range m.Status() {
		got[s.Name] = s
	}
	if got["ok"].State != StateReady || got["off"].State != StateDisabled {
		t.Errorf("status %+v", got)
	}
	wantErr := map[string]string{
		"boom":  "exited with status 1: boom",
		"nocmd": "starting /nonexistent/mcp-server: ",
		"mute":  "no answer within 1s (startup_timeout)",
		"novar": "environment variable TACT_TEST_UNSET_VAR is not set",
	}
	for name, want := range wantErr {
		if got[name].State != StateFailed || !strings.HasPrefix(got[name].Error, want) {
			t.Errorf("%s: %+v, want error %q", name, got[name], want)
		}
	}
	if got["refused"].State != StateFailed {
		t.Errorf("refused: %+v", got["refused"])
	}
	for _, name := range []string{"boom", "nocmd", "mute", "novar", "refused"} {
		if n := strings.Count(log.String(), `level=WARN msg="MCP server `+name+` did not start; its tools are absent" err=`); n != 1 {
			t.Errorf("%d warnings for %s:\n%s", n, name, log)
		}
	}
	for _, tool := range m.Tools() {
		if !strings.HasPrefix(tool.Name(), "ok.") {
			t.Errorf("tool of a failed server: %s", tool.Name())
		}
	}
}

// Start with only: servers a saved plan does not name stay down.
func TestStartOnly(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": `+stdioEntry(t, "")+`, "b": `+stdioEntry(t, "")+`}}`), "m.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := Start(t.Context(), cfg, []string{"b"}, Options{})
	defer m.Close()
	st := m.Status()
	if st[0].State != StateNotStarted || st[1].State != StateReady {
		t.Errorf("status %+v", st)
	}
	reg := m.Registry(tools.DefaultRegistry())
	if _, ok := reg.Get("b.echo"); !ok {
		t.Errorf("registry lacks b.echo: %v", reg.Names())
	}
	if _, ok := reg.Get("a.echo"); ok {
		t.Errorf("registry has a.echo")
	}
	if _, ok := reg.Get("read_file"); !ok {
		t.Errorf("registry lost the built-in tools")
	}
}

// Close ends the server's whole process group, children included.
func TestCloseEndsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	m, _ := startConfig(t, map[string]string{"t": stdioEntry(t, "", "-child", "-pid-file", pidFile)}, nil)
	pids := readPids(t, pidFile)
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("pid %d not running", p)
		}
	}
	start := time.Now()
	m.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	for _, p := range pids {
		if !gone(p, 30*time.Second) {
			t.Errorf("pid %d still running after Close", p)
		}
	}
}

// gone waits until pid has ended (a killed orphan is reaped by init a
// moment later).
func gone(pid int, d time.Duration) bool {
	return eventually(d, func() bool { return !alive(pid) })
}

// eventually polls cond until it holds (true) or d passes. It is these
// tests' one poll: they wait on a state, never for a fixed time.
func eventually(d time.Duration, cond func() bool) bool { return testwait.Until(d, cond) }

func readPids(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// startHTTPServer runs the test server on 127.0.0.1 and returns its URL.
func startHTTPServer(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := startHTTPServerCmd(t, args...)
	return url
}

func startHTTPServerCmd(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	urlFile := filepath.Join(t.TempDir(), "url")
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), mcptest.EnvServe+"="+mcptest.EnvValue(append([]string{"-http", "-url-file", urlFile}, args...)...))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var url string
	if !eventually(time.Minute, func() bool {
		b, err := os.ReadFile(urlFile)
		url = string(b)
		return err == nil && len(b) > 0
	}) {
		t.Fatal("the HTTP server did not start")
	}
	return url, cmd
}

// An HTTP server that goes away mid-run: the call is an error observation
// and one reconnect is tried; when the server is back, calls work again.
func TestHTTPServerDies(t *testing.T) {
	url, cmd := startHTTPServerCmd(t)
	q, _ := json.Marshal(url)
	m, log := startConfig(t, map[string]string{"web": `{"url": ` + string(q) + `, "timeout": 5}`}, nil)
	tools := toolMap(m)
	if got := run(t, tools["web.echo"], `{"text":"one"}`); got.Output != "one" {
		t.Fatalf("echo: %+v\n%s", got, log)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// A new server on the same address, as a restarted service comes back:
	// the old session is unknown to it.
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	startHTTPServerCmd(t, "-addr", addr)
	res := run(t, tools["web.echo"], `{"text":"two"}`)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "MCP server web stopped during the call (") ||
		!strings.HasSuffix(res.Err.Error(), "it was restarted, so the call may be tried again") {
		t.Fatalf("echo after the server went away: %+v\nlog:\n%s", res, log)
	}
	if got := run(t, tools["web.echo"], `{"text":"three"}`); got.Output != "three" {
		t.Fatalf("echo after the reconnect: %+v\nlog:\n%s", got, log)
	}
	// Gone for good: the reconnect was spent, the call fails at once.
	_ = cmd.Process.Kill()
}

// An HTTP server that is down when a call comes: the call fails naming the
// connection error, and reconnecting fails too.
func TestHTTPServerGone(t *testing.T) {
	url, cmd := startHTTPServerCmd(t)
	q, _ := json.Marshal(url)
	m, log := startConfig(t, map[string]string{"web": `{"url": ` + string(q) + `, "timeout": 5, "startup_timeout": 2}`}, nil)
	tools := toolMap(m)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	res := run(t, tools["web.echo"], `{"text":"two"}`)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "connection refused") || !strings.Contains(res.Err.Error(), "; restarting it failed: ") {
		t.Fatalf("echo with the server gone: %+v\nlog:\n%s", res, log)
	}
	res = run(t, tools["web.echo"], `{"text":"three"}`)
	if res.Err == nil || !strings.HasPrefix(res.Err.Error(), "web.echo: MCP server web is not available: restart failed: ") {
		t.Fatalf("echo later: %+v", res)
	}
}

// Streamable HTTP: headers (with ${VAR} secrets) reach the server, calls
// and errors work as over stdio, and a wrong secret is a start failure.
func TestHTTPServer(t *testing.T) {
	url := startHTTPServer(t, "-require-header", "Authorization=Bearer s3cret-token-value", "-extra", "9", "-page-size", "4")
	q, _ := json.Marshal(url)
	m, log := startConfig(t, map[string]string{
		"web":  `{"url": ` + string(q) + `, "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"}, "timeout": 1}`,
		"deny": `{"url": ` + string(q) + `, "headers": {"Authorization": "Bearer wrong"}, "startup_timeout": 5}`,
	}, map[string]string{"MCP_TEST_TOKEN": "s3cret-token-value"})
	tools := toolMap(m)
	if len(tools) != 21 { // 13 tools, bad_schema skipped, 9 extra
		t.Fatalf("%d tools; log:\n%s", len(tools), log)
	}
	if got := run(t, tools["web.whoami"], `{}`); got.Output != "client: tact 9.9.9; authorization: Bearer s3cret-token-value" {
		t.Errorf("whoami: %+v", got)
	}
	// The server closes the call's SSE stream; the client resumes it
	// (Last-Event-ID) and gets the result.
	if got := run(t, tools["web.resume"], `{}`); got.Output != "resumed" || got.Err != nil {
		t.Errorf("resume: %+v", got)
	}
	if got := run(t, tools["web.add"], `{"a":1,"b":2}`); got.Output != "3" {
		t.Errorf("add: %+v", got)
	}
	if got := run(t, tools["web.fail"], `{}`); got.Err == nil || got.Output != "something broke" {
		t.Errorf("fail: %+v", got)
	}
	got := run(t, tools["web.slow"], `{"seconds": 30}`)
	if got.Err == nil || !strings.Contains(got.Err.Error(), "no result within 1s") {
		t.Errorf("slow: %+v", got)
	}
	st := map[string]Status{}
	for _, s := range m.Status() {
		st[s.Name] = s
	}
	if st["deny"].State != StateFailed || st["web"].State != StateReady {
		t.Errorf("status %+v", st)
	}
	// The manager's own log never holds the secret (the CLI's redactor
	// covers stderr too; this checks tact does not log headers at all).
	if strings.Contains(log.String(), "s3cret-token-value") {
		t.Errorf("log holds the secret:\n%s", log)
	}
}

func TestClassOfAnnotations(t *testing.T) {
	m, _ := startConfig(t, map[string]string{"t": stdioEntry(t, `"classes": {"write_note": "exec", "echo": "write"}`)}, nil)
	byName := toolMap(m)
	if byName["t.write_note"].Class() != tools.ClassExec || byName["t.echo"].Class() != tools.ClassWrite || byName["t.run_thing"].Class() != tools.ClassExec {
		t.Errorf("classes: %s %s %s", byName["t.write_note"].Class(), byName["t.echo"].Class(), byName["t.run_thing"].Class())
	}
}

// A server found dead before a call (killed between calls) is restarted
// first, and the call goes through.
func TestDeadBetweenCallsRestarts(t *testing.T) {
	m, _ := startConfig(t, map[string]string{"t": stdioEntry(t, "")}, nil)
	tools := toolMap(m)
	pid, err := strconv.Atoi(run(t, tools["t.pid"], `{}`).Output)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !gone(pid, time.Minute) {
		t.Fatal("server still running")
	}
	// The session notices: its done channel closes.
	srv := m.servers[0]
	srv.mu.Lock()
	done := srv.done
	srv.mu.Unlock()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the session did not notice that its server died")
	}
	if got := run(t, tools["t.echo"], `{"text":"again"}`); got.Output != "again" || got.Err != nil {
		t.Fatalf("echo after the server was killed: %+v", got)
	}
}

func TestResultTextStructured(t *testing.T) {
	res := &sdk.CallToolResult{StructuredContent: map[string]any{"temp": 21}}
	if got := ResultText(res); got != `{"temp":21}` {
		t.Errorf("structured: %q", got)
	}
	res.Content = []sdk.Content{&sdk.TextContent{Text: "21 degrees"}}
	if got := ResultText(res); got != "21 degrees" {
		t.Errorf("text wins: %q", got)
	}
}

// A JSON-RPC error from a live server (an unknown tool) is the call's
// error, at once, and does not restart the server.
func TestProtocolErrorIsNotADeath(t *testing.T) {
	m, log := startConfig(t, map[string]string{"t": stdioEntry(t, "")}, nil)
	tools := toolMap(m)
	bogus := *tools["t.echo"]
	bogus.remote = "no_such_tool"
	start := time.Now()
	res := run(t, &bogus, `{}`)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "no_such_tool") || strings.Contains(res.Err.Error(), "stopped") {
		t.Fatalf("unknown tool: %+v", res)
	}
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("took %v", d)
	}
	if strings.Contains(log.String(), "restarting") {
		t.Errorf("restarted:\n%s", log)
	}
}

func TestCapText(t *testing.T) {
	if got := capText("héllo", 2); got != "h…" {
		t.Errorf("cut inside a character: %q", got)
	}
	if got := capText("hello", 5); got != "hello" {
		t.Errorf("no cut needed: %q", got)
	}
}
