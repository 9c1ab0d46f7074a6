package mcpserve

import (
	"encoding/json"
	"strings"

	"github.com/tactcli/tact/redact"
)

// ClientConfig is the mcpServers entry (JSON) that starts tact mcp serve
// as exe with workspace (absolute) and the rest of serveArgs (what
// followed "mcp serve" on the command line, less --print-config and the
// workspace), and the TACT_* variables of environ that hold no secret.
// left names what was left out because red finds a secret in it (and
// tokenEnv, the HTTP token's variable, always): the client's to give.
func ClientConfig(exe, workspace string, serveArgs, environ []string, tokenEnv string, red *redact.Redactor) (out []byte, left []string, err error) {
	args := []string{"mcp", "serve", "--workspace", workspace}
	for _, a := range withoutWorkspace(serveArgs) {
		if red.Redact(a) != a {
			if n := len(args); n > 0 && (args[n-1] == "--env" || args[n-1] == "--redact") {
				args = args[:n-1]
			}
			left = append(left, "an argument holding a secret")
			continue
		}
		args = append(args, a)
	}
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "TACT_") {
			continue
		}
		// The token's variable is the client's to set, never printed, and
		// so is any other holding a secret.
		if k == tokenEnv || red.Redact(v) != v || red.Redact(kv) != kv {
			left = append(left, k)
			continue
		}
		env[k] = v
	}
	entry := map[string]any{"command": exe, "args": args}
	if len(env) > 0 {
		entry["env"] = env
	}
	out, err = json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"tact": entry}}, "", "  ")
	return out, left, err
}

// ServeArgs is what follows "mcp serve" in argv.
func ServeArgs(argv []string) []string {
	for i := 1; i+1 < len(argv); i++ {
		if argv[i] == "mcp" && argv[i+1] == "serve" {
			return argv[i+2:]
		}
	}
	return nil
}

// withoutWorkspace drops --print-config and the workspace (given absolute
// instead) from args.
func withoutWorkspace(args []string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--print-config" || strings.HasPrefix(a, "--print-config="):
		case a == "--workspace":
			i++
		case strings.HasPrefix(a, "--workspace="):
		default:
			out = append(out, a)
		}
	}
	return out
}
