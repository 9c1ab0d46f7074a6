package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// Pinned versions of the third-party MCP servers the integration test runs.
const (
	npmEverything = "@modelcontextprotocol/server-everything@2026.8.31"
	npmFilesystem = "@modelcontextprotocol/server-filesystem@2026.8.31"
)

// TestMCPNpmServers runs tact against real third-party MCP servers from npm
// (testdata/mcpnpm): a saved plan calling their tools end to end with
// --backend none, and a tiny generated model whose planner is offered their
// tools. The servers are installed once into the user's cache directory
// (npm install --prefix); without node and npm the test is skipped.
func TestMCPNpmServers(t *testing.T) {
	if testing.Short() {
		t.Skip("installs MCP servers from npm and runs a model")
	}
	dir, err := ensureNpmServers()
	if errors.Is(err, errNoNode) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/mcpnpm",
		Setup: func(env *testscript.Env) error {
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("XDG_DATA_HOME", env.WorkDir+"/.local/share")
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("TACT_NO_INPUT", "1")
			env.Setenv("TACT_RUNTIME_DIR", os.Getenv("TACT_RUNTIME_DIR"))
			env.Setenv("MCPNPM", filepath.Join(dir, "node_modules"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jq":         cmdJQ,
			"exitcode":   cmdExitCode,
			"synthmodel": cmdSynthModel,
		},
	})
}

var errNoNode = errors.New("node and npm are needed for the MCP integration test (it installs " + npmEverything + " and " + npmFilesystem + "); install Node.js to run it")

// ensureNpmServers installs the pinned servers into
// $XDG_CACHE_HOME/tact-test-npm once (a lock keeps concurrent test runs
// from installing at the same time) and returns that directory.
func ensureNpmServers() (string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", errNoNode
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "tact-test-npm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if npmInstalled(dir, npmEverything) && npmInstalled(dir, npmFilesystem) {
		return dir, nil
	}
	cmd := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", npmEverything, npmFilesystem)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm install %s %s: %v\n%s", npmEverything, npmFilesystem, err, out)
	}
	if !npmInstalled(dir, npmEverything) || !npmInstalled(dir, npmFilesystem) {
		return "", fmt.Errorf("npm install did not install the pinned versions into %s:\n%s", dir, out)
	}
	return dir, nil
}

// npmInstalled reports whether spec (NAME@VERSION) is installed under dir.
func npmInstalled(dir, spec string) bool {
	i := strings.LastIndexByte(spec, '@')
	name, version := spec[:i], spec[i+1:]
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
	return err == nil && strings.Contains(string(b), `"version": "`+version+`"`)
}
