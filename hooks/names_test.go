package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
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
		{"read_file", `{"path": "a/../b.go", "limit": 3}`, `{"path":"b.go","limit":3,"file_path":"/work/ws/b.go","lexical_path":"a/../b.go"}`},
		{"read_file", `{"path":"/etc//hosts"}`, `{"path":"/etc/hosts","file_path":"/etc/hosts","lexical_path":"/etc//hosts"}`},
		{"read_file", `{"path":"/work/ws/x"}`, `{"path":"x","file_path":"/work/ws/x","lexical_path":"/work/ws/x"}`},
		{"write_file", `{"path":"x.txt","content":"hi"}`, `{"path":"x.txt","content":"hi","file_path":"/work/ws/x.txt","lexical_path":"x.txt"}`},
		{"edit_file", `{"path":"x","old_string":"a","new_string":"b"}`, `{"path":"x","old_string":"a","new_string":"b","file_path":"/work/ws/x","lexical_path":"x"}`},
		// A field tact computes replaces one the args have: the tools take
		// no such argument, so only a model misleading a hook sends it.
		{"edit_file", `{"path":"x","file_path":"mine"}`, `{"path":"x","file_path":"/work/ws/x","lexical_path":"x"}`},
		{"edit_file", `{"lexical_path":"docs/y","path":"x"}`, `{"lexical_path":"x","path":"x","file_path":"/work/ws/x"}`},
		{"read_file", `{"path":7}`, `{"path":7}`},
		{"run_command", `{"command":"ls"}`, `{"command":"ls","cwd":"/work/ws"}`},
		{"run_command", `{"command":"ls","working_dir":"sub/"}`, `{"command":"ls","working_dir":"sub/","cwd":"/work/ws/sub"}`},
		{"run_command", `{"command":"ls","cwd":"x"}`, `{"command":"ls","cwd":"/work/ws"}`},
		{"run_command", ` { } `, `{"cwd":"/work/ws"}`},
		{"search_files", `{"pattern":"x","path":"src/"}`, `{"pattern":"x","path":"src","lexical_path":"src/"}`},
		{"list_files", `{}`, `{}`},
		// jq declares its path too (no file_path: Claude Code has no jq).
		{"jq", `{"filter":".","path":"d/../x.json"}`, `{"filter":".","path":"x.json","lexical_path":"d/../x.json"}`},
		{"jq", `{"filter":".","input":"{}"}`, `{"filter":".","input":"{}"}`},
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

// A hook sees the file a call reaches, not its spelling (issue 36 item 1):
// docs/out -> ../src inside the workspace makes docs/out/main.txt
// src/main.txt in path and file_path; a link that leads out is the
// absolute path outside. The spelling stays in lexical_path.
func TestWithAliasesResolvesSymlinks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	away, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"src", "docs"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../src", filepath.Join(ws, "docs", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(away, filepath.Join(ws, "away")); err != nil {
		t.Fatal(err)
	}
	field := func(raw json.RawMessage, k string) string {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		s, _ := m[k].(string)
		return s
	}
	in := withAliases("write_file", json.RawMessage(`{"path":"docs/out/main.txt","content":"x"}`), ws)
	if p, fp, lp := field(in, "path"), field(in, "file_path"), field(in, "lexical_path"); p != "src/main.txt" || fp != filepath.Join(ws, "src", "main.txt") || lp != "docs/out/main.txt" {
		t.Errorf("tool_input %s: path %q, file_path %q, lexical_path %q", in, p, fp, lp)
	}
	in = withAliases("read_file", json.RawMessage(`{"path":"away/secret"}`), ws)
	if p, fp := field(in, "path"), field(in, "file_path"); p != filepath.Join(away, "secret") || fp != p {
		t.Errorf("tool_input %s: a link out must show the path outside", in)
	}
	in = withAliases("run_command", json.RawMessage(`{"command":"ls","working_dir":"docs/out"}`), ws)
	if d := field(in, "cwd"); d != filepath.Join(ws, "src") {
		t.Errorf("tool_input %s: cwd %q", in, d)
	}
}

// Every built-in tool's hook names and resolved paths come from its
// declaration (tools.Decl), so a new tool needs no change here.
func TestNamesFollowDeclarations(t *testing.T) {
	const ws = "/work/ws"
	for _, tool := range tools.Builtins() {
		d := tools.DeclOf(tool)
		if got, want := Aliases(tool.Name()), append([]string{tool.Name()}, d.HookNames...); !reflect.DeepEqual(got, want) {
			t.Errorf("Aliases(%s) = %q, want %q", tool.Name(), got, want)
		}
		for _, arg := range d.Paths {
			in, _ := json.Marshal(map[string]string{arg: "a/./b/../c"})
			var got map[string]string
			if err := json.Unmarshal(withAliases(tool.Name(), in, ws), &got); err != nil {
				t.Fatalf("%s: %v", tool.Name(), err)
			}
			if got[arg] != "a/c" || got["lexical_"+arg] != "a/./b/../c" {
				t.Errorf("%s's %s in tool_input: %q", tool.Name(), arg, got)
			}
			if _, ok := got["file_path"]; ok != d.FilePath {
				t.Errorf("%s: file_path %v, declared %v", tool.Name(), ok, d.FilePath)
			}
		}
	}
}
