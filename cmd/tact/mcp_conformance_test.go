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
)

// npmConformance is the pinned official MCP conformance suite; it runs on
// Node 22 (fs.globSync), the npm "node" package's (npmNode).
const npmConformance = "@modelcontextprotocol/conformance@0.1.16"

// errNoNpmConformance: the suite cannot be installed here.
var errNoNpmConformance = errors.New("node and npm are needed for the MCP conformance test (it installs " + npmNode + " and " + npmConformance + " from npm); install Node.js to run it")

// npmConformanceInstall is Node 22 and the suite's entry point.
type npmConformanceInstall struct{ node, suite string }

// ensureNpmConformance installs the pinned Node and suite into
// $XDG_CACHE_HOME/tact-test-npm-conformance once (a lock keeps concurrent
// test runs from installing at the same time).
func ensureNpmConformance() (npmConformanceInstall, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return npmConformanceInstall{}, errNoNpmConformance
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return npmConformanceInstall{}, err
	}
	dir := filepath.Join(cache, "tact-test-npm-conformance")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return npmConformanceInstall{}, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return npmConformanceInstall{}, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return npmConformanceInstall{}, fmt.Errorf("lock %s: %w", dir, err)
	}
	modules := filepath.Join(dir, "node_modules")
	in := npmConformanceInstall{
		node:  filepath.Join(modules, "node", "bin", "node"),
		suite: filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js"),
	}
	if !npmInstalled(dir, npmNode) || !npmInstalled(dir, npmConformance) {
		// Both in one install: a second --no-save install would prune the first.
		out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", npmNode, npmConformance).CombinedOutput()
		if err != nil {
			return npmConformanceInstall{}, fmt.Errorf("npm install %s %s: %v\n%s", npmNode, npmConformance, err, out)
		}
		if !npmInstalled(dir, npmNode) || !npmInstalled(dir, npmConformance) {
			return npmConformanceInstall{}, fmt.Errorf("npm install did not install %s and %s into %s:\n%s", npmNode, npmConformance, dir, out)
		}
	}
	if _, err := exec.Command(in.node, "--version").Output(); err != nil {
		return npmConformanceInstall{}, fmt.Errorf("%s --version (from %s): %w", in.node, npmNode, err)
	}
	return in, nil
}

// TestMCPServeConformance runs the official MCP conformance suite's server
// scenarios against tact mcp serve --http: every scenario passes but those
// testdata/mcp-conformance-baseline.yml lists (fixtures of the suite's
// reference server that tact does not offer), dns-rebinding-protection
// included (localhost, 127.0.0.1 and [::1] Origins accepted, others
// refused). Skipped only where node and npm are missing.
func TestMCPServeConformance(t *testing.T) {
	suite, err := ensureNpmConformance()
	if errors.Is(err, errNoNpmConformance) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	baseline, err := filepath.Abs(filepath.Join("testdata", "mcp-conformance-baseline.yml"))
	if err != nil {
		t.Fatal(err)
	}
	c := newMCPServeCase(t)
	// The suite opens a session a scenario and never ends them.
	srv := startMCPHTTP(t, c, "--max-sessions", "64")
	results := filepath.Join(c.dir, "conformance")
	cmd := exec.Command(suite.node, suite.suite, "server", "--url", srv.url, "--expected-failures", baseline, "-o", results)
	cmd.Env = append(c.env, "PATH="+filepath.Dir(suite.node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance suite: %v\n%s", err, out)
	}
	for _, want := range []string{"✓ dns-rebinding-protection", "✓ server-initialize", "✓ tools-list", "Baseline check passed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the suite's output lacks %q:\n%s", want, out)
		}
	}
}
