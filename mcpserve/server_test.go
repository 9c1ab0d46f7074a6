package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/sandbox"
	"github.com/tactcli/tact/tools"
)

// TestMain lets this test binary serve as run_command's sandbox helper.
func TestMain(m *testing.M) {
	sandbox.ServeHelper()
	os.Exit(m.Run())
}

const testSecret = "mcpserve-s3cret-value-42"

// fixture is a server on a fresh workspace and a client session on it.
type fixture struct {
	t   *testing.T
	ws  string
	rt  *agent.Runtime
	srv *Server
}

// newFixture opens a runtime on a fresh workspace with edit applied to
// the defaults, and the server on it.
func newFixture(t *testing.T, edit func(s *config.Settings)) *fixture {
	t.Helper()
	t.Setenv("MCPSERVE_TEST_TOKEN", testSecret)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	s := config.Defaults()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config")) // no user MCP servers file
	s.Workspace, s.Backend, s.Policy, s.History, s.MCPConfig = ws, "none", filepath.Join(dir, "policy.json"), false, ""
	if edit != nil {
		edit(s)
	}
	rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "mcp-serve", MCPServers: []string{}, Prompter: Prompter(s.NoInput), History: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &fixture{t: t, ws: ws, rt: rt, srv: New(rt, Config{Version: "test"})}
}

// legacy is the protocol version before multi round-trip requests: a
// question is elicited while the call waits.
const legacy = "2025-11-25"

// connect starts a session on protocol 2025-11-25 over in-memory
// transports; opts may add the client's elicitation handler.
func (f *fixture) connect(opts *sdk.ClientOptions) *sdk.ClientSession {
	f.t.Helper()
	return f.connectAt(opts, legacy)
}

// connectAt starts a session on protocol version (the SDK's newest when
// "") over in-memory transports.
func (f *fixture) connectAt(opts *sdk.ClientOptions, version string) *sdk.ClientSession {
	f.t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := f.srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		f.t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		f.t.Fatalf("protocol %s, want %s", got, version)
	}
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

func (f *fixture) write(name, content string) {
	f.t.Helper()
	p := filepath.Join(f.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// call calls a tool and returns its text and isError.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resultText(res), res.IsError
}

func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsListAnnotations(t *testing.T) {
	f := newFixture(t, func(s *config.Settings) { s.NoNetwork = true })
	res, err := f.connect(nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ read, destructive, idempotent, openWorld bool }
	want := map[string]hints{
		"read_file": {true, false, true, false}, "list_files": {true, false, true, false},
		"search_files": {true, false, true, false}, "jq": {true, false, true, false},
		"write_file": {false, true, true, false}, "edit_file": {false, true, false, false},
		"run_command": {false, true, false, false}, // --no-network: closed world
		"tact_exec":   {false, true, false, false},
	}
	// Every other built-in tool is listed too (a new one needs no change
	// here); a read tool's hints follow from its class.
	for _, bt := range tools.Builtins() {
		if _, ok := want[bt.Name()]; !ok && bt.Name() != tools.FinalAnswer {
			if bt.Class() != tools.ClassRead {
				t.Fatalf("%s: add its hints to this test", bt.Name())
			}
			want[bt.Name()] = hints{true, false, true, false}
		}
	}
	got := map[string]hints{}
	for _, tl := range res.Tools {
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Fatalf("%s: annotations %+v, want every hint set", tl.Name, a)
		}
		got[tl.Name] = hints{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}
		if raw, _ := json.Marshal(tl.InputSchema); !strings.Contains(string(raw), `"type":"object"`) {
			t.Errorf("%s: input schema %s", tl.Name, raw)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tools %v, want %v (no final_answer, no tact_run without a model)", got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: hints %+v, want %+v", name, got[name], w)
		}
	}
}

func TestAllowToolsNarrowsTheList(t *testing.T) {
	f := newFixture(t, func(s *config.Settings) { s.AllowTools = []string{"read_file"} })
	res, err := f.connect(nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "read_file,tact_exec" && strings.Join(names, ",") != "tact_exec,read_file" {
		t.Errorf("tools %v, want read_file and tact_exec", names)
	}
}

func TestEachBuiltinTool(t *testing.T) {
	f := newFixture(t, func(s *config.Settings) { s.Yes = true })
	f.write("notes.txt", "alpha\nbeta\n")
	f.write("data.json", `{"items":[1,2,3]}`)
	cs := f.connect(nil)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": "notes.txt"}, "beta"},
		{"list_files", map[string]any{"path": "."}, "data.json"},
		{"search_files", map[string]any{"pattern": "alpha"}, "notes.txt"},
		{"jq", map[string]any{"path": "data.json", "filter": ".items | length"}, "3"},
		{"write_file", map[string]any{"path": "out/new.txt", "content": "gamma\n"}, ""},
		{"edit_file", map[string]any{"path": "notes.txt", "old_string": "beta", "new_string": "delta"}, ""},
		{"run_command", map[string]any{"command": "cat notes.txt out/new.txt"}, "delta"},
	} {
		text, isErr := call(t, cs, tc.tool, tc.args)
		if isErr || !strings.Contains(text, tc.want) {
			t.Errorf("%s: %q (isError %v), want it to hold %q", tc.tool, text, isErr, tc.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "out", "new.txt")); string(b) != "gamma\n" {
		t.Errorf("write_file wrote %q", b)
	}
	text, isErr := call(t, cs, "read_file", map[string]any{"path": "missing.txt"})
	if !isErr || text == "" {
		t.Errorf("a missing file: %q isError %v, want an error with its reason", text, isErr)
	}
}

func TestWritesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(dir string, s *config.Settings)
		want string
	}{
		{"read-only", func(_ string, s *config.Settings) { s.ReadOnly, s.Yes = true, true }, "read-only mode"},
		{"deny rule", func(dir string, s *config.Settings) {
			os.WriteFile(filepath.Join(dir, "policy.json"), []byte(`{"deny":[{"tool":"write_file"}]}`), 0o644)
			s.Yes = true
		}, "deny rule"},
		{"unattended", func(string, *config.Settings) {}, "unattended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(s *config.Settings) { tc.edit(filepath.Dir(s.Policy), s) })
			text, isErr := call(t, f.connect(nil), "write_file", map[string]any{"path": "x.txt", "content": "no"})
			if !isErr || !strings.Contains(text, tc.want) {
				t.Errorf("%q isError %v, want a denial naming %q", text, isErr, tc.want)
			}
			if _, err := os.Stat(filepath.Join(f.ws, "x.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the file was written (%v)", err)
			}
		})
	}
}

func TestSymlinkOutRefused(t *testing.T) {
	f := newFixture(t, nil)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("outside the workspace"), 0o644)
	if err := os.Symlink(outside, filepath.Join(f.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	text, isErr := call(t, f.connect(nil), "read_file", map[string]any{"path": "link.txt"})
	if !isErr || strings.Contains(text, "outside the workspace") || !strings.Contains(text, "escapes the workspace") {
		t.Errorf("%q isError %v, want a refusal", text, isErr)
	}
}

func TestKernelBlocksWritesOutside(t *testing.T) {
	if sandbox.DetectLandlockABI() == 0 {
		t.Skip("Landlock is not available here")
	}
	f := newFixture(t, func(s *config.Settings) { s.Yes = true })
	outside := filepath.Join(t.TempDir(), "escaped.txt")
	text, isErr := call(t, f.connect(nil), "run_command", map[string]any{"command": "sh -c 'echo x > " + outside + "'"})
	if !isErr {
		t.Errorf("%q: want a failure", text)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command wrote outside the workspace (%v); result %q", err, text)
	}
}

func TestSecretRedacted(t *testing.T) {
	f := newFixture(t, nil)
	f.write("config.txt", "token="+testSecret+"\n")
	cs := f.connect(nil)
	for _, tool := range []string{"read_file", "search_files"} {
		args := map[string]any{"path": "config.txt"}
		if tool == "search_files" {
			args = map[string]any{"pattern": "token"}
		}
		text, _ := call(t, cs, tool, args)
		if strings.Contains(text, testSecret) || !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s: %q, want the secret redacted", tool, text)
		}
	}
}

func TestCancelKillsCommand(t *testing.T) {
	f := newFixture(t, func(s *config.Settings) { s.Yes = true })
	cs := f.connect(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": `sh -c 'echo $$ > pid.txt; exec sleep 300'`}})
		done <- err
	}()
	waitPID(t, filepath.Join(f.ws, "pid.txt"), done)
	// Its $$ is a pid of the command's own PID namespace: the system's
	// pids are those working in the workspace.
	pids := processesIn(f.ws)
	if len(pids) == 0 {
		t.Fatal("no process runs in the workspace")
	}
	cancel()
	<-done
	// The tool ends the command's process group and reaps it.
	for _, pid := range pids {
		for alive(pid) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// processesIn lists the live processes whose working directory is dir.
func processesIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// waitPID waits until the command has written its pid.
func waitPID(t *testing.T, path string, done <-chan error) int {
	t.Helper()
	for {
		select {
		case err := <-done:
			t.Fatalf("the call ended before the command wrote its pid: %v", err)
		default:
		}
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	// A zombie is gone but for its parent's wait.
	return err == nil && !strings.Contains(string(b), ") Z ")
}

func TestElicitation(t *testing.T) {
	f := newFixture(t, nil)
	asked := make(chan string, 4)
	answer := "yes"
	elicit := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked <- req.Params.Message
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}, nil
	}}
	cs := f.connect(elicit)
	text, isErr := call(t, cs, "write_file", map[string]any{"path": "approved.txt", "content": "ok\n"})
	if isErr {
		t.Fatalf("approved write: %q", text)
	}
	if q := <-asked; !strings.Contains(q, "approved.txt") {
		t.Errorf("the question %q does not name the file", q)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "approved.txt")); string(b) != "ok\n" {
		t.Errorf("approved.txt holds %q", b)
	}
	answer = "no"
	if text, isErr := call(t, cs, "write_file", map[string]any{"path": "rejected.txt", "content": "no\n"}); !isErr || !strings.Contains(text, "rejected") {
		t.Errorf("rejected write: %q isError %v", text, isErr)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "rejected.txt")); err == nil {
		t.Error("rejected.txt was written")
	}

	// A client without elicitation is not asked: denied at once.
	plain := f.connect(nil)
	start := time.Now()
	text, isErr = call(t, plain, "write_file", map[string]any{"path": "plain.txt", "content": "no\n"})
	if !isErr || !strings.Contains(text, "denied") {
		t.Errorf("no elicitation: %q isError %v, want a denial", text, isErr)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the denial took %s", took)
	}
}

// TestDenyWinsOverElicitation: a deny rule is never put to the client.
func TestDenyWinsOverElicitation(t *testing.T) {
	f := newFixture(t, func(s *config.Settings) {
		os.WriteFile(s.Policy, []byte(`{"deny":[{"tool":"run_command"}]}`), 0o644)
	})
	cs := f.connect(&sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		t.Error("asked despite the deny rule")
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
	}})
	if text, isErr := call(t, cs, "run_command", map[string]any{"command": "true"}); !isErr || !strings.Contains(text, "deny rule") {
		t.Errorf("%q isError %v", text, isErr)
	}
}

func scriptFile(t *testing.T, dir string, actions ...string) string {
	t.Helper()
	var b strings.Builder
	for _, a := range actions {
		line, _ := json.Marshal(map[string]any{"kind": "action", "text": a})
		b.Write(line)
		b.WriteByte('\n')
	}
	p := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunOnScriptWithProgress(t *testing.T) {
	dir := t.TempDir()
	script := scriptFile(t, dir,
		`{"thought":"read the notes first","tool":"read_file","args":{"path":"notes.txt"}}`,
		`{"thought":"the notes say alpha","tool":"final_answer","args":{"answer":"the notes say alpha"}}`)
	f := newFixture(t, func(s *config.Settings) { s.Backend, s.Script = "script", script })
	f.write("notes.txt", "alpha\n")
	notes := make(chan string, 16)
	cs := f.connect(&sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		notes <- req.Params.Message
	}})
	params := &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "what do the notes say?", "no_plan": true}}
	params.SetProgressToken("run-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || resultText(res) != "the notes say alpha" {
		t.Fatalf("tact_run: %q isError %v", resultText(res), res.IsError)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["termination_reason"] != "success" || sc["success"] != true {
		t.Errorf("structured content %v", sc)
	}
	// The client may handle a notification after the call's answer: wait
	// for them.
	progress := awaitProgress(t, notes, 2)
	if !strings.Contains(progress[0], "read_file") || !strings.Contains(progress[1], "final_answer") {
		t.Errorf("progress %q, want one per step", progress)
	}
}

func TestExecInlineRowsWithoutModel(t *testing.T) {
	f := newFixture(t, nil)
	f.write("notes.txt", "alpha\n")
	cs := f.connect(nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "tact_exec", Arguments: map[string]any{
		"query": "read the notes", "rows": []any{map[string]any{"tool": "read_file", "args": map[string]any{"path": "notes.txt"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["termination_reason"] == nil {
		t.Errorf("tact_exec: %q, structured %v; want a result with a termination reason", resultText(res), sc)
	}
	// A plan path outside the workspace is refused.
	text, isErr := call(t, cs, "tact_exec", map[string]any{"path": "../plan.jsonl"})
	if !isErr || !strings.Contains(text, "escapes the workspace") {
		t.Errorf("plan outside: %q isError %v", text, isErr)
	}
}

func TestHTTPSessions(t *testing.T) {
	f := newFixture(t, nil)
	f.write("notes.txt", "alpha\n")
	hs := httptest.NewServer(f.srv.Handler(HTTPOptions{MaxSessions: 2}))
	defer hs.Close()
	open := func() (*sdk.ClientSession, error) {
		// Sessions are 2025-11-25's: 2026-07-28 is stateless.
		return sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, &sdk.ClientSessionOptions{ProtocolVersion: legacy})
	}
	var sessions []*sdk.ClientSession
	for range 2 {
		cs, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	if cs, err := open(); err == nil {
		cs.Close()
		t.Error("a third session was opened despite --max-sessions 2")
	}
	// Concurrent calls on both sessions.
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for _, cs := range sessions {
		for range 10 {
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
				if err != nil || res.IsError || !strings.Contains(resultText(res), "alpha") {
					errs <- "read_file failed"
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// A session that ends frees its place.
	sessions[0].Close()
	for {
		cs, err := open()
		if err == nil {
			cs.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTPRefusesPagesAndWrongTokens(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name   string
		o      HTTPOptions
		header map[string]string
		host   string
		want   int
	}{
		{"origin", HTTPOptions{}, map[string]string{"Origin": "http://evil.example"}, "", http.StatusForbidden},
		{"cross-site", HTTPOptions{}, map[string]string{"Sec-Fetch-Site": "cross-site"}, "", http.StatusForbidden},
		{"rebinding", HTTPOptions{}, nil, "evil.example:80", http.StatusForbidden},
		{"no token", HTTPOptions{Token: "t0k"}, nil, "", http.StatusUnauthorized},
		{"wrong token", HTTPOptions{Token: "t0k"}, map[string]string{"Authorization": "Bearer nope"}, "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/", strings.NewReader(`{}`))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			w := httptest.NewRecorder()
			f.srv.Handler(tc.o).ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Errorf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
		})
	}
}

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:0", "", true}, {"localhost:8090", "", true}, {"[::1]:1", "", true},
		{"0.0.0.0:8090", "", false}, {":8090", "", false}, {"0.0.0.0:8090", "t", true}, {"nonsense", "", false},
	} {
		if err := CheckAddr(tc.addr, tc.token); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %q) = %v", tc.addr, tc.token, err)
		}
	}
}

// TestCallsRunConcurrently: a call that waits for a second one's effect
// ends only if both run at once, on one session.
func TestCallsRunConcurrently(t *testing.T) {
	f := newFixture(t, func(s *config.Settings) { s.Yes = true })
	cs := f.connect(nil)
	waiting := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_command",
			Arguments: map[string]any{"command": `sh -c 'touch started; while [ ! -f second ]; do sleep 0.01; done; echo both'`}})
		if err != nil {
			t.Error(err)
		}
		waiting <- res
	}()
	waitFile(t, filepath.Join(f.ws, "started"))
	if text, isErr := call(t, cs, "write_file", map[string]any{"path": "second", "content": ""}); isErr {
		t.Fatalf("second call: %q", text)
	}
	if res := <-waiting; res == nil || !strings.Contains(resultText(res), "both") {
		t.Errorf("the first call: %+v", res)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNoInputNeverAsks: --no-input asks nobody, even a client that could
// be asked.
func TestNoInputNeverAsks(t *testing.T) {
	f := newFixture(t, func(s *config.Settings) { s.NoInput = true })
	cs := f.connect(&sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		t.Error("asked despite --no-input")
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
	}})
	if text, isErr := call(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "no"}); !isErr || !strings.Contains(text, "unattended") {
		t.Errorf("%q isError %v", text, isErr)
	}
}

// BenchmarkHTTPLoad is the load check: 8 HTTP sessions at once,
// each making 50 calls of list_files and read_file in turn; it reports
// the calls' p50 and p99 latency. Every call must succeed.
func BenchmarkHTTPLoad(b *testing.B) {
	const sessions, calls = 8, 50
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	for i := range 20 {
		os.WriteFile(filepath.Join(ws, "src", "f"+strconv.Itoa(i)+".txt"), []byte(strings.Repeat("line of text\n", 50)), 0o644)
	}
	s := config.Defaults()
	b.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	s.Workspace, s.Backend, s.Policy, s.History, s.MCPConfig = ws, "none", filepath.Join(dir, "policy.json"), false, ""
	rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "mcp-serve", MCPServers: []string{}})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	hs := httptest.NewServer(New(rt, Config{Version: "bench"}).Handler(HTTPOptions{MaxSessions: sessions}))
	defer hs.Close()
	var all []time.Duration
	for b.Loop() {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range sessions {
			wg.Go(func() {
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
				if err != nil {
					b.Error(err)
					return
				}
				defer cs.Close()
				for i := range calls {
					p := &sdk.CallToolParams{Name: "list_files", Arguments: map[string]any{"path": "src"}}
					if i%2 == 1 {
						p = &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "src/f" + strconv.Itoa(i%20) + ".txt"}}
					}
					start := time.Now()
					res, err := cs.CallTool(context.Background(), p)
					took := time.Since(start)
					if err != nil || res.IsError {
						b.Errorf("%s: %v %v", p.Name, err, res)
						return
					}
					mu.Lock()
					all = append(all, took)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(len(all)), "calls")
	}
}

// tact_run's schema argument shapes the answer as tact run --schema does:
// a JSON value, its compact JSON the text; a schema that does not compile
// is the call's error.
func TestRunWithSchema(t *testing.T) {
	dir := t.TempDir()
	script := scriptFile(t, dir,
		`{"thought":"the count is known already","tool":"final_answer","args":{"answer":{"count":2}}}`)
	f := newFixture(t, func(s *config.Settings) { s.Backend, s.Script = "script", script })
	cs := f.connect(nil)
	sch := map[string]any{"type": "object", "properties": map[string]any{"count": map[string]any{"type": "integer"}}, "required": []any{"count"}}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "how many?", "no_plan": true, "schema": sch}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || resultText(res) != `{"count":2}` {
		t.Fatalf("tact_run with a schema: %q isError %v", resultText(res), res.IsError)
	}
	text, isErr := call(t, cs, "tact_run", map[string]any{"query": "q", "schema": map[string]any{"type": "nope"}})
	if !isErr || !strings.Contains(text, "schema") {
		t.Errorf("a bad schema: %q isError %v", text, isErr)
	}
}

// awaitProgress waits for n progress notifications (the client handles
// them on its own goroutine, maybe after the call's answer).
func awaitProgress(t *testing.T, notes <-chan string, n int) []string {
	t.Helper()
	var got []string
	deadline := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case m := <-notes:
			got = append(got, m)
		case <-deadline:
			t.Fatalf("progress %q, want %d notifications", got, n)
		}
	}
	return got
}
