// Package backends opens the model backends the engine does not build
// itself: llama (llama.cpp in-process, through cgo) and openai (an
// OpenAI-compatible server). cmd/tact passes All to agent.Open, and
// nothing else imports this package, so the engine, the server and their
// tests build and run with CGO_ENABLED=0.
package backends

import (
	"context"
	"fmt"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
)

// All opens llama and openai, as agent.Options.Backends.
var All agent.Backends = all{}

type all struct{}

func (all) Open(ctx context.Context, req agent.BackendRequest) (llm.Backend, error) {
	switch req.Name {
	case llm.BackendLlama:
		return openLlama(ctx, req.Settings, req.ModelPath, req.SettingName)
	case llm.BackendOpenAI:
		return openOpenAI(req.Settings)
	}
	return nil, fmt.Errorf("--backend %q: want llama, openai, script or none", req.Name)
}

func (all) Secrets(s *config.Settings) []string { return openAISecrets(s) }
