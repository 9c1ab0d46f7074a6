package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/itchyny/gojq"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tactcli/tact/internal/mcptest"
	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/internal/testlock"
	"github.com/tactcli/tact/llm/llamacpp"
	"github.com/tactcli/tact/llm/llamaruntime"
	"github.com/tactcli/tact/sandbox"
)

func TestMain(m *testing.M) {
	// run_command's sandbox helper re-executes this binary (as "tact"); it
	// must serve the helper, not run tactMain or the tests.
	sandbox.ServeHelper()
	// The test MCP server (internal/mcptest), for Go tests that start it.
	if v := os.Getenv(mcptest.EnvServe); v != "" {
		os.Exit(mcptest.Main(mcptest.Args(v)))
	}
	testscript.Main(lockedTests{m}, map[string]func(){
		"tact":          func() { os.Exit(tactMain()) },
		"mcptestserver": func() { os.Exit(mcptest.Main(os.Args[1:])) },
		"epipe":         func() { os.Exit(epipeMain(os.Args[1:])) },
	})
}

// lockedTests runs the tests (not the "tact" commands testscript starts)
// while no other package runs models: see internal/testlock.
type lockedTests struct{ m *testing.M }

func (l lockedTests) Run() int {
	release := testlock.Hold()
	defer release()
	// The runs the tests start are recorded in a run history of their
	// own, never the user's.
	if state, err := os.MkdirTemp("", "tact-test-state-"); err == nil {
		os.Setenv("XDG_STATE_HOME", state)
		defer os.RemoveAll(state)
	}
	// The llama.cpp runtime the tests' tact processes load, whose data
	// directories are the tests' own: TACT_RUNTIME_DIR (make test sets
	// it), else the one installed for this user.
	if os.Getenv("TACT_RUNTIME_DIR") == "" {
		if r, err := llamaruntime.Locate(llamaruntime.LocateOptions{}); err == nil {
			os.Setenv("TACT_RUNTIME_DIR", r.Dir)
		}
	}
	return l.m.Run()
}

// runtimeEnv passes the tests' runtime (lockedTests.Run) to a tact process
// given a clean environment.
func runtimeEnv() string { return "TACT_RUNTIME_DIR=" + os.Getenv("TACT_RUNTIME_DIR") }

// TestScripts runs the CLI contract scripts in testdata/script: each is a
// txtar archive of files plus the commands a user would type, with the
// expected stdout, stderr and exit codes.
func TestScripts(t *testing.T) {
	// One runtime directory for every script, so their tact processes share
	// one CPU lock and take turns at the model as users' runs do. testscript
	// gives each script its own TMPDIR, where the lock would otherwise live:
	// five model-running scripts at once on two cores took 10-25 times as
	// long as one after another (ggml's threads spin at barriers).
	runtimeDir := t.TempDir()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("XDG_RUNTIME_DIR", runtimeDir)
			// A clean, unattended environment: no terminal prompts, no user
			// policy or models, and no TACT_* settings leaking in from the
			// developer's shell.
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("XDG_DATA_HOME", env.WorkDir+"/.local/share")
			env.Setenv("XDG_CACHE_HOME", env.WorkDir+"/.cache")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/.local/state")
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("TACT_NO_INPUT", "1")
			env.Setenv("TACT_RUNTIME_DIR", os.Getenv("TACT_RUNTIME_DIR"))
			// The repository root, so scripts can run the shipped examples
			// exactly as the README shows them.
			root, err := filepath.Abs("../..")
			if err != nil {
				return err
			}
			env.Setenv("REPO", root)
			// The Go build and module caches, for scripts that run go
			// (docs_examples: go run, a hook that runs go test): with HOME
			// moved, go would build from nothing and fetch modules.
			for k, v := range goCaches() {
				env.Setenv(k, v)
			}
			return nil
		},
		// [root]: the script runs as root (it can chown files to another
		// user, and root's own rules apply). [cgollama]: tact runs the cgo
		// llama.cpp provider (-tags cgollama), not the runtime.
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			case "cgollama":
				return llamacpp.ProviderName == "cgo", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jq":         cmdJQ,
			"exitcode":   cmdExitCode,
			"synthmodel": cmdSynthModel,
			"doc":        cmdDoc,
			"docscript":  cmdDocScript,
		},
	})
}

// cmdJQ is a small jq for scripts, so assertions can name one JSON field
// instead of matching a long line:
//
//	jq [-r] [-s] [-c] FILTER [FILE]
//
// It runs FILTER over every JSON value in FILE (default: the previous
// command's stdout; -s slurps them into one array, for JSONL files) and
// prints each result as compact JSON on its own line (-r: strings raw), so
// the next `stdout` or `cmp stdout` checks it. A filter error fails the
// script.
func cmdJQ(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! jq")
	}
	raw, slurp := false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		switch args[0] {
		case "-r":
			raw = true
		case "-s":
			slurp = true
		case "-c":
			// Output is always compact; accepted for familiarity.
		default:
			ts.Fatalf("jq: unknown flag %s", args[0])
		}
		args = args[1:]
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: jq [-r] [-s] [-c] FILTER [FILE]")
	}
	file := "stdout"
	if len(args) == 2 {
		file = args[1]
	}
	// Read the input before Stdout() replaces the previous command's output.
	text := ts.ReadFile(file)
	q, err := gojq.Parse(args[0])
	ts.Check(err)
	code, err := gojq.Compile(q)
	ts.Check(err)
	var inputs []any
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			ts.Fatalf("jq: %s is not JSON: %v", file, err)
		}
		inputs = append(inputs, v)
	}
	if slurp {
		if inputs == nil {
			inputs = []any{}
		}
		inputs = []any{inputs}
	}
	out := ts.Stdout()
	for _, in := range inputs {
		iter := code.Run(in)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := v.(error); isErr {
				ts.Fatalf("jq %s: %v", args[0], err)
			}
			if s, isStr := v.(string); isStr && raw {
				fmt.Fprintln(out, s)
				continue
			}
			b, err := gojq.Marshal(v)
			ts.Check(err)
			fmt.Fprintln(out, string(b))
		}
	}
}

// cmdExitCode runs a program like exec but asserts its exact exit status,
// since the exit code is the CLI's contract with scripts:
//
//	exitcode N PROG [ARGS...]
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N[,N...] PROG [ARGS...]")
	}
	// A comma list accepts any of several codes (runs on random-weight models).
	allowed := map[int]bool{}
	for _, f := range strings.Split(args[0], ",") {
		n, err := strconv.Atoi(f)
		ts.Check(err)
		allowed[n] = true
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if !allowed[got] {
		ts.Fatalf("%s exited with %d, want %s", args[1], got, args[0])
	}
}

// cmdSynthModel links a generated random-weight model into the script's
// work directory: synthmodel [ARCH-]tiny|small FILE (llama, or qwen35-tiny,
// gemma4-small, ...). Models are generated once into the user's cache
// directory (never committed).
func cmdSynthModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: synthmodel [ARCH-]tiny|small FILE")
	}
	m := synth.Model{Arch: synth.Llama}
	name := args[0]
	if a, z, ok := strings.Cut(name, "-"); ok {
		arch, err := synth.ParseArch(a)
		ts.Check(err)
		m.Arch, name = arch, z
	}
	size, err := synth.ParseSize(name)
	ts.Check(err)
	m.Size = size
	path, err := synth.EnsureModel(synth.CacheDir(), m)
	ts.Check(err)
	dst := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(filepath.Dir(dst), 0o755))
	ts.Check(os.Symlink(path, dst))
}

// epipeMain runs a program whose standard output is a pipe nobody reads
// any more (its read end closed first), so every write fails with EPIPE,
// as in `tact log | head -1` once head has exited, but every time. It
// exits with the program's status; stderr passes through:
//
//	epipe PROG [ARGS...]
func epipeMain(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: epipe PROG [ARGS...]")
		return 2
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "epipe:", err)
		return 2
	}
	r.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, w, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "epipe:", err)
		return 2
	}
	return 0
}

// goCaches are GOCACHE and GOMODCACHE as go reports them here (read once),
// with GOPROXY=off and GOTOOLCHAIN=local: a script's go
// never downloads.
var goCaches = sync.OnceValue(func() map[string]string {
	m := map[string]string{"GOPROXY": "off", "GOTOOLCHAIN": "local"}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if f := strings.Fields(string(out)); err == nil && len(f) == 2 {
		m["GOCACHE"], m["GOMODCACHE"] = f[0], f[1]
	}
	return m
})
