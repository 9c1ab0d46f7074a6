package hooks

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestAliases(t *testing.T) {
	for _, tt := range []struct {
		tool string
		want []string
	}{
		{"run_command", []string{"run_command", "Bash"}},
		{"list_files", []string{"list_files", "LS", "Glob"}},
		{"search_files", []string{"search_files", "Grep"}},
		{"jq", []string{"jq"}},
		{"srv.tool", []string{"srv.tool", "mcp__srv__tool"}},
		{"srv.a.b", []string{"srv.a.b", "mcp__srv__a.b"}},
		{".x", []string{".x"}},
	} {
		if got := Aliases(tt.tool); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Aliases(%q) = %q, want %q", tt.tool, got, tt.want)
		}
	}
}

func TestWithAliases(t *testing.T) {
	const ws = "/work/ws"
	for _, tt := range []struct {
		tool, args, want string
	}{
		{"read_file", `{"path": "a/../b.go", "limit": 3}`, `{"path": "a/../b.go", "limit": 3,"file_path":"/work/ws/b.go"}`},
		{"read_file", `{"path":"/etc//hosts"}`, `{"path":"/etc//hosts","file_path":"/etc/hosts"}`},
		{"write_file", `{"path":"x.txt","content":"hi"}`, `{"path":"x.txt","content":"hi","file_path":"/work/ws/x.txt"}`},
		{"edit_file", `{"path":"x","old_string":"a","new_string":"b"}`, `{"path":"x","old_string":"a","new_string":"b","file_path":"/work/ws/x"}`},
		// A field the args already have is never replaced.
		{"edit_file", `{"path":"x","file_path":"mine"}`, `{"path":"x","file_path":"mine"}`},
		{"read_file", `{"path":7}`, `{"path":7}`},
		{"run_command", `{"command":"ls"}`, `{"command":"ls","cwd":"/work/ws"}`},
		{"run_command", `{"command":"ls","working_dir":"sub/"}`, `{"command":"ls","working_dir":"sub/","cwd":"/work/ws/sub"}`},
		{"run_command", `{"command":"ls","cwd":"x"}`, `{"command":"ls","cwd":"x"}`},
		{"run_command", ` { } `, `{"cwd":"/work/ws"}`},
		{"search_files", `{"pattern":"x","path":"src"}`, `{"pattern":"x","path":"src"}`},
		{"list_files", `{}`, `{}`},
		{"srv.tool", `{"path":"x"}`, `{"path":"x"}`},
		// Not an object: unchanged.
		{"run_command", `["ls"]`, `["ls"]`},
		{"run_command", `"ls"`, `"ls"`},
		{"run_command", ``, ``},
	} {
		got := string(withAliases(tt.tool, json.RawMessage(tt.args), ws))
		if got != tt.want {
			t.Errorf("withAliases(%s, %s) = %s, want %s", tt.tool, tt.args, got, tt.want)
		}
		if strings.HasPrefix(strings.TrimSpace(tt.args), "{") && !json.Valid([]byte(got)) {
			t.Errorf("withAliases(%s, %s) = %s: not JSON", tt.tool, tt.args, got)
		}
	}
}
