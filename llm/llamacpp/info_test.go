package llamacpp

import (
	"testing"

	"github.com/tactcli/tact/llm"
)

// The capabilities read only the options: checked without loading a model.
func TestModelInfoWithoutModel(t *testing.T) {
	for _, tc := range []struct {
		opts        Options
		info        llm.ModelInfo
		concurrency int
	}{
		{Options{ModelPath: "/m/qwen2.5-0.5b.gguf", CtxSize: 4096, Parallel: 1},
			llm.ModelInfo{Backend: "llama", Model: "qwen2.5-0.5b", ContextSize: 4096, Parallel: 1}, 1},
		{Options{ModelPath: "tiny.gguf", CtxSize: 2048, Parallel: 4},
			llm.ModelInfo{Backend: "llama", Model: "tiny", ContextSize: 2048, Parallel: 4}, 4},
		{Options{ModelPath: "x", Parallel: 0}, llm.ModelInfo{Backend: "llama", Model: "x", Parallel: 1}, 1},
	} {
		b := &Backend{opts: tc.opts}
		if got := llm.InfoOf(b); got != tc.info {
			t.Errorf("%+v: info %+v, want %+v", tc.opts, got, tc.info)
		}
		if got := llm.ConcurrencyOf(b); got != tc.concurrency {
			t.Errorf("%+v: concurrency %d, want %d", tc.opts, got, tc.concurrency)
		}
	}
}
