package main

import (
	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/llm/llamaruntime"
)

// runtimeDir is the llama.cpp runtime the build's provider loads (the
// runtime provider; the cgo one needs none): -runtime, else the one tact
// uses.
func runtimeDir() (string, error) {
	if llamacpp.ProviderName != "runtime" {
		return "", nil
	}
	if *runtimeFlag != "" {
		return *runtimeFlag, nil
	}
	r, err := llamaruntime.Locate(llamaruntime.LocateOptions{})
	if err != nil {
		return "", err
	}
	return r.Dir, nil
}

// newBackend is llamacpp.New on the bench's runtime.
func newBackend(o llamacpp.Options) (*llamacpp.Backend, error) {
	dir, err := runtimeDir()
	if err != nil {
		return nil, err
	}
	o.RuntimeDir, o.RuntimeVersion = dir, llamaruntime.LlamaCppRelease
	return llamacpp.New(o)
}

// openBare is llamacpp.OpenBare on the bench's runtime.
func openBare(o llamacpp.BareOptions) (*llamacpp.Bare, error) {
	dir, err := runtimeDir()
	if err != nil {
		return nil, err
	}
	o.RuntimeDir, o.RuntimeVersion = dir, llamaruntime.LlamaCppRelease
	return llamacpp.OpenBare(o)
}
