package main

// tact's rows of -only peers: the build's provider in-process, and the
// other provider (docs/inference.md, One backend, two providers) in a
// child bench built for it, `go run [-tags cgollama] ./scripts/bench
// -tact-peer WORKLOAD.json`, which prints its row as JSON. One process
// never holds both: the cgo build links llama.cpp's symbols into the
// binary, where they would interpose on the runtime's.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/llm/llamaruntime"
)

var tactPeerFlag = flag.String("tact-peer", "", "internal to -only peers: run tact's part on this workload file and print its row as JSON")

type providerBuild struct {
	name string // llamacpp.ProviderName of that build
	tags string // go build tags
	cgo  string // CGO_ENABLED
}

// otherProvider is the provider this bench was not built with.
func otherProvider() providerBuild {
	if llamacpp.ProviderName == "runtime" {
		return providerBuild{name: "cgo", tags: "cgollama", cgo: "1"}
	}
	return providerBuild{name: "runtime", tags: "", cgo: "0"}
}

// tactRowName names a tact row by its provider and what runs the model:
// the runtime's directory (prebuilt 3.22.1 or a native build) when the
// provider is the runtime.
func tactRowName(provider, describe string) string {
	what, _, _ := strings.Cut(describe, ":")
	if dir, err := runtimeDir(); err == nil && dir != "" {
		what = filepath.Base(dir)
	}
	return fmt.Sprintf("tact, %s provider (%s)", provider, what)
}

// otherRuntimes are the usable runtimes of the pinned llama.cpp release
// installed besides the one this bench runs on (a native build beside the
// prebuilt one, say): each gets its own row.
func otherRuntimes() []string {
	used, err := runtimeDir()
	if err != nil || used == "" {
		return nil
	}
	entries, err := llamaruntime.List("")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		if e.Err == nil && e.Manifest.LlamaCpp == llamaruntime.LlamaCppRelease && filepath.Clean(e.Dir) != filepath.Clean(used) {
			dirs = append(dirs, e.Dir)
		}
	}
	return dirs
}

// otherTactPeer runs tact's part of the workload on the other provider,
// or on this one with another runtime directory (runtime not "").
func otherTactPeer(w *peerWorkload, p providerBuild, runtime string) *peerResult {
	res := &peerResult{}
	dir, err := os.MkdirTemp("", "tact-bench-peer-")
	if err != nil {
		res.err = err
		return res
	}
	defer os.RemoveAll(dir)
	wf := filepath.Join(dir, "workload.json")
	data, _ := json.Marshal(w)
	if err := os.WriteFile(wf, data, 0o644); err != nil {
		res.err = err
		return res
	}
	args := []string{"run"}
	if p.tags != "" {
		args = append(args, "-tags", p.tags)
	}
	args = append(args, "./scripts/bench", "-tact-peer", wf, "-runtime", cmp.Or(runtime, *runtimeFlag))
	if *verboseFlag {
		args = append(args, "-v")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	// The Makefile exports the cgo flags the cgo provider is built with.
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+p.cgo)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		res.err = fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, oneLine(lastLines(stderr.String(), 5)))
		return res
	}
	var row struct {
		peerResult
		Name string `json:"name"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &row); err != nil {
		res.err = fmt.Errorf("tact peer: %v: %q", err, oneLine(lastLines(stdout.String(), 3)))
		return res
	}
	r := row.peerResult
	r.name = row.Name
	return &r
}

// tactPeerChild is -tact-peer: tact's part on a workload, one JSON row out.
func tactPeerChild(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var w peerWorkload
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	lockDir, err := os.MkdirTemp("", "tact-bench-lock-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(lockDir)
	be, err := newBackend(llamacpp.Options{ModelPath: w.Model, Threads: w.Threads, CtxSize: w.Ctx, BatchSize: w.Batch, Verbose: *verboseFlag, CPULockDir: lockDir})
	if err != nil {
		return err
	}
	defer be.Close()
	r := tactPeer(be, &w)
	if r.err != nil {
		return r.err
	}
	return json.NewEncoder(os.Stdout).Encode(struct {
		*peerResult
		Name string `json:"name"`
	}{r, tactRowName(llamacpp.ProviderName, be.Describe())})
}
