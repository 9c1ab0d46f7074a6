package backends_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/tactcli/tact/agent/agenttest"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/backends"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/react"
)

// chatServer answers chat completions as an OpenAI-compatible server would:
// reply picks the content from the schema's name (tact_plan, tact_action,
// ...); status, when not 200, is an error with body.
func chatServer(t *testing.T, status int, body string, reply func(schemaName string) string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status != http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, body)
			return
		}
		var req struct {
			ResponseFormat struct {
				JSONSchema struct {
					Name string `json:"name"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request: %v", err)
		}
		content, _ := json.Marshal(reply(req.ResponseFormat.JSONSchema.Name))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":\"stop\"}]}\n\n", content)
		fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func openaiSettings(t *testing.T, url string) *config.Settings {
	s := agenttest.Settings(t, "")
	s.BaseURL, s.APIModel, s.Retries = url+"/v1", "m", 0
	return s
}

func TestOpenAIBackendChoice(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		mod     func(*config.Settings)
		backend string
		err     string
	}{
		{"--base-url picks openai", nil, "openai", ""},
		{"--script wins", func(s *config.Settings) {
			s.Script = filepath.Join(t.TempDir(), "script.jsonl")
			if err := os.WriteFile(s.Script, []byte(agenttest.AnswerPlan+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "script", ""},
		{"--backend openai without --base-url", func(s *config.Settings) { s.Backend, s.BaseURL = "openai", "" }, "", "--backend openai needs --base-url URL"},
		{"without --api-model", func(s *config.Settings) { s.APIModel = "" }, "", "--backend openai needs --api-model NAME, the model's name on the server (ollama list, or GET http://127.0.0.1:9/v1/models)"},
		{"bad schema mode", func(s *config.Settings) { s.SchemaMode = "grammar" }, "", `unknown schema mode "grammar"`},
		{"not http", func(s *config.Settings) { s.BaseURL = "ftp://user:hunter22@host/v1" }, "", "--backend openai: base URL: want an http:// or https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openaiSettings(t, "http://127.0.0.1:9")
			if tc.mod != nil {
				tc.mod(s)
			}
			rt, err := agent.Open(ctx, s, agent.Options{Mode: "run", Backends: backends.All})
			if tc.err != "" {
				if err == nil || agent.KindOf(err) != agent.ErrBadInput || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "hunter22") {
					t.Fatalf("err = %v, want bad input with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if m := rt.Model(); m.Backend != tc.backend || rt.Info["backend"] != tc.backend || (tc.backend == "openai" && m.Model != "m") {
				t.Errorf("model %+v, info %v; want backend %s", m, rt.Info, tc.backend)
			}
		})
	}
}

// TestOpenAIKeyIsSecret: the key is redacted whatever its variable is
// called, and so is a password in --base-url.
func TestOpenAIKeyIsSecret(t *testing.T) {
	t.Setenv("MY_LLM", "sk-plain-named-variable-42")
	s := openaiSettings(t, "http://bob:url-password-99@127.0.0.1:9")
	s.APIKeyEnv = "MY_LLM"
	rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "run", Backends: backends.All})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	got := rt.Redactor.Redact("key sk-plain-named-variable-42 and url-password-99")
	if got != "key [REDACTED] and [REDACTED]" {
		t.Errorf("redacted: %q", got)
	}
}

func TestOpenAIRun(t *testing.T) {
	srv := chatServer(t, http.StatusOK, "", func(name string) string {
		switch name {
		case "tact_plan":
			return `{"plan":[{"thought":"nothing to look up, answer right away","tool":"final_answer","args":{"answer":"42"}}]}`
		default:
			return `{"thought":"the plan says to answer now, so answer","tool":"final_answer","args":{"answer":"42"}}`
		}
	})
	s := openaiSettings(t, srv.URL)
	rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "run", Backends: backends.All})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), agent.Job{Query: "what is the answer?"})
	if err != nil || res.TerminationReason != react.ReasonSuccess || res.FinalAnswer != "42" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if res.TokenUsage.PromptTokens == 0 || res.TokenUsage.CompletionTokens == 0 {
		t.Errorf("usage %+v, want the server's", res.TokenUsage)
	}
}

// TestOpenAIContextLengthIsTokenBudget: a server saying the prompt does not
// fit ends the run as token_budget (exit 6), not as an error (exit 1); when
// it refuses the planning prompt, whose parts cannot be compacted, the job
// fails as a window too small (exit 2), as a local model's would.
func TestOpenAIContextLengthIsTokenBudget(t *testing.T) {
	body := `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens.","code":"context_length_exceeded"}}`
	srv := chatServer(t, http.StatusBadRequest, body, nil)
	for _, noPlan := range []bool{true, false} {
		t.Run(fmt.Sprintf("no-plan=%v", noPlan), func(t *testing.T) {
			s := openaiSettings(t, srv.URL)
			s.NoPlan = noPlan
			rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "run", Backends: backends.All})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Run(context.Background(), agent.Job{Query: "q"})
			if !noPlan {
				if agent.KindOf(err) != agent.ErrContextTooSmall || agent.ExitCode(err) != 2 || !strings.Contains(err.Error(), "planning: planner: model server "+srv.URL+": 400 Bad Request: This model's maximum context length") {
					t.Fatalf("err = %v (exit %d), want a window too small for planning (exit 2)", err, agent.ExitCode(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.TerminationReason != react.ReasonTokenBudget || res.ExitCode() != 6 {
				t.Errorf("ended %s (exit %d): %s; want token_budget", res.TerminationReason, res.ExitCode(), res.Message)
			}
		})
	}
}
