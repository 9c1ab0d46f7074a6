package backends

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/llm/llamacpp/memfit"
	"github.com/tactcli/tact/llm/llamaruntime"
)

// openLlama loads the model in-process (once per run, mmap'd). Errors are
// bad input for the engine, but ctx's own error when ctx ended.
func openLlama(ctx context.Context, s *config.Settings, modelPath string, settingName func(field string) string) (llm.Backend, error) {
	if err := checkMemory(s, modelPath, settingName); err != nil {
		return nil, err
	}
	o := llamacpp.Options{
		ModelPath: modelPath, Threads: s.Threads, CtxSize: s.CtxSize, BatchSize: s.BatchSize,
		GPULayers: s.GPULayers, FlashAttn: flashAttn(s), KVCacheType: s.KVCacheType, Verbose: s.Verbose, LibDir: s.LibDir,
		NoCPULock: !s.CPULock, Parallel: s.Parallel, PromptCacheDir: promptCacheDir(s), PromptCacheMax: int64(s.PromptCacheMax),
	}
	if llamacpp.ProviderName == "runtime" {
		// The runtime the build loads: TACT_RUNTIME_DIR, else the best
		// one installed; none says how to install it, in one line.
		r, err := llamaruntime.Locate(llamaruntime.LocateOptions{Dir: s.RuntimeDir})
		if err != nil {
			return nil, err
		}
		o.RuntimeDir, o.RuntimeVersion = r.Dir, llamaruntime.LlamaCppRelease
	}
	b, err := llamacpp.Load(ctx, o)
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled while waiting for a CPU turn to load: a signal or
			// --timeout, not a bad model.
			return nil, ctx.Err()
		}
		return nil, err
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
	need := shape.Estimate(info.Size, ctx*parallel, cmp.Or(s.BatchSize, llamacpp.DefaultBatchSize), s.KVCacheType, llamacpp.FlashAttnOn(flashAttn(s)))
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

// flashAttn is --flash-attention as llamacpp takes it (auto, on or off;
// Validate has refused any other value).
func flashAttn(s *config.Settings) string {
	mode, _ := config.FlashAttnMode(s.FlashAttn)
	return mode
}
