package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm/llamaruntime"
)

// runtimeTarball is the pinned CPU package's real tarball, packed once with
// npm into the user's cache (as make test does); without npm the caller
// skips.
func runtimeTarball(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no cache directory for the runtime's tarball:", err)
	}
	p, _ := llamaruntime.Pinned(llamaruntime.CPU)
	path, err := llamaruntime.NpmPack(context.Background(), filepath.Join(cache, "tact", "runtime-npm"), p)
	if errors.Is(err, llamaruntime.ErrNoNpm) {
		t.Skipf("npm is not installed: the runtime scripts install the real %s tarball (npm pack); install Node.js and npm to run them", p.Spec())
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRuntimeScripts runs testdata/runtime: tact runtime, install (from a
// file, a mirror, an unreachable one, a damaged tarball) and version, on
// the real pinned tarball.
func TestRuntimeScripts(t *testing.T) {
	tgz := runtimeTarball(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/runtime",
		Setup: func(env *testscript.Env) error {
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("XDG_DATA_HOME", env.WorkDir+"/.local/share")
			env.Setenv("XDG_CACHE_HOME", env.WorkDir+"/.cache")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/.local/state")
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("TACT_NO_INPUT", "1")
			env.Setenv("RUNTIME_TGZ", tgz)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jq":         cmdJQ,
			"exitcode":   cmdExitCode,
			"registry":   cmdRegistry,
			"head":       cmdHead,
			"synthmodel": cmdSynthModel,
			"zap":        cmdZap,
		},
	})
}

// cmdRegistry serves FILE at the registry path of the pinned CPU package
// on a local server for the rest of the script and sets $REGISTRY to its
// URL (a mirror for TACT_RUNTIME_URL): registry FILE.
func cmdRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: registry FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	p, _ := llamaruntime.Pinned(llamaruntime.CPU)
	path := "/" + p.Name + "/-/" + p.TarballName()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("REGISTRY", srv.URL)
}

// cmdHead copies the first N bytes of FILE to OUT: head N FILE OUT.
func cmdHead(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: head N FILE OUT")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	data, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), data[:min(n, len(data))], 0o644))
}

// cmdZap overwrites the first 64 bytes of FILE with zeros, keeping its
// size: a library damaged in place (zap FILE).
func cmdZap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: zap FILE")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY, 0)
	ts.Check(err)
	_, err = f.WriteAt(make([]byte, 64), 0)
	ts.Check(err)
	ts.Check(f.Close())
}

// TestRuntimeCommandArgs: what tact runtime install and build parse.
func TestRuntimeCommandArgs(t *testing.T) {
	f := &factory{IO: &iostreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, Settings: &config.Settings{}}
	t.Run("install", func(t *testing.T) {
		var got *runtimeInstallOptions
		cmd := newRuntimeInstallCmd(f, func(_ context.Context, o *runtimeInstallOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"--cuda", "--force", "--stall-timeout", "5s", "x.tgz"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.File != "x.tgz" || !got.CUDA || !got.Force || got.StallTimeout != 5*time.Second {
			t.Errorf("parsed %+v", got)
		}
	})
	t.Run("build", func(t *testing.T) {
		var got *runtimeBuildOptions
		cmd := newRuntimeBuildCmd(f, func(_ context.Context, o *runtimeBuildOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"--jobs", "3", "--work-dir", "w", "src.tgz"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.File != "src.tgz" || got.Jobs != 3 || got.WorkDir != "w" || got.StallTimeout != llamaruntime.DefaultStallTimeout {
			t.Errorf("parsed %+v", got)
		}
	})
}
