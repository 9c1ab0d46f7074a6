package policy

import (
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
)

// Rules may name MCP tools (SERVER.TOOL) and tool patterns ("github.*"),
// where "*" matches any run of characters in the whole name.
func TestPolicyToolGlobs(t *testing.T) {
	p, err := ParsePolicy([]byte(`{
		"allow": [{"tool": "github.*"}, {"tool": "fs.write_file"}, {"tool": "*_file", "path": "notes/**"}],
		"deny":  [{"tool": "github.delete_*"}, {"tool": "run_comm*", "command": "rm"}]}`), "policy.json")
	if err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{Workspace: "/ws"}
	tests := []struct {
		call                tools.Call
		wantAllow, wantDeny string
	}{
		{gtCall("github.create_issue", tools.ClassExec, `{}`), `tool=github.*`, ""},
		{gtCall("github.delete_repo", tools.ClassWrite, `{}`), `tool=github.*`, `tool=github.delete_*`},
		{gtCall("gitlab.create_issue", tools.ClassExec, `{}`), "", ""},
		{gtCall("fs.write_file", tools.ClassWrite, `{"path":"/tmp/x"}`), "tool=fs.write_file", ""},
		{gtCall("fs.edit_file", tools.ClassWrite, `{}`), "", ""},
		{gtCall("write_file", tools.ClassWrite, `{"path":"notes/a.md"}`), `tool=*_file path="notes/**"`, ""},
		{gtCall("write_file", tools.ClassWrite, `{"path":"src/a.go"}`), "", ""},
		{gtCall("run_command", tools.ClassExec, `{"command":"rm -rf x"}`), "", `tool=run_comm* command="rm"`},
	}
	for _, tt := range tests {
		allow, deny := p.Match(env, tt.call)
		if got := ruleText(allow); got != tt.wantAllow {
			t.Errorf("%s: allow = %q, want %q", tt.call.Tool.Name(), got, tt.wantAllow)
		}
		if got := ruleText(deny); got != tt.wantDeny {
			t.Errorf("%s: deny = %q, want %q", tt.call.Tool.Name(), got, tt.wantDeny)
		}
	}
}

func TestPolicyToolGlobErrors(t *testing.T) {
	long := strings.Repeat("a", 300) + ".*"
	tests := []struct{ in, want string }{
		{`{"allow":[{"tool":"github.["}]}`, `tool "github.[": '[' (U+005B) is not allowed: tool names use ASCII letters, digits, "_", "-" and ".", and in a pattern only "*" is special`},
		{`{"deny":[{"tool":"run_comm?nd"}]}`, `tool "run_comm?nd": '?' (U+003F) is not allowed`},
		{`{"deny":[{"tool":"evil.admin/*"}]}`, `tool "evil.admin/*": '/' (U+002F) is not allowed`},
		{`{"deny":[{"tool":"evil\\.x"}]}`, `tool "evil\\.x": '\\' (U+005C) is not allowed`},
		{`{"deny":[{"tool":"evil.a dmin*"}]}`, `tool "evil.a dmin*": ' ' (U+0020) is not allowed`},
		{`{"deny":[{"tool":"evil.\u0430dmin"}]}`, `tool "evil.аdmin": '\u0430' (U+0430) is not allowed`},
		{`{"deny":[{"tool":"evil.x\u001b[31m"}]}`, `tool "evil.x\x1b[31m": '\x1b' (U+001B) is not allowed`},
		{`{"deny":[{"tool":"` + long + `"}]}`, `longer than 256 characters`},
		{`{"deny":[{"tool":"a/b"}]}`, `tool "a/b": '/' (U+002F) is not allowed`},
		{`{"allow":[{"tool":"github.*","command":"ls"}]}`, `"command" applies only to run_command, which tool "github.*" does not match`},
		{`{"allow":[{"tool":"github.*","path":"a/**"}]}`, `"path" applies only to write_file and edit_file, which tool "github.*" does not match`},
		{`{"allow":[{"tool":"fs.write_file","path":"a/**"}]}`, `"path" applies only to write_file and edit_file, not fs.write_file`},
		{`{"allow":[{"tool":"fs.run","command":"ls"}]}`, `"command" applies only to run_command, not fs.run`},
		{`{"allow":[{"tool":".x"}]}`, `tool ".x": not a tool name (an MCP tool is SERVER.TOOL`},
		{`{"allow":[{"tool":"a b.c"}]}`, `tool "a b.c": ' ' (U+0020) is not allowed`},
		{`{"allow":[{"tool":"s.` + strings.Repeat("x", 129) + `"}]}`, `not a tool name`},
	}
	for _, tt := range tests {
		_, err := ParsePolicy([]byte(tt.in), "p.json")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

// The attack, across names and rules: a deny pattern stops every
// tool whose whole name it covers, whatever characters follow, with --yes;
// and an allow pattern never covers a name it does not match.
func TestToolPatternDenyBeatsYes(t *testing.T) {
	env := &tools.Env{Workspace: t.TempDir()}
	names := []string{
		"evil.admin/wipe", "evil.admin.wipe", "evil.has space", "evil.\u0430dmin", "evil.x\x1b]52;c;eA==\x07",
		"evil.\u202eepiw", "evil.nul\x00", "evil." + strings.Repeat("w", 500), "evil.*", "evil.?",
	}
	for _, pattern := range []string{"evil.*", "*", "ev*", "*.*"} {
		p := &Policy{Deny: []Rule{{Tool: pattern}}}
		if err := p.Deny[0].validate(); err != nil {
			t.Fatalf("rule %q: %v", pattern, err)
		}
		for _, name := range names {
			c := gtCall(name, tools.ClassExec, `{}`)
			if _, deny := p.Match(env, c); deny == nil {
				t.Errorf("deny %q does not cover %q", pattern, name)
			}
			v := NewGate(GateOptions{Policy: p, Yes: true}).Check(t.Context(), env, []tools.Call{c})
			if v[0].Allowed || v[0].Decision != DecisionDeny {
				t.Errorf("deny %q, tool %q, --yes: %+v", pattern, name, v[0])
			}
		}
	}
	allow := &Policy{Allow: []Rule{{Tool: "good.*"}, {Tool: "evil.read"}}}
	for _, name := range names {
		if a, _ := allow.Match(env, gtCall(name, tools.ClassExec, `{}`)); a != nil {
			t.Errorf("allow %s covers %q", a, name)
		}
	}
	for _, name := range []string{"evil.read/x", "evil.readx", "good", "goo.d", "xgood.x"} {
		if a, _ := allow.Match(env, gtCall(name, tools.ClassExec, `{}`)); a != nil {
			t.Errorf("allow %s covers %q", a, name)
		}
	}
}

// "Always" on an MCP tool call stores a rule naming the tool only, even
// when its arguments have a "path" (an MCP server's paths are its own, not
// the workspace's).
func TestAlwaysRuleMCPTool(t *testing.T) {
	env := &tools.Env{Workspace: t.TempDir()}
	r, err := AlwaysRule(env, gtCall("fs.write_file", tools.ClassWrite, `{"path":"notes/a.md","content":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r != (Rule{Tool: "fs.write_file"}) {
		t.Errorf("rule = %+v, want tool only", r)
	}
}

// An "always" rule for an MCP tool is written to the policy file and read
// back by the next run.
func TestAppendRuleMCPTool(t *testing.T) {
	path := t.TempDir() + "/policy.json"
	if err := AppendRule(path, Rule{Tool: "fs.write_file"}); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	if allow, _ := p.Match(&tools.Env{Workspace: "/ws"}, gtCall("fs.write_file", tools.ClassWrite, `{"path":"x"}`)); allow == nil {
		t.Errorf("rule %+v does not match", p.Allow)
	}
}
