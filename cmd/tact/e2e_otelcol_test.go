package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/otlptest"
)

// otelcolBinary builds internal/otelcol (a real OpenTelemetry Collector:
// the OTLP receiver in, the file exporter out; its own Go module, so its
// dependencies stay out of tact's go.mod) once into the user's cache, keyed
// by its sources. Without the module proxy the test is skipped.
func otelcolBinary(t *testing.T) string {
	t.Helper()
	src, _ := filepath.Abs(filepath.Join("..", "..", "internal", "otelcol"))
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "tact-test-otelcol", hex.EncodeToString(h.Sum(nil))[:16], "otelcol")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin+".tmp", ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		for _, why := range []string{"proxy", "dial tcp", "lookup ", "403", "404", "i/o timeout", "no such host"} {
			if strings.Contains(string(out), why) {
				t.Skipf("cannot build the test collector (internal/otelcol) without the module proxy: %s", firstLine(string(out)))
			}
		}
		t.Fatalf("building internal/otelcol: %v\n%s", err, out)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the test collector in %s (once; cached in %s)", time.Since(start).Round(time.Second), filepath.Dir(bin))
	return bin
}

func firstLine(s string) string { l, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); return l }

// collectorSpans reads the file exporter's OTLP JSON lines as spans.
func collectorSpans(t *testing.T, path string) []otlptest.Span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type kv struct {
		Key   string `json:"key"`
		Value struct {
			S *string `json:"stringValue"`
			I *string `json:"intValue"`
			B *bool   `json:"boolValue"`
		} `json:"value"`
	}
	attrs := func(kvs []kv) map[string]any {
		m := map[string]any{}
		for _, a := range kvs {
			switch {
			case a.Value.S != nil:
				m[a.Key] = *a.Value.S
			case a.Value.I != nil:
				n, _ := strconv.ParseInt(*a.Value.I, 10, 64)
				m[a.Key] = n
			case a.Value.B != nil:
				m[a.Key] = *a.Value.B
			}
		}
		return m
	}
	var spans []otlptest.Span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						TraceID, SpanID, ParentSpanID, Name string
						Attributes                          []kv
					}
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, otlptest.Span{Name: s.Name, TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentSpanID, Attrs: attrs(s.Attributes)})
				}
			}
		}
	}
	return spans
}

// The end-to-end test: a real collector on loopback receives tact run
// (script backend), tact exec, tact batch --parallel 4 and a /v1/runs call
// with a traceparent; the exported spans have the names, parents,
// attributes and token counts (--json's) they should, and the incoming
// trace id is kept.
func TestTelemetryRealCollector(t *testing.T) {
	tact := e2eTact(t)
	col := otelcolBinary(t)
	dir := telemetryFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out := filepath.Join(dir, "spans.jsonl")
	cfg := "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: " + addr + "\n" +
		"exporters:\n  file:\n    path: " + out + "\n" +
		"service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [file]\n"
	os.WriteFile(filepath.Join(dir, "otelcol.yaml"), []byte(cfg), 0o644)
	c := exec.Command(col, "--config", "file:"+filepath.Join(dir, "otelcol.yaml"))
	var logs strings.Builder
	c.Stdout, c.Stderr = &logs, &logs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	t.Cleanup(func() { c.Process.Kill() })
	// Ready when its port answers.
	for {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the collector exited: %v\n%s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr}
	code, stdout, stderr := tactWith(t, dir, env, "run", "--json", "--workspace", "ws", "--script", "replies.jsonl", "what do the notes say?")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	var res struct {
		RunID string                                     `json:"run_id"`
		Usage struct{ Prompt, Cached, Completion int64 } `json:"token_usage"`
	}
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(stdout), &raw)
	json.Unmarshal([]byte(stdout), &res)
	var u struct {
		P int64 `json:"prompt_tokens"`
		C int64 `json:"cached_tokens"`
		O int64 `json:"completion_tokens"`
	}
	json.Unmarshal(raw["token_usage"], &u)
	if code, _, stderr := tactWith(t, dir, env, "exec", "--workspace", "ws", "plan.jsonl"); code != 0 {
		t.Fatalf("exec: exit %d: %s", code, stderr)
	}
	if code, _, stderr := tactWith(t, dir, env, "batch", "--parallel", "4", "--workspace", "ws", "--script", "batch.jsonl", "q.txt"); code != 0 {
		t.Fatalf("batch: exit %d: %s", code, stderr)
	}
	p := startServe(t, tact, dir, []string{"serve", "--addr", "127.0.0.1:0", "--workspace", filepath.Join(dir, "ws"),
		"--script", filepath.Join(dir, "replies.jsonl"), "--no-history"}, env...)
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", p.base+"/v1/runs", strings.NewReader(`{"query": "what do the notes say?"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	// SIGTERM: the collector flushes its file and exits.
	c.Process.Signal(syscall.SIGTERM)
	<-exited

	spans := collectorSpans(t, out)
	runs := spansNamed(spans, "invoke_agent tact")
	if len(runs) != 1+1+4+1 {
		t.Fatalf("%d run spans, want 7 (run, exec, 4 batch, serve)\n%+v", len(runs), spans)
	}
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var served int
	for _, r := range runs {
		if r.Attrs["gen_ai.conversation.id"] == res.RunID {
			if r.Attrs["gen_ai.usage.input_tokens"] != u.P+u.C || r.Attrs["gen_ai.usage.output_tokens"] != u.O || r.Attrs["gen_ai.usage.cache_read.input_tokens"] != u.C {
				t.Errorf("run tokens %v, want --json's %+v", r.Attrs, u)
			}
		}
		if r.TraceID == traceID {
			served++
			if r.ParentID != parent {
				t.Errorf("served run's parent %s, want %s", r.ParentID, parent)
			}
		}
		if par, ok := byID[r.ParentID]; ok && par.Name != "invoke_agent batch" {
			t.Errorf("run under %q", par.Name)
		}
	}
	if served != 1 {
		t.Errorf("%d runs kept the incoming trace id, want 1", served)
	}
	if b := spansNamed(spans, "invoke_agent batch"); len(b) != 1 {
		t.Errorf("%d batch spans", len(b))
	}
	for _, s := range spans {
		if s.ParentID != "" && s.Name != "invoke_agent tact" {
			if par, ok := byID[s.ParentID]; !ok || par.Name != "invoke_agent tact" {
				t.Errorf("%s: parent %q is no run", s.Name, par.Name)
			}
		}
	}
	if len(spansNamed(spans, "chat")) == 0 || len(spansNamed(spans, "plan")) == 0 || len(spansNamed(spans, "execute_tool read_file")) != 7 {
		t.Errorf("spans: %d chat, %d plan, %d execute_tool read_file (want 7)", len(spansNamed(spans, "chat")), len(spansNamed(spans, "plan")), len(spansNamed(spans, "execute_tool read_file")))
	}
}
