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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/otlptest"
	"github.com/tactcli/tact/internal/synth"
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

// realCollector is the test collector running on loopback: OTLP/HTTP in,
// traces and metrics to one file (OTLP JSON lines).
type realCollector struct {
	env    []string // OTEL_EXPORTER_OTLP_ENDPOINT
	out    string
	cmd    *exec.Cmd
	exited chan error
	logs   *strings.Builder
}

// startCollector starts the test collector and waits for its port.
func startCollector(t *testing.T, dir string) *realCollector {
	t.Helper()
	bin := otelcolBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &realCollector{env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr}, out: filepath.Join(dir, "otel.jsonl"),
		exited: make(chan error, 1), logs: &strings.Builder{}}
	cfg := "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: " + addr + "\n" +
		"exporters:\n  file:\n    path: " + c.out + "\n" +
		"service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n" +
		"    traces:\n      receivers: [otlp]\n      exporters: [file]\n" +
		"    metrics:\n      receivers: [otlp]\n      exporters: [file]\n"
	os.WriteFile(filepath.Join(dir, "otelcol.yaml"), []byte(cfg), 0o644)
	c.cmd = exec.Command(bin, "--config", "file:"+filepath.Join(dir, "otelcol.yaml"))
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() { c.cmd.Process.Kill() })
	// Ready when its port answers.
	for {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return c
		}
		select {
		case err := <-c.exited:
			t.Fatalf("the collector exited: %v\n%s", err, c.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the collector (SIGTERM: it flushes its file) and reads what
// it exported.
func (c *realCollector) stop(t *testing.T) ([]otlptest.Span, map[string]int) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.exited
	return collectorOutput(t, c.out)
}

// collectorOutput reads the file exporter's OTLP JSON lines: the spans,
// and each histogram metric's count of recorded values, summed over the
// lines (a tact process sends its metrics once, when it ends).
func collectorOutput(t *testing.T, path string) ([]otlptest.Span, map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type kv struct {
		Key   string `json:"key"`
		Value struct {
			S *string  `json:"stringValue"`
			I *string  `json:"intValue"`
			B *bool    `json:"boolValue"`
			D *float64 `json:"doubleValue"`
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
			case a.Value.D != nil:
				m[a.Key] = *a.Value.D
			}
		}
		return m
	}
	var spans []otlptest.Span
	metrics := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						TraceID, SpanID, ParentSpanID, Name string
						StartTimeUnixNano, EndTimeUnixNano  string
						Attributes                          []kv
						Events                              []struct{ Name string }
					}
				}
			}
			ResourceMetrics []struct {
				ScopeMetrics []struct {
					Metrics []struct {
						Name      string
						Histogram struct {
							DataPoints []struct {
								Count string
							}
						}
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
					sp := otlptest.Span{Name: s.Name, TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentSpanID, Attrs: attrs(s.Attributes)}
					start, _ := strconv.ParseInt(s.StartTimeUnixNano, 10, 64)
					end, _ := strconv.ParseInt(s.EndTimeUnixNano, 10, 64)
					sp.Duration = time.Duration(end - start)
					for _, e := range s.Events {
						sp.Events = append(sp.Events, e.Name)
					}
					spans = append(spans, sp)
				}
			}
		}
		for _, rm := range doc.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, p := range m.Histogram.DataPoints {
						n, _ := strconv.Atoi(p.Count)
						metrics[m.Name] += n
					}
				}
			}
		}
	}
	return spans, metrics
}

// The end-to-end test: a real collector on loopback receives tact run
// (script backend, then the tiny model), tact exec, tact batch --parallel
// 4 and a /v1/runs call with a traceparent; the exported spans have the
// names, parents, attributes and token counts (--json's) they should, the
// incoming trace id is kept, and the GenAI client metrics arrive.
func TestTelemetryRealCollector(t *testing.T) {
	tact := e2eTact(t)
	dir := telemetryFixture(t)
	col := startCollector(t, dir)
	env := col.env
	code, stdout, stderr := tactWith(t, dir, env, "run", "--json", "--workspace", "ws", "--script", "replies.jsonl", "what do the notes say?")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	res := runTotals(t, stdout)
	if code, _, stderr := tactWith(t, dir, env, "exec", "--workspace", "ws", "plan.jsonl"); code != 0 {
		t.Fatalf("exec: exit %d: %s", code, stderr)
	}
	if code, _, stderr := tactWith(t, dir, env, "batch", "--parallel", "4", "--workspace", "ws", "--script", "batch.jsonl", "q.txt"); code != 0 {
		t.Fatalf("batch: exit %d: %s", code, stderr)
	}
	// The tiny random-weight model: whatever it does (answer from the plan,
	// stall, run out of steps), its calls are chat and plan spans with the
	// run's tokens. Three runs that end in different ways (here).
	model := synth.Cached(t, synth.Tiny)
	var tiny []tinyRun
	for _, args := range [][]string{
		{"--seed", "1"},
		{"--seed", "7", "--temperature", "0.8"},
		{"--seed", "2", "--temperature", "0.8", "--no-plan", "--max-iterations", "3"},
	} {
		args = append([]string{"run", "--json", "--model", model, "--workspace", "ws", "--max-tokens", "128", "--no-ask", "--no-history"}, args...)
		code, stdout, stderr = tactWith(t, dir, env, append(args, "count the files")...)
		switch code {
		case 0, 3, 4, 5, 6, 11:
		default:
			t.Fatalf("tiny model run %v: exit %d: %s", args, code, stderr)
		}
		tiny = append(tiny, tinyRun{runTotals(t, stdout), !slices.Contains(args, "--no-plan")})
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

	spans, metrics := col.stop(t)
	runs := spansNamed(spans, "invoke_agent tact")
	if len(runs) != 1+1+4+3+1 {
		t.Fatalf("%d run spans, want 10 (run, exec, 4 batch, 3 tiny model, serve)\n%+v", len(runs), spans)
	}
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var served int
	for _, r := range runs {
		if r.Attrs["gen_ai.conversation.id"] == res.RunID {
			u := res.Usage
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
	if len(spansNamed(spans, "chat")) == 0 || len(spansNamed(spans, "plan")) == 0 || len(spansNamed(spans, "execute_tool read_file")) < 7 {
		t.Errorf("spans: %d chat, %d plan, %d execute_tool read_file (want 7 or more)", len(spansNamed(spans, "chat")), len(spansNamed(spans, "plan")), len(spansNamed(spans, "execute_tool read_file")))
	}
	for _, r := range tiny {
		checkTinyModelSpans(t, spans, r, strings.TrimSuffix(filepath.Base(model), ".gguf"))
	}
	// The GenAI client metrics: every model call's duration (a chat or
	// plan span each), and input and output tokens for each call with
	// known usage. Each process sends its metrics once, when it ends.
	calls, withUsage := 0, 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "chat") || s.Name == "plan" {
			calls++
			if _, ok := s.Attrs["gen_ai.usage.input_tokens"]; ok {
				withUsage++
			}
		}
	}
	if metrics["gen_ai.client.operation.duration"] != calls || metrics["gen_ai.client.token.usage"] != 2*withUsage || calls == 0 {
		t.Errorf("metric values received: %v; want %d durations and %d token counts (the model calls' spans)", metrics, calls, 2*withUsage)
	}
}

// jsonTotals is a --json result's run id and token usage.
type jsonTotals struct {
	RunID string
	Usage struct{ P, C, O int64 }
}

func runTotals(t *testing.T, stdout string) jsonTotals {
	t.Helper()
	var r struct {
		RunID string `json:"run_id"`
		Usage struct {
			P int64 `json:"prompt_tokens"`
			C int64 `json:"cached_tokens"`
			O int64 `json:"completion_tokens"`
		} `json:"token_usage"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.RunID == "" {
		t.Fatalf("--json: %v: %q", err, stdout)
	}
	out := jsonTotals{RunID: r.RunID}
	out.Usage.P, out.Usage.C, out.Usage.O = r.Usage.P, r.Usage.C, r.Usage.O
	return out
}

// tinyRun is a tiny model run's --json totals, and whether it planned.
type tinyRun struct {
	jsonTotals
	planned bool
}

// checkTinyModelSpans: the tiny model run's model calls are chat spans
// (and the planner's plan spans) naming the model and llama.cpp, whose
// tokens add up to --json's totals, cache reads included; a planned run
// has its planner's tokens on its plan span; the calls a step or the
// planner's reply recorded have their time to first token, within the
// call.
func checkTinyModelSpans(t *testing.T, spans []otlptest.Span, tiny tinyRun, model string) {
	t.Helper()
	var run otlptest.Span
	for _, r := range spansNamed(spans, "invoke_agent tact") {
		if r.Attrs["gen_ai.conversation.id"] == tiny.RunID {
			run = r
		}
	}
	if run.SpanID == "" {
		t.Fatalf("no span of the tiny model run %s", tiny.RunID)
	}
	var in, cached, out int64
	chats, ttfts, plans := 0, 0, 0
	for _, s := range spans {
		if s.ParentID != run.SpanID || (!strings.HasPrefix(s.Name, "chat") && s.Name != "plan") {
			continue
		}
		in += asInt(s.Attrs["gen_ai.usage.input_tokens"])
		cached += asInt(s.Attrs["gen_ai.usage.cache_read.input_tokens"])
		out += asInt(s.Attrs["gen_ai.usage.output_tokens"])
		if s.Name == "plan" {
			if s.Attrs["tact.plan.replan"] == nil && asInt(s.Attrs["gen_ai.usage.output_tokens"]) > 0 {
				plans++
			}
		} else {
			chats++
		}
		if ttft, ok := s.Attrs["gen_ai.response.time_to_first_chunk"].(float64); ok {
			ttfts++
			if d := time.Duration(ttft * float64(time.Second)); d <= 0 || d > s.Duration {
				t.Errorf("%s span: time to first token %s, call %s", s.Name, d, s.Duration)
			}
		}
		if s.Name == "plan" {
			continue
		}
		if s.Name != "chat "+model || s.Attrs["gen_ai.request.model"] != model || s.Attrs["gen_ai.provider.name"] != "llama.cpp" {
			t.Errorf("chat span %q: model %v, provider %v; want %s, llama.cpp", s.Name, s.Attrs["gen_ai.request.model"], s.Attrs["gen_ai.provider.name"], model)
		}
		if _, ok := s.Attrs["gen_ai.usage.cache_read.input_tokens"]; !ok {
			t.Errorf("chat span without gen_ai.usage.cache_read.input_tokens: %v", s.Attrs)
		}
	}
	u := tiny.Usage
	if (chats == 0 && !tiny.planned) || (plans != 1) != !tiny.planned || ttfts == 0 || in != u.P+u.C || cached != u.C || out != u.O {
		t.Errorf("tiny model run (planned %v): %d chat spans, %d plan spans with the planner's tokens, %d with time to first token; tokens in %d cached %d out %d; --json: prompt %d cached %d completion %d",
			tiny.planned, chats, plans, ttfts, in, cached, out, u.P, u.C, u.O)
	}
	if run.Attrs["gen_ai.usage.input_tokens"] != u.P+u.C || run.Attrs["gen_ai.usage.cache_read.input_tokens"] != u.C || run.Attrs["gen_ai.request.model"] != model {
		t.Errorf("tiny model run span: %v", run.Attrs)
	}
	t.Logf("tiny model run (planned %v, %v): %d chat spans, %d tokens in (%d read from the cache), %d out", tiny.planned, run.Attrs["tact.termination_reason"], chats, in, cached, out)
}

func asInt(v any) int64 { n, _ := v.(int64); return n }
