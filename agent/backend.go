package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/memfit"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/models"
)

// openBackend picks the model backend: --backend if given; else openai when
// --base-url is given without --model or --script; else llama when a model
// is configured (--model, TACT_MODEL, or the only model in the models
// directory); else script when --script is given; else none.
// settingName describes a setting for messages (see Options.SettingName).
// What the backend is (plan headers, traces) it says itself: llm.InfoOf.
func openBackend(ctx context.Context, s *config.Settings, settingName func(field string) string) (llm.Backend, error) {
	name := s.Backend
	if name == "" && s.BaseURL != "" && s.Model == "" && s.Script == "" {
		name = "openai"
	}
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
			return nil, badInputf("--backend llama: no model: %s; or give --model PATH|NAME, set TACT_MODEL, or put a .gguf file in %s", PullHint(models.DefaultCatalogEntry()), s.ModelsDirectory())
		default:
			if e, ok := models.LookupCatalog(s.Model); ok && errors.Is(err, fs.ErrNotExist) {
				setting := settingName("Model") // TACT_MODEL=NAME (--model), or --model
				if !strings.Contains(setting, "=") {
					setting += " " + s.Model
				}
				return nil, badInputf("%s: not pulled yet: %s", setting, PullHint(e))
			}
			if name == "llama" || s.Model != "" {
				return nil, badInput(err)
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
		return llm.None{Why: why}, nil
	case "script":
		if s.Script == "" {
			return nil, badInputf("--backend script needs --script FILE")
		}
		sc, err := llm.LoadScript(s.Script)
		if err != nil {
			return nil, badInput(err)
		}
		return sc, nil
	case "llama":
		return openLlama(ctx, s, modelPath, settingName)
	case "openai":
		return openOpenAI(s)
	default:
		return nil, badInputf("--backend %q: want llama, openai, script or none", name)
	}
}

// PullHint names the command that gets catalog model e and what it costs.
func PullHint(e models.CatalogEntry) string {
	return fmt.Sprintf("run \"tact models pull %s\" (%s download) or add --pull", e.Name, e.SizeText())
}

// NoModelHint is what a run that needs a model and has none says to do.
func NoModelHint() string {
	return PullHint(models.DefaultCatalogEntry())
}

// openLlama loads the model in-process (once per run, mmap'd).
func openLlama(ctx context.Context, s *config.Settings, modelPath string, settingName func(field string) string) (llm.Backend, error) {
	if err := checkMemory(s, modelPath, settingName); err != nil {
		return nil, badInput(err)
	}
	b, err := llamacpp.Load(ctx, llamacpp.Options{
		ModelPath: modelPath, Threads: s.Threads, CtxSize: s.CtxSize, BatchSize: s.BatchSize,
		GPULayers: s.GPULayers, FlashAttn: s.FlashAttn, KVCacheType: s.KVCacheType, Verbose: s.Verbose, LibDir: s.LibDir,
		NoCPULock: !s.CPULock, Parallel: s.Parallel, PromptCacheDir: promptCacheDir(s), PromptCacheMax: int64(s.PromptCacheMax),
	})
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled while waiting for a CPU turn to load: a signal or
			// --timeout, not a bad model.
			return nil, contextError(ctx)
		}
		return nil, badInput(err)
	}
	slog.Debug("llama backend", "describe", b.Describe())
	return b, nil
}

// promptCacheDir is where the llama backend keeps the KV state of pinned
// prefixes, or "" when --no-prompt-cache or a zero --prompt-cache-max
// turns the cache off.
func promptCacheDir(s *config.Settings) string {
	if s.NoPromptCache || s.PromptCacheMax <= 0 {
		return ""
	}
	return config.PromptCacheDir()
}

// checkMemory refuses a context whose KV cache and buffers, with the model,
// cannot fit in the memory available: llama.cpp would allocate until the
// machine swaps or the kernel kills tact. settingName describes --ctx-size.
func checkMemory(s *config.Settings, modelPath string, settingName func(field string) string) error {
	shape, info, err := memfit.ReadShape(modelPath)
	if err != nil {
		return err
	}
	ctx, what := s.CtxSize, ""
	if ctx <= 0 {
		// As llamacpp.New picks it: the model's own, capped.
		ctx = llamacpp.DefaultCtxSize
		if n := int(info.ContextLength); n > 0 {
			ctx = min(n, llamacpp.MaxAutoCtxSize)
		}
		what = fmt.Sprintf("model %s: its default context of %d tokens", info.Name, ctx)
	} else {
		what = fmt.Sprintf("%s %d", "--ctx-size", ctx)
		if settingName != nil {
			what = settingName("CtxSize")
			if strings.HasPrefix(what, "--") {
				what = fmt.Sprintf("%s %d", what, ctx)
			}
		}
	}
	// Each of --parallel sequences has its own window of ctx tokens.
	parallel := max(s.Parallel, 1)
	if parallel > 1 {
		what += fmt.Sprintf(" for each of --parallel %d sequences", parallel)
	}
	need := shape.Estimate(info.Size, ctx*parallel, cmp.Or(s.BatchSize, llamacpp.DefaultBatchSize), s.KVCacheType, s.FlashAttn)
	avail, err := AvailableMemory()
	if err != nil {
		slog.Debug("cannot tell the memory available; not checking --ctx-size", "err", err)
		return nil
	}
	slog.Debug("memory estimate", "ctx", ctx, "weights", need.Weights, "kv", need.KV, "compute", need.Compute, "available", avail)
	if need.Total() <= avail {
		return nil
	}
	return errors.New(what + ": needs about " + memfit.Size(need.Total()) + " (model " + memfit.Size(need.Weights) +
		", KV cache " + memfit.Size(need.KV) + ", buffers " + memfit.Size(need.Compute) + ") but " +
		memfit.Size(avail) + " of memory is available; lower --ctx-size")
}

// AvailableMemory is memfit.Available; tests replace it.
var AvailableMemory = memfit.Available
