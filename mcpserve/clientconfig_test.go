package mcpserve

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tactcli/tact/redact"
)

// The client's entry keeps the flags as typed, the workspace absolute, and
// the TACT_* variables without secrets; what holds one is named, not printed.
func TestClientConfig(t *testing.T) {
	red, err := redact.NewRedactor([]string{"GITHUB_TOKEN=ghp_secretsecret123"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"/bin/tact", "mcp", "serve", "--print-config", "--workspace", "rel", "--env", "GITHUB_TOKEN=ghp_secretsecret123", "--read-only", "--workspace=x"}
	environ := []string{"TACT_MODEL=m.gguf", "TACT_TOKEN=t", "TACT_API_KEY=ghp_secretsecret123", "HOME=/h"}
	out, left, err := ClientConfig("/usr/bin/tact", "/abs/ws", ServeArgs(argv), environ, "TACT_TOKEN", red)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	e := got.MCPServers["tact"]
	if want := []string{"mcp", "serve", "--workspace", "/abs/ws", "--read-only"}; e.Command != "/usr/bin/tact" || !reflect.DeepEqual(e.Args, want) {
		t.Errorf("entry %s, want args %q", out, want)
	}
	if !reflect.DeepEqual(e.Env, map[string]string{"TACT_MODEL": "m.gguf"}) {
		t.Errorf("env %v", e.Env)
	}
	if want := []string{"an argument holding a secret", "TACT_TOKEN", "TACT_API_KEY"}; !reflect.DeepEqual(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	if ServeArgs([]string{"/bin/tact", "run"}) != nil {
		t.Error("no mcp serve in argv: no args")
	}
}
