package main

// tact mcp serve end to end: this test binary started as `tact mcp serve`
// with the Go SDK as the client, over stdio and over --http on
// 127.0.0.1:0, and --print-config.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/tools"
)

// servedTools is how many tools tact mcp serve lists without a model: the
// built-in tools but final_answer, and tact_exec. A new tool changes it
// without an edit here.
func servedTools() int { return len(tools.Builtins()) }

const mcpServeSecret = "e2e-mcp-serve-s3cret-77"

// newMCPServeCase is a scratch home whose environment holds a secret.
func newMCPServeCase(t *testing.T) *e2eCase {
	c := newFilesCase(t)
	c.env = append(c.env, "MCP_SERVE_TEST_TOKEN="+mcpServeSecret)
	c.wsFile("notes.txt", "alpha\ntoken="+mcpServeSecret+"\n")
	return c
}

// connectStdio starts tact mcp serve ARGS as the client's subprocess.
func connectStdio(t *testing.T, c *e2eCase, opts *sdk.ClientOptions, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(c.bin, append([]string{"mcp", "serve", "--workspace", c.ws, "--policy", c.pol}, args...)...)
	cmd.Env = c.env
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, opts).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestMCPServeStdio(t *testing.T) {
	c := newMCPServeCase(t)
	cs := connectStdio(t, c, nil, "--read-only")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	hints := map[string]bool{}
	for _, tl := range res.Tools {
		hints[tl.Name] = tl.Annotations != nil && tl.Annotations.ReadOnlyHint
	}
	if !hints["read_file"] || hints["run_command"] || len(hints) != servedTools() {
		t.Errorf("tools and readOnlyHint: %v", hints)
	}
	text, isErr := callText(t, cs, "read_file", map[string]any{"path": "notes.txt"})
	if isErr || !strings.Contains(text, "alpha") || strings.Contains(text, mcpServeSecret) || !strings.Contains(text, "[REDACTED]") {
		t.Errorf("read_file: %q isError %v, want the notes with the secret redacted", text, isErr)
	}
	text, isErr = callText(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "no"})
	if !isErr || !strings.Contains(text, "read-only") {
		t.Errorf("write_file under --read-only: %q isError %v", text, isErr)
	}
}

func TestMCPServeRunOnScript(t *testing.T) {
	c := newMCPServeCase(t)
	replies := c.file("script.jsonl", script(t,
		reply("read_file", map[string]any{"path": "notes.txt"}),
		answer("the notes say alpha")))
	notes := make(chan string, 16)
	cs := connectStdio(t, c, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		notes <- req.Params.Message
	}}, "--backend", "script", "--script", replies)
	params := &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "what do the notes say?", "no_plan": true}}
	params.SetProgressToken(1)
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || sc["final_answer"] != "the notes say alpha" || sc["termination_reason"] != "success" {
		t.Errorf("tact_run: isError %v, structured %v", res.IsError, sc)
	}
	// The client may handle a notification after the call's answer: wait
	// for one a step.
	deadline := time.After(30 * time.Second)
	for got := 0; got < 2; got++ {
		select {
		case <-notes:
		case <-deadline:
			t.Fatalf("%d progress notifications, want one per step (2)", got)
		}
	}
}

func TestMCPServeHTTP(t *testing.T) {
	c := newMCPServeCase(t)
	srv := startMCPHTTP(t, c)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != servedTools() {
		t.Fatalf("tools/list: %v, %v", res, err)
	}
	text, isErr := callText(t, cs, "read_file", map[string]any{"path": "notes.txt"})
	if isErr || !strings.Contains(text, "alpha") || strings.Contains(text, mcpServeSecret) {
		t.Errorf("read_file over HTTP: %q isError %v", text, isErr)
	}
	cs.Close()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = <-srv.exited
	srv.exited <- err // for the clean-up
	if err != nil {
		t.Errorf("after SIGTERM: %v, want exit 0", err)
	}
}

func TestMCPServeHTTPBeyondLoopbackNeedsToken(t *testing.T) {
	c := newMCPServeCase(t)
	cmd := exec.Command(c.bin, "mcp", "serve", "--workspace", c.ws, "--http", "0.0.0.0:0")
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--token-env") {
		t.Errorf("%v: %s; want exit 2 naming --token-env", err, out)
	}
}

func TestMCPServePrintConfig(t *testing.T) {
	c := newMCPServeCase(t)
	// TACT_ENV and --env pairs whose names say secret are secrets too.
	cmd := exec.Command(c.bin, "mcp", "serve", "--workspace", c.ws, "--no-network", "--env", "GITHUB_TOKEN=ghp_flagsecret123", "--print-config")
	cmd.Env = append(c.env, "TACT_TOOL_TIMEOUT=30s", "TACT_API_TOKEN="+mcpServeSecret, "TACT_ENV=GITHUB_TOKEN=ghp_envsecret456")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	e := cfg.MCPServers["tact"]
	if !filepath.IsAbs(e.Command) || strings.Join(e.Args, " ") != "mcp serve --workspace "+c.ws+" --no-network" {
		t.Errorf("entry %+v", e)
	}
	if e.Env["TACT_TOOL_TIMEOUT"] != "30s" || strings.Contains(string(out), mcpServeSecret) ||
		strings.Contains(string(out), "ghp_") || strings.Contains(stderr.String(), "ghp_") {
		t.Errorf("env %v: want TACT_TOOL_TIMEOUT and no secret in %s", e.Env, out)
	}
	if !strings.Contains(stderr.String(), "TACT_ENV") {
		t.Errorf("stderr %q: want a note naming TACT_ENV", stderr.String())
	}
}

// TestMCPServeRunOnTinyModel: tact_run on the generated random-weight
// model ends with a result and a termination reason (its answer is noise).
func TestMCPServeRunOnTinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a model; skipped with -short")
	}
	c := newMCPServeCase(t)
	cs := connectStdio(t, c, nil, "--model", synth.Cached(t, synth.Tiny), "--ctx-size", "8192", "--max-tokens", "64", "--seed", "1")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != servedTools()+1 {
		t.Errorf("%d tools with a model, want %d (tact_run added)", len(res.Tools), servedTools()+1)
	}
	out, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "tact_run",
		Arguments: map[string]any{"query": "what do the notes say?", "no_plan": true, "max_iterations": 2}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := out.StructuredContent.(map[string]any)
	if reason, _ := sc["termination_reason"].(string); reason == "" {
		raw, _ := json.Marshal(out)
		t.Errorf("tact_run on the tiny model: %s, want a termination reason", raw)
	}
}

// TestMCPServeInspector: the MCP Inspector's CLI mode (mcp-inspector
// --cli, on the Node 22 it needs, both from npm) lists the tools and calls
// read_file against tact mcp serve over stdio and over HTTP.
func TestMCPServeInspector(t *testing.T) {
	if testing.Short() {
		t.Skip("installs Node and the MCP Inspector from npm")
	}
	inspector, err := ensureNpmInspector()
	if errors.Is(err, errNoNode) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := newMCPServeCase(t)
	// inspect returns the CLI's stdout (its JSON answer) and stderr.
	inspect := func(target []string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(inspector.node, append(append([]string{inspector.launcher, "--cli"}, target...), args...)...)
		cmd.Env = inspector.env(c.env)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s%s", args, err, out, stderr.String())
		}
		return string(out), stderr.String()
	}
	// The Inspector starts a stdio server with only a few variables of its
	// own environment (HOME, PATH, ...) and those given with -e: the case's.
	stdio := []string{}
	for _, kv := range c.env {
		if k, v, _ := strings.Cut(kv, "="); k != "" && v != "" {
			stdio = append(stdio, "-e", kv)
		}
	}
	srv := startMCPHTTP(t, c)
	for name, target := range map[string][]string{
		"stdio": append(stdio, c.bin, "mcp", "serve", "--workspace", c.ws),
		"http":  {srv.url, "--transport", "http"},
	} {
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		out, _ := inspect(target, "--method", "tools/list")
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tools) != servedTools() {
			t.Errorf("%s: tools/list: %v %+v", name, err, list)
		}
		out, stderr := inspect(target, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.txt")
		if !strings.Contains(out, "alpha") || strings.Contains(out+stderr, mcpServeSecret) {
			t.Errorf("%s: read_file: %s%s", name, out, stderr)
		}
	}
}

// mcpHTTPServer is a tact mcp serve --http process.
type mcpHTTPServer struct {
	cmd    *exec.Cmd
	url    string
	exited chan error // Wait's error, once it has exited
}

// startMCPHTTP starts tact mcp serve --http on a free loopback port; a
// server still running is killed with the test.
func startMCPHTTP(t *testing.T, c *e2eCase, extra ...string) *mcpHTTPServer {
	t.Helper()
	cmd := exec.Command(c.bin, append([]string{"mcp", "serve", "--workspace", c.ws, "--policy", c.pol, "--http", "127.0.0.1:0"}, extra...)...)
	cmd.Env = c.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &mcpHTTPServer{cmd: cmd, exited: make(chan error, 1)}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "tact mcp serve: listening on "); ok {
			srv.url = u
			break
		}
	}
	// Wait only once stderr is read to its end.
	go func() {
		for sc.Scan() {
		}
		srv.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-srv.exited
	})
	if srv.url == "" {
		t.Fatalf("no listening line on stderr: %v", sc.Err())
	}
	return srv
}

// TestMCPServeAskUserBothRevisions: tact mcp serve over stdio, a run whose
// model calls ask_user. A 2026-07-28 client gets an input-required result
// and its SDK retries the call with the answer: the paused run goes on
// from its checkpoint (the side effect before the pause ran once) under a
// new run that names it (resumed_from). A 2025-11-25 client is asked by
// elicitation while the call waits. The secret in the question reaches
// neither client.
func TestMCPServeAskUserBothRevisions(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			c := newMCPServeCase(t)
			env := c.env[:0:0]
			for _, kv := range c.env {
				if !strings.HasPrefix(kv, "TACT_NO_INPUT=") {
					env = append(env, kv)
				}
			}
			c.env = env
			replies := c.file("script.jsonl", script(t,
				reply("run_command", map[string]any{"command": "sh -c 'echo x >> counter.txt'"}),
				reply("ask_user", map[string]any{"question": "Which config is live? (token " + mcpServeSecret + ")", "options": []any{"the red one", "the blue one"}}),
				answer("blue is live", "expect", []any{"the blue one"})))
			var asked []string
			cmd := exec.Command(c.bin, "mcp", "serve", "--workspace", c.ws, "--policy", c.pol, "--yes", "--backend", "script", "--script", replies)
			cmd.Env = c.env
			cmd.Stderr = os.Stderr
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "the blue one"}}, nil
			}}).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("protocol %s, want %s", got, version)
			}
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "tact_run", Arguments: map[string]any{"query": "which config is live?", "no_plan": true}})
			if err != nil {
				t.Fatal(err)
			}
			sc, _ := res.StructuredContent.(map[string]any)
			if res.IsError || sc["final_answer"] != "blue is live" {
				t.Fatalf("tact_run: isError %v, structured %v", res.IsError, sc)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "[REDACTED]") || strings.Contains(asked[0], mcpServeSecret) {
				t.Errorf("asked %q, want the question once, redacted", asked)
			}
			if raw, _ := json.Marshal(res); strings.Contains(string(raw), mcpServeSecret) {
				t.Errorf("the result holds the secret: %s", raw)
			}
			if data, _ := os.ReadFile(filepath.Join(c.ws, "counter.txt")); string(data) != "x\n" {
				t.Errorf("counter.txt %q, want the side effect once", data)
			}
			// The server's end writes what its history holds.
			cs.Close()
			p := c.run("log", "--json")
			if code := p.wait(time.Minute); code != 0 {
				t.Fatalf("tact log: exit %d: %s", code, p.stderr.String())
			}
			runs := strings.Count(p.stdout.String(), `"command":"mcp-serve"`)
			paused := strings.Count(p.stdout.String(), `"reason":"needs_input"`)
			resumed := len(regexp.MustCompile(`"resumed_from":"[0-9a-f]`).FindAllString(p.stdout.String(), -1))
			if version == "2026-07-28" && (runs != 2 || paused != 1 || resumed != 1) {
				t.Errorf("2026-07-28: %d runs, %d paused, %d resumed; want the paused run and the one answering it\n%s", runs, paused, resumed, p.stdout.String())
			}
			if version == "2025-11-25" && (runs != 1 || paused != 0) {
				t.Errorf("2025-11-25: %d runs, %d paused; want one run that never paused\n%s", runs, paused, p.stdout.String())
			}
		})
	}
}
