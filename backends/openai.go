package backends

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/openai"
)

// openOpenAI makes the backend for an OpenAI-compatible server. Nothing is
// sent yet: a server that is down fails the first call, with retries.
// Errors are bad input for the engine.
func openOpenAI(s *config.Settings) (llm.Backend, error) {
	if s.BaseURL == "" {
		return nil, fmt.Errorf("--backend openai needs --base-url URL (ollama: http://127.0.0.1:11434/v1)")
	}
	if s.APIModel == "" {
		return nil, fmt.Errorf("--backend openai needs --api-model NAME, the model's name on the server (ollama list, or GET %s/models)", safeBaseURL(s.BaseURL))
	}
	b, err := openai.New(openai.Options{
		BaseURL: s.BaseURL, Model: s.APIModel, APIKey: apiKey(s), SchemaMode: openai.SchemaMode(s.SchemaMode),
		Retries: s.Retries, Timeout: s.RequestTimeout, CtxSize: s.CtxSize,
	})
	if err != nil {
		return nil, fmt.Errorf("--backend openai: %v", err)
	}
	slog.Debug("openai backend", "describe", b.Describe())
	return b, nil
}

// apiKey is the value of the variable --api-key-env names: the key is
// never a flag's value, which other users could read in the process list.
func apiKey(s *config.Settings) string {
	if s.APIKeyEnv == "" {
		return ""
	}
	return os.Getenv(s.APIKeyEnv)
}

// openAISecrets are the openai backend's secrets for the redactor: the API
// key whatever its variable is called (OPENAI_API_KEY looks like a secret
// by name, MY_LLM does not), and a password in --base-url.
func openAISecrets(s *config.Settings) []string {
	var out []string
	if k := apiKey(s); k != "" {
		out = append(out, "TACT_API_KEY="+k)
	}
	if u, err := url.Parse(s.BaseURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, "TACT_BASE_URL_PASSWORD_KEY="+p)
		}
	}
	return out
}

// safeBaseURL is u without credentials, query or fragment, for messages.
func safeBaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "URL"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
