package llamacpp

import (
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/llm"
)

// The optional capabilities of llm (besides llamacpp.go's TokenCounter and
// ContextSizer) that front ends ask for.
var (
	_ llm.Describer    = (*Backend)(nil)
	_ llm.Concurrent   = (*Backend)(nil)
	_ llm.TokenCounter = (*Backend)(nil)
	_ llm.ContextSizer = (*Backend)(nil)
)

// ModelInfo names the model by its file (as `--model NAME` and `tact
// models list` do), with the window of one call and the sequences.
func (b *Backend) ModelInfo() llm.ModelInfo {
	return llm.ModelInfo{Backend: llm.BackendLlama, Model: modelName(b.opts.ModelPath),
		ContextSize: b.opts.CtxSize, Parallel: max(b.opts.Parallel, 1)}
}

// Concurrency is Parallel: each call has its own sequence, and calls
// beyond that wait for a free one.
func (b *Backend) Concurrency() int { return max(b.opts.Parallel, 1) }

// modelName is the file's name without its extension.
func modelName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}
