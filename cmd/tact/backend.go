package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/models"
)

// openBackend picks the model backend: --backend if given; else llama when a
// model is configured (--model, TACT_MODEL, or the only model in the models
// directory); else script when --script is given; else none.
// settingName describes a setting for messages (see runOptions.SettingName).
func openBackend(ctx context.Context, s *config.Settings, settingName func(field string) string) (llm.Backend, map[string]any, error) {
	name := s.Backend
	var modelPath, why string
	if name == "" || name == "llama" {
		p, err := models.Resolve(s.Model, s.ModelsDirectory())
		switch {
		case err == nil:
			modelPath = p
			if name == "" && (s.Model != "" || s.Script == "") {
				name = "llama"
			}
		case errors.Is(err, models.ErrNoModel) && name == "":
		case errors.Is(err, models.ErrNoModel):
			return nil, nil, badInputf("--backend llama: no model: give --model PATH|NAME, set TACT_MODEL, or put a .gguf file in %s", s.ModelsDirectory())
		default:
			if name == "llama" || s.Model != "" {
				return nil, nil, badInput(err)
			}
			// A fixed plan needs no model, so a models directory that
			// cannot pick one is only an error once a model is needed.
			why = err.Error()
		}
	}
	if name == "" {
		if s.Script != "" {
			name = "script"
		} else {
			name = "none"
		}
	}
	switch name {
	case "none":
		return llm.None{Why: why}, map[string]any{"backend": "none"}, nil
	case "script":
		if s.Script == "" {
			return nil, nil, badInputf("--backend script needs --script FILE")
		}
		sc, err := llm.LoadScript(s.Script)
		if err != nil {
			return nil, nil, badInput(err)
		}
		return sc, map[string]any{"backend": "script", "script": s.Script}, nil
	case "llama":
		return openLlama(ctx, s, modelPath, settingName)
	default:
		return nil, nil, badInputf("--backend %q: want llama, script or none", name)
	}
}

var errNoLlama = fmt.Errorf("this tact was built without the llama backend")
