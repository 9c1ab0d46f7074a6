package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/models"
)

// Backends opens the model backends that live outside the engine: "llama"
// (a model file, in-process through cgo) and "openai" (a server). The
// engine picks which from the settings and opens script and none itself;
// cmd/tact passes backends.All (package backends), so the engine, the server
// and their tests build without llama.cpp.
type Backends interface {
	// Open opens backend req.Name. Its errors are bad input, but ctx's
	// own error when ctx ended (a timeout or a cancellation).
	Open(ctx context.Context, req BackendRequest) (llm.Backend, error)
	// Secrets are environment entries (NAME=value, NAME a secret's name)
	// the redactor must hide from the start, before any backend is opened:
	// an API key whatever its variable is called.
	Secrets(s *config.Settings) []string
}

// BackendRequest is what Backends.Open is given.
type BackendRequest struct {
	Name        string // "llama" or "openai"
	Settings    *config.Settings
	ModelPath   string                    // llama: the model file, resolved
	SettingName func(field string) string // names a setting in messages
}

// openBackend picks the model backend: --backend if given; else openai when
// --base-url is given without --model or --script; else llama when a model
// is configured (--model, TACT_MODEL, or the only model in the models
// directory; with opts.GivenModelOnly the plan header's model instead of
// the directory's); else script when --script is given; else none.
// settingName describes a setting for messages (see Options.SettingName).
// What the backend is (plan headers, traces) it says itself: llm.InfoOf.
// The backends that are not the engine's own come from opts.Backends.
func openBackend(ctx context.Context, s *config.Settings, opts Options, settingName func(field string) string) (llm.Backend, error) {
	backends := opts.Backends
	name := impliedBackend(s)
	var modelPath, why string
	model, fromPlan := s.Model, false
	if model == "" && name == "" && opts.GivenModelOnly {
		if m := opts.PlanModel; m != "" && !strings.ContainsAny(m, `/\`) && s.Script == "" {
			model, fromPlan = m, true
		} else {
			// The models directory is not used, only named when it would have been.
			name, why = llm.BackendNone, recoverHint
			if p, err := models.Resolve("", s.ModelsDirectory()); err == nil {
				why = fmt.Sprintf("tact exec uses a model only when one is given, not the models directory's (%s) on its own: %s", filepath.Base(p), recoverHint)
			}
			if s.Script != "" {
				name = llm.BackendScript
			}
		}
	}
	if name == "" || name == llm.BackendLlama {
		p, err := models.Resolve(model, s.ModelsDirectory())
		switch {
		case err == nil:
			modelPath = p
			if name == "" && (model != "" || s.Script == "") {
				name = llm.BackendLlama
			}
		case fromPlan:
			// A plan naming a model that is not here runs as if it named none.
			why = fmt.Sprintf("the plan's header names model %q, which is not in %s: %s", model, s.ModelsDirectory(), recoverHint)
		case errors.Is(err, models.ErrNoModel) && name == "":
		case errors.Is(err, models.ErrNoModel):
			return nil, badInputf("--backend llama: no model: %s; or give --model PATH|NAME, set TACT_MODEL, or put a .gguf file in %s", PullHint(models.DefaultCatalogEntry()), s.ModelsDirectory())
		default:
			if e, ok := models.LookupCatalog(s.Model); ok && errors.Is(err, fs.ErrNotExist) {
				setting := settingName("Model") // TACT_MODEL=NAME (--model), or --model
				if !strings.Contains(setting, "=") {
					setting += " " + s.Model
				}
				return nil, badInputf("%s: not pulled yet: %s", setting, PullHint(e))
			}
			if name == llm.BackendLlama || s.Model != "" {
				return nil, badInput(err)
			}
			// A fixed plan needs no model, so a models directory that
			// cannot pick one is only an error once a model is needed.
			why = err.Error()
		}
	}
	if name == "" {
		if s.Script != "" {
			name = llm.BackendScript
		} else {
			name = llm.BackendNone
		}
	}
	switch name {
	case llm.BackendNone:
		return llm.None{Why: why}, nil
	case llm.BackendScript:
		if s.Script == "" {
			return nil, badInputf("--backend script needs --script FILE")
		}
		sc, err := llm.LoadScript(s.Script)
		if err != nil {
			return nil, badInput(err)
		}
		return sc, nil
	case llm.BackendLlama, llm.BackendOpenAI:
		if backends == nil {
			return nil, badInputf("--backend %s: not built into this program", name)
		}
		b, err := backends.Open(ctx, BackendRequest{Name: name, Settings: s, ModelPath: modelPath, SettingName: settingName})
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, contextError(ctx)
			}
			return nil, badInput(err)
		}
		return b, nil
	default:
		return nil, badInputf("--backend %q: want llama, openai, script or none", name)
	}
}

// impliedBackend is the backend the settings name before any model is
// looked up: --backend; openai for --base-url without --model or --script;
// "" when the models decide (openBackend, PullTarget).
func impliedBackend(s *config.Settings) string {
	if s.Backend == "" && s.BaseURL != "" && s.Model == "" && s.Script == "" {
		return llm.BackendOpenAI
	}
	return s.Backend
}

// PullTarget is the catalog model --pull downloads before a run with these
// settings opens its backend (openBackend's choice, made ahead of it): the
// catalog model --model names when it is not in the models directory, or
// the recommended default when no model is set and the directory holds
// none; nothing for a model server. ok is false when nothing needs
// downloading.
func PullTarget(s *config.Settings) (e models.CatalogEntry, ok bool) {
	if impliedBackend(s) == llm.BackendOpenAI {
		return e, false // the server has the model
	}
	dir := s.ModelsDirectory()
	if s.Model == "" {
		if _, err := models.Resolve("", dir); !errors.Is(err, models.ErrNoModel) {
			return e, false
		}
		return models.DefaultCatalogEntry(), true
	}
	if e, ok = models.LookupCatalog(s.Model); !ok {
		return e, false
	}
	if _, err := models.Resolve(e.Name, dir); err == nil {
		return e, false
	}
	return e, true
}

// recoverHint says how a saved plan's run gets a model to recover failed
// steps with (Options.GivenModelOnly); messages that already say how to
// give a model leave it out.
const recoverHint = "to let a model recover failed steps, give --model NAME (or set TACT_MODEL)"

// PullHint names the command that gets catalog model e and what it costs.
func PullHint(e models.CatalogEntry) string {
	return fmt.Sprintf("run \"tact models pull %s\" (%s download) or add --pull", e.Name, e.SizeText())
}

// NoModelHint is what a run that needs a model and has none says to do.
func NoModelHint() string {
	return PullHint(models.DefaultCatalogEntry())
}
