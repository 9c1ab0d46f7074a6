package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/schema"
)

// issue26Schema is the --schema of issue 26's "Done when".
const issue26Schema = `{"type":"object","properties":{"count":{"type":"integer"},"files":{"type":"array","items":{"type":"string"}}},"required":["count","files"]}`

// validateLines checks that every line of out is one JSON value that
// validates against sch (with the schema package's validator) and returns
// how many there were.
func validateLines(t *testing.T, sch, out string) int {
	t.Helper()
	v, err := schema.Compile(json.RawMessage(sch))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
		if _, err := v.ValidateJSON(sc.Bytes()); err != nil {
			t.Errorf("stdout line %d %q: %v", n, sc.Text(), err)
		}
	}
	return n
}

// The llama backend on the tiny random-weight model, 20 seeds: the
// grammar holds the final answer to the schema, so whatever the run does
// (answer, fail, run out of steps), every stdout line is one JSON value
// that validates; runs with a step budget of one or two end at the
// budget and their fallback answer validates too (or the run says exit
// 11 with nothing on stdout).
func TestSchemaTinyModelSeeds(t *testing.T) {
	c := newE2E(t)
	model := synth.Cached(t, synth.Tiny)
	os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(c.ws, "b.go"), []byte("package b\n"), 0o644)
	answers, budgetEnds := 0, 0
	for seed := 1; seed <= 20; seed++ {
		trace := filepath.Join(c.dir, fmt.Sprintf("t%d.jsonl", seed))
		args := []string{"run", "--model", model, "--workspace", c.ws, "--seed", fmt.Sprint(seed), "--temperature", "0.8",
			"--max-tokens", "256", "--no-ask", "--trace", trace, "--schema", issue26Schema}
		if seed%2 == 0 {
			// Free ReAct with a budget of one or two actions: many runs end
			// at the budget, with the fallback answer.
			args = append(args, "--no-plan", "--max-iterations", fmt.Sprint(1+seed%4/2))
		}
		p := c.run(append(args, "count the files")...)
		code := p.wait(5 * time.Minute)
		switch code {
		case 0, 3, 4, 5, 6, 11, 12:
		default:
			t.Fatalf("seed %d: exit %d\nstderr: %s", seed, code, p.stderr.String())
		}
		n := validateLines(t, issue26Schema, p.stdout.String())
		if n > 1 {
			t.Errorf("seed %d: %d lines on stdout, want at most one", seed, n)
		}
		if code == 11 && n != 0 {
			t.Errorf("seed %d: exit 11 with an answer on stdout", seed)
		}
		if code != 11 && n != 1 {
			t.Errorf("seed %d: exit %d with %d answer lines\nstderr: %s", seed, code, n, p.stderr.String())
		}
		answers += n
		if code == 4 || code == 6 {
			budgetEnds++
		}
		// The grammar made every answer the model wrote valid: none was
		// refused as an invalid action.
		tb, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(tb)), "\n") {
			var ev struct {
				Event string `json:"event"`
				Error string `json:"error"`
			}
			json.Unmarshal([]byte(line), &ev)
			if ev.Event == "invalid_action" && strings.Contains(ev.Error, "answer") {
				t.Errorf("seed %d: an answer the grammar should have held was invalid: %s", seed, ev.Error)
			}
		}
	}
	if answers == 0 || budgetEnds == 0 {
		t.Errorf("%d answers, %d budget ends over 20 seeds: want some of each", answers, budgetEnds)
	}
	t.Logf("%d answers, %d budget ends", answers, budgetEnds)
}

// recordingProxy forwards to target and keeps every request body.
type recordingProxy struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (rp *recordingProxy) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.FlushInterval = -1 // the replies stream
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rp.mu.Lock()
		rp.bodies = append(rp.bodies, body)
		rp.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + strings.TrimPrefix(target, u.Scheme+"://"+u.Host)
}

// The openai backend against ollama: the answer schema rides in the
// response format (inside the action schema, as final_answer's answer),
// and the answer validates.
func TestE2EOpenAISchemaOllama(t *testing.T) {
	bin := ollamaBinary(t)
	srv := startOllama(t, bin, 1)
	rp := &recordingProxy{}
	base := rp.start(t, srv.baseURL)
	c := newE2E(t)
	c.file("ws/a.txt", "alpha\n")
	args := []string{"run", "--base-url", base, "--api-model", srv.model, "--workspace", c.ws, "--ctx-size", fmt.Sprint(ollamaCtx),
		"--seed", "1", "--require-thought=false", "--no-plan", "--max-iterations", "2", "--trace", c.trace,
		"--no-ask", "--schema", issue26Schema, "count the files"}
	p := c.run(args...)
	code := p.wait(3 * time.Minute)
	if code != 0 && code != 4 && code != 5 && code != 11 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, p.stdout.String(), p.stderr.String())
	}
	n := validateLines(t, issue26Schema, p.stdout.String())
	if (code == 11) != (n == 0) || n > 1 {
		t.Errorf("exit %d with %d answer lines\nstdout: %s\nstderr: %s", code, n, p.stdout.String(), p.stderr.String())
	}
	t.Logf("exit %d, stdout %q", code, p.stdout.String())
	assertRepliesValid(t, traceEvents(t, c.trace))
	// Every action request's response_format holds the answer schema as
	// final_answer's answer.
	rp.mu.Lock()
	defer rp.mu.Unlock()
	actions := 0
	for _, b := range rp.bodies {
		var req struct {
			ResponseFormat struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string          `json:"name"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if json.Unmarshal(b, &req) != nil || req.ResponseFormat.JSONSchema.Name != "tact_action" {
			continue
		}
		actions++
		if req.ResponseFormat.Type != "json_schema" || !answerSchemaIn(req.ResponseFormat.JSONSchema.Schema) {
			t.Errorf("action request's response_format lacks the answer schema: %s", req.ResponseFormat.JSONSchema.Schema)
		}
	}
	if actions == 0 {
		t.Fatalf("no action request among %d requests", len(rp.bodies))
	}
}

// answerSchemaIn: some oneOf branch of an action schema is final_answer
// whose answer is an object requiring count and files.
func answerSchemaIn(action json.RawMessage) bool {
	var s struct {
		OneOf []struct {
			Properties struct {
				Tool struct {
					Const string `json:"const"`
				} `json:"tool"`
				Args struct {
					Properties struct {
						Answer struct {
							Type     string   `json:"type"`
							Required []string `json:"required"`
						} `json:"answer"`
					} `json:"properties"`
				} `json:"args"`
			} `json:"properties"`
		} `json:"oneOf"`
	}
	if json.Unmarshal(action, &s) != nil {
		return false
	}
	for _, b := range s.OneOf {
		a := b.Properties.Args.Properties.Answer
		if b.Properties.Tool.Const == "final_answer" && a.Type == "object" && strings.Join(a.Required, ",") == "count,files" {
			return true
		}
	}
	return false
}
