package devsetup

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tactcli/tact/"

// engine lists the packages no ground-floor package may import
// (docs/development.md, Layout).
var engine = []string{"agent", "server", "react", "planner", "runplan", "mcp", "tools", "policy", "hooks", "sandbox", "llm", "cmd"}

// TestLayout checks docs/development.md's import rules with go list (no
// build): nothing under internal/ (nor redact, schema, prompt, config,
// history) imports an engine package; only llm/backends imports the cgo
// backend; the engine's packages build without it.
func TestLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "../../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module)
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) {
				deps[pkg] = append(deps[pkg], strings.TrimPrefix(d, module))
			}
		}
	}
	if len(deps) == 0 {
		t.Fatal("go list found no packages")
	}
	isEngine := func(p string) bool {
		for _, e := range engine {
			if p == e || strings.HasPrefix(p, e+"/") {
				return true
			}
		}
		return false
	}
	for pkg, ds := range deps {
		ground := strings.HasPrefix(pkg, "internal/") || pkg == "redact" || pkg == "schema" || pkg == "prompt" || pkg == "config" || pkg == "history"
		for _, d := range ds {
			if ground && isEngine(d) {
				t.Errorf("%s (ground floor) depends on the engine package %s", pkg, d)
			}
		}
	}
	for _, pkg := range []string{"agent", "server", "react", "planner", "mcp", "tools", "policy", "hooks", "runplan", "history"} {
		for _, d := range deps[pkg] {
			if d == "llm/llamacpp" || d == "llm/openai" || d == "llm/backends" {
				t.Errorf("%s depends on the concrete backend %s", pkg, d)
			}
		}
	}
}
