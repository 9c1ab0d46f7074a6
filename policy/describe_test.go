package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tactcli/tact/redact/redacttest"
	"github.com/tactcli/tact/tools"
)

// The approval prompt shortens long argument strings; a secret straddling
// the shortening is redacted first, so no part of it shows.
func TestDescribeCallRedactsBeforeShortening(t *testing.T) {
	env := &tools.Env{Workspace: t.TempDir(), Redactor: redacttest.Redactor(t)}
	content := strings.Repeat("A", maxShownString-5) + redacttest.Secret + strings.Repeat("B", 300)
	args, _ := json.Marshal(map[string]string{"path": "x.txt", "content": content})
	tool, _ := tools.DefaultRegistry().Get("write_file")
	shown := env.Redactor.Redact(DescribeCall(env, tools.Call{Tool: tool, Args: args}))
	if leaked := redacttest.LeakedPart(shown, redacttest.Secret); leaked != "" {
		t.Fatalf("approval prompt shows %q: %s", leaked, shown)
	}
	if !strings.Contains(shown, "… (") {
		t.Fatalf("content not shortened: %s", shown)
	}
}
