package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tactcli/tact/internal/otlptest"
)

// MCP both ways on a real collector: tact mcp serve continues the
// traceparent a client gives in a tools/call's _meta (its run span is a
// child of the given span, in its trace), and a tool call tact makes to
// an MCP server carries its execute_tool span as the traceparent (the
// server here is tact mcp serve itself, exporting to the same collector).
func TestTelemetryRealCollectorMCP(t *testing.T) {
	tact := e2eTact(t)
	dir := telemetryFixture(t)
	col := startCollector(t, dir)
	ws := filepath.Join(dir, "ws")
	rows := []map[string]any{
		{"type": "plan", "query": "read the notes"},
		{"type": "step", "step": 1, "thought": "read the notes file", "tool": "read_file", "args": map[string]any{"path": "notes.txt"}},
		{"type": "step", "step": 2, "thought": "answer from the notes", "tool": "final_answer", "args": map[string]any{"answer": "read"}},
	}

	// A client's traceparent in _meta.
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cmd := exec.Command(tact, "mcp", "serve", "--backend", "none", "--workspace", ws, "--no-history")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	cmd.Env = append(cmd.Env, col.env...)
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	params := &sdk.CallToolParams{Name: "tact_exec", Arguments: map[string]any{"rows": rows},
		Meta: sdk.Meta{"traceparent": "00-" + traceID + "-" + parent + "-01"}}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("tact_exec: %v %+v", err, res)
	}
	served, _ := res.StructuredContent.(map[string]any)["run_id"].(string)
	// Closing the session ends the server, which flushes its spans.
	cs.Close()

	// tact's MCP client: a plan whose step calls tact_exec on a server.
	inner, _ := json.Marshal(map[string]any{"rows": rows})
	plan := `{"type":"plan","query":"ask the inner tact"}` + "\n" +
		`{"type":"step","step":1,"thought":"run the inner plan","tool":"inner.tact_exec","args":` + string(inner) + `}` + "\n" +
		`{"type":"step","step":2,"thought":"done","tool":"final_answer","args":{"answer":"done"}}` + "\n"
	os.WriteFile(filepath.Join(dir, "outer.jsonl"), []byte(plan), 0o644)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"inner": map[string]any{
		"command": tact, "args": []string{"mcp", "serve", "--backend", "none", "--workspace", ws, "--no-history"},
		"env": map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.env[0][len("OTEL_EXPORTER_OTLP_ENDPOINT="):],
			"XDG_STATE_HOME": filepath.Join(dir, "state"), "TACT_RUNTIME_DIR": os.Getenv("TACT_RUNTIME_DIR")},
	}}})
	os.WriteFile(filepath.Join(dir, "mcp.json"), cfg, 0o600)
	code, out, stderr := tactWith(t, dir, append([]string{"TACT_MCP_CONFIG=" + filepath.Join(dir, "mcp.json")}, col.env...),
		"exec", "--json", "--yes", "--backend", "none", "--workspace", "ws", "outer.jsonl")
	if code != 0 {
		t.Fatalf("outer exec: exit %d: %s\n%s", code, stderr, out)
	}
	outer := runTotals(t, out).RunID

	spans, _ := col.stop(t)
	byRun := map[any]otlptest.Span{}
	for _, s := range spansNamed(spans, "invoke_agent tact") {
		byRun[s.Attrs["gen_ai.conversation.id"]] = s
	}
	if s := byRun[served]; s.TraceID != traceID || s.ParentID != parent {
		t.Errorf("mcp serve's run %s: trace %s parent %s, want the client's %s %s", served, s.TraceID, s.ParentID, traceID, parent)
	}
	var call otlptest.Span
	for _, s := range spansNamed(spans, "execute_tool inner.tact_exec") {
		if s.ParentID == byRun[outer].SpanID {
			call = s
		}
	}
	if call.SpanID == "" {
		t.Fatalf("no execute_tool inner.tact_exec span under the outer run %s: %+v", outer, spans)
	}
	var joined int
	for id, s := range byRun {
		if s.ParentID == call.SpanID {
			joined++
			if s.TraceID != call.TraceID {
				t.Errorf("inner run %v in trace %s, not the caller's %s", id, s.TraceID, call.TraceID)
			}
		}
	}
	if joined != 1 || len(byRun) != 3 {
		t.Errorf("%d runs under the outer run's MCP call (want 1), %d runs in all (want 3)", joined, len(byRun))
	}
}
