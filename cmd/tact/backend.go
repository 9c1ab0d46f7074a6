package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/models"
)

// openBackend picks the model backend: --backend if given; else llama when a
// model is configured (--model, TACT_MODEL, or the only model in the models
// directory); else script when --script is given; else none.
// settingName describes a setting for messages (see runOptions.SettingName).
// With --pull it first downloads the catalog model the run will use.
func openBackend(ctx context.Context, s *config.Settings, settingName func(field string) string, streams *iostreams) (llm.Backend, map[string]any, error) {
	if err := pullForRun(ctx, s, streams); err != nil {
		return nil, nil, err
	}
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
			return nil, nil, badInputf("--backend llama: no model: %s; or give --model PATH|NAME, set TACT_MODEL, or put a .gguf file in %s", pullHint(models.DefaultCatalogEntry()), s.ModelsDirectory())
		default:
			if e, ok := models.LookupCatalog(s.Model); ok && errors.Is(err, fs.ErrNotExist) {
				setting := settingName("Model") // TACT_MODEL=NAME (--model), or --model
				if !strings.Contains(setting, "=") {
					setting += " " + s.Model
				}
				return nil, nil, badInputf("%s: not pulled yet: %s", setting, pullHint(e))
			}
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

// pullHint names the command that gets catalog model e and what it costs.
func pullHint(e models.CatalogEntry) string {
	return fmt.Sprintf("run \"tact models pull %s\" (%s download) or add --pull", e.Name, e.SizeText())
}

// noModelHint is what a run that needs a model and has none says to do.
func noModelHint() string {
	return pullHint(models.DefaultCatalogEntry())
}

// pullForRun makes --pull download the catalog model the run will use: the
// one --model names, or the recommended default when no model is set and
// the models directory holds none. A model already there, or a --model that
// is a path or not a catalog name, needs nothing. Without --pull it does
// nothing: a run never downloads unasked.
func pullForRun(ctx context.Context, s *config.Settings, streams *iostreams) error {
	if !s.Pull {
		return nil
	}
	dir := s.ModelsDirectory()
	var e models.CatalogEntry
	if s.Model == "" {
		if _, err := models.Resolve("", dir); !errors.Is(err, models.ErrNoModel) {
			return nil
		}
		e = models.DefaultCatalogEntry()
	} else {
		var ok bool
		if e, ok = models.LookupCatalog(s.Model); !ok {
			return nil
		}
		s.Model = e.Name // the file is NAME.gguf, whatever case --model had
		if _, err := models.Resolve(e.Name, dir); err == nil {
			return nil
		}
	}
	_, err := pullCatalogModel(ctx, s, streams, e)
	if err == nil && s.Model == "" {
		s.Model = e.Name
	}
	return err
}

// pullCatalogModel downloads catalog entry e into the models directory,
// saying so on stderr (with a progress bar on a terminal), and returns its
// path. Errors carry pull's exit codes (see pullExit).
func pullCatalogModel(ctx context.Context, s *config.Settings, streams *iostreams, e models.CatalogEntry) (string, error) {
	endpoint, err := models.HubEndpoint(s.HFEndpoint)
	if err != nil {
		return "", badInput(err)
	}
	opts := models.PullOptions{URL: e.URL(endpoint), Dir: s.ModelsDirectory(), Name: e.Name, SHA256: e.SHA256}
	if !s.Quiet {
		fmt.Fprintf(streams.ErrOut, "tact: pulling %s (%s) from %s\n", e.Name, e.SizeText(), models.SafeURL(opts.URL))
		if streams.StderrTTY {
			opts.Progress = streams.ErrOut
		}
	}
	res, err := models.PullModel(ctx, opts)
	if err != nil {
		return "", pullExit(err)
	}
	warnUnverified(streams.ErrOut, s.Quiet, e.Name, res)
	return res.Path, nil
}
