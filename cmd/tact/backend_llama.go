package main

import (
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/llm/llamacpp"
)

// openLlama loads the model in-process (once per run, mmap'd).
func openLlama(s *config.Settings, modelPath string) (llm.Backend, map[string]any, error) {
	b, err := llamacpp.New(llamacpp.Options{
		ModelPath: modelPath, Threads: s.Threads, CtxSize: s.CtxSize, BatchSize: s.BatchSize,
		GPULayers: s.GPULayers, FlashAttn: s.FlashAttn, KVCacheType: s.KVCacheType, Verbose: s.Verbose, LibDir: s.LibDir,
	})
	if err != nil {
		return nil, nil, badInput(err)
	}
	slog.Debug("llama backend", "describe", b.Describe())
	name := strings.TrimSuffix(filepath.Base(modelPath), filepath.Ext(modelPath))
	return b, map[string]any{"backend": "llama", "model": name}, nil
}
