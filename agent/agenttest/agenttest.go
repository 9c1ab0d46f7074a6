// Package agenttest holds what tests of the engine and of the packages
// around it (the step service, the backends) need to open a runtime: its
// settings and script-backend replies.
package agenttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/config"
)

// AnswerPlan is a script-backend reply: a plan whose one step answers "done".
const AnswerPlan = `{"kind":"plan","text":"{\"plan\":[{\"thought\":\"answer right away\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"done\"}}]}"}`

// Settings are a runtime's for a test: a workspace of its own, no policy
// or MCP servers file of the caller's, the script's replies if any.
func Settings(t *testing.T, script string) *config.Settings {
	t.Helper()
	s := config.Defaults()
	s.Workspace = t.TempDir()
	s.NoInput = true
	dir := t.TempDir()
	s.Policy = filepath.Join(dir, "policy.json")
	s.MCPConfig = ""
	t.Setenv("XDG_CONFIG_HOME", dir)
	if script != "" {
		p := filepath.Join(dir, "script.jsonl")
		if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Script = p
	}
	return s
}

// ScriptLines makes script-backend action replies; with none, a script
// whose every action call fails.
func ScriptLines(replies ...string) string {
	if len(replies) == 0 {
		return `{"kind":"plan","text":"{}"}` + "\n"
	}
	var b strings.Builder
	for _, r := range replies {
		line, _ := json.Marshal(map[string]string{"kind": "action", "text": r})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}
