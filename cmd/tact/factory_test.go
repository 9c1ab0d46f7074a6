package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
)

// factoryEnv gives in-process commands a clean, unattended environment:
// no TACT_* setting of the caller's, config and models inside dir.
func factoryEnv(t *testing.T) (dir string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TACT_") || strings.HasPrefix(k, "REACT_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	dir = t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("TACT_MODELS_DIR", filepath.Join(dir, "models"))
	t.Setenv("TACT_NO_INPUT", "1")
	return dir
}

// countingFactory is a factory whose opens are counted.
func countingFactory(stdin string) (f *factory, opens *int, stdout, stderr *bytes.Buffer) {
	stdout, stderr, opens = &bytes.Buffer{}, &bytes.Buffer{}, new(int)
	f = newFactory(&iostreams{In: strings.NewReader(stdin), Out: stdout, ErrOut: stderr})
	f.open = func(ctx context.Context, s *config.Settings, o agent.Options) (*agent.Runtime, error) {
		*opens++
		return agent.Open(ctx, s, o)
	}
	return f, opens, stdout, stderr
}

// The runtime (the model, MCP servers, trace) is opened only by commands
// that run a job or list what a run has (tools, without a model), only
// once their input is read, and at most once; the factory closes it.
func TestFactoryOpensLazilyOnce(t *testing.T) {
	dir := factoryEnv(t)
	plan := filepath.Join(dir, "plan.jsonl")
	queries := filepath.Join(dir, "queries.txt")
	if err := os.WriteFile(plan, []byte(`{"type":"step","step":1,"tool":"final_answer","args":{"answer":"done"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(queries, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := "--workspace=" + dir
	for _, tc := range []struct {
		args  []string
		stdin string
		opens int
		code  int
	}{
		{[]string{"version"}, "", 0, 0},
		{[]string{"tools"}, "", 1, 0}, // model-free: the registry and redactor a run has
		{[]string{"models", "list"}, "", 0, 0},
		{[]string{"run", "--help"}, "", 0, 0},
		{[]string{"run", ws}, "", 0, 2},                              // empty query
		{[]string{"plan", ws, "--top-p", "0"}, "q", 0, 2},            // bad setting: refused before
		{[]string{"exec", ws, filepath.Join(dir, "nope")}, "", 0, 2}, // no plan file
		{[]string{"exec", ws, "--backend", "none", plan}, "", 1, 0},
		{[]string{"exec", ws, "--backend", "none", "--workspace", "/nonexistent"}, `{"tool":"final_answer","args":{"answer":"x"}}`, 1, 2}, // open fails
		{[]string{"plan", ws, "--backend", "none", "q"}, "", 1, 2},                                                                        // needs a model
		{[]string{"batch", ws, "--backend", "none", queries}, "", 1, exitBatchFailed},
	} {
		t.Run(strings.ReplaceAll(strings.Join(tc.args, " "), dir, "DIR"), func(t *testing.T) {
			f, opens, _, stderr := countingFactory(tc.stdin)
			root, err := newRootCmd(f)
			if err != nil {
				t.Fatal(err)
			}
			root.SetArgs(tc.args)
			err = root.ExecuteContext(context.Background())
			if cerr := f.Close(); cerr != nil {
				t.Errorf("close: %v", cerr)
			}
			if code := exitCodeOf(err); code != tc.code || *opens != tc.opens {
				t.Errorf("exit %d (%v), %d opens; want exit %d, %d opens; stderr:\n%s", code, err, *opens, tc.code, tc.opens, stderr)
			}
		})
	}
}

// Runtime opens once and hands every caller the same runtime (or error);
// Close closes it once and nothing opens afterwards.
func TestFactoryRuntime(t *testing.T) {
	dir := factoryEnv(t)
	ctx := context.Background()
	f, opens, _, _ := countingFactory("")
	f.Settings.Workspace, f.Settings.Backend = dir, "none"
	rt1, err := f.Runtime(ctx, agent.Options{Mode: "run"})
	if err != nil {
		t.Fatal(err)
	}
	rt2, err := f.Runtime(ctx, agent.Options{Mode: "plan"})
	if err != nil || rt1 != rt2 || *opens != 1 {
		t.Fatalf("second call: %p %p %v, %d opens", rt1, rt2, err, *opens)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if rt, err := f.Runtime(ctx, agent.Options{}); rt != nil || !errors.Is(err, errFactoryClosed) || *opens != 1 {
		t.Fatalf("after close: %v %v, %d opens", rt, err, *opens)
	}

	// A failed open is not retried.
	f, opens, _, _ = countingFactory("")
	f.Settings.Workspace = "/nonexistent/dir"
	for range 2 {
		if _, err := f.Runtime(ctx, agent.Options{}); agent.KindOf(err) != agent.ErrBadInput || *opens != 1 {
			t.Fatalf("bad workspace: %v, %d opens", err, *opens)
		}
	}
	// Closing a factory that never opened opens nothing.
	f, opens, _, _ = countingFactory("")
	if err := f.Close(); err != nil || *opens != 0 {
		t.Fatalf("close unopened: %v, %d opens", err, *opens)
	}
}
