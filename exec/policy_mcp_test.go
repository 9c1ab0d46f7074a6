package exec

import (
	"strings"
	"testing"
)

// Rules may name MCP tools (SERVER.TOOL) and tool globs ("github.*"); a
// glob matches like path.Match on the tool name.
func TestPolicyToolGlobs(t *testing.T) {
	p, err := ParsePolicy([]byte(`{
		"allow": [{"tool": "github.*"}, {"tool": "fs.write_file"}, {"tool": "*_file", "path": "notes/**"}],
		"deny":  [{"tool": "github.delete_*"}, {"tool": "run_comm?nd", "command": "rm"}]}`), "policy.json")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Workspace: "/ws"}
	tests := []struct {
		call                Call
		wantAllow, wantDeny string
	}{
		{gtCall("github.create_issue", ClassExec, `{}`), `tool=github.*`, ""},
		{gtCall("github.delete_repo", ClassWrite, `{}`), `tool=github.*`, `tool=github.delete_*`},
		{gtCall("gitlab.create_issue", ClassExec, `{}`), "", ""},
		{gtCall("fs.write_file", ClassWrite, `{"path":"/tmp/x"}`), "tool=fs.write_file", ""},
		{gtCall("fs.edit_file", ClassWrite, `{}`), "", ""},
		{gtCall("write_file", ClassWrite, `{"path":"notes/a.md"}`), `tool=*_file path="notes/**"`, ""},
		{gtCall("write_file", ClassWrite, `{"path":"src/a.go"}`), "", ""},
		{gtCall("run_command", ClassExec, `{"command":"rm -rf x"}`), "", `tool=run_comm?nd command="rm"`},
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
	tests := []struct{ in, want string }{
		{`{"allow":[{"tool":"github.["}]}`, `tool "github.[": bad glob syntax`},
		{`{"allow":[{"tool":"github.*","command":"ls"}]}`, `"command" applies only to run_command, which tool "github.*" does not match`},
		{`{"allow":[{"tool":"github.*","path":"a/**"}]}`, `"path" applies only to write_file and edit_file, which tool "github.*" does not match`},
		{`{"allow":[{"tool":"fs.write_file","path":"a/**"}]}`, `"path" applies only to write_file and edit_file, not fs.write_file`},
		{`{"allow":[{"tool":"fs.run","command":"ls"}]}`, `"command" applies only to run_command, not fs.run`},
		{`{"allow":[{"tool":".x"}]}`, `tool ".x": not a tool name (an MCP tool is SERVER.TOOL)`},
		{`{"allow":[{"tool":"a b.c"}]}`, `tool "a b.c": not a tool name`},
	}
	for _, tt := range tests {
		_, err := ParsePolicy([]byte(tt.in), "p.json")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

// "Always" on an MCP tool call stores a rule naming the tool only, even
// when its arguments have a "path" (an MCP server's paths are its own, not
// the workspace's).
func TestAlwaysRuleMCPTool(t *testing.T) {
	env := &Env{Workspace: t.TempDir()}
	r, err := AlwaysRule(env, gtCall("fs.write_file", ClassWrite, `{"path":"notes/a.md","content":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r != (Rule{Tool: "fs.write_file"}) {
		t.Errorf("rule = %+v, want tool only", r)
	}
}

// MCP process groups registered with TrackProcessGroup are ended by
// KillRunning (tact's second Ctrl-C) and can be forgotten again.
func TestTrackProcessGroup(t *testing.T) {
	untrack := TrackProcessGroup(424242)
	if v, ok := liveGroups.Load(424242); !ok || v.(bool) {
		t.Fatalf("group not tracked as a plain group: %v %v", v, ok)
	}
	untrack()
	if _, ok := liveGroups.Load(424242); ok {
		t.Fatal("group still tracked")
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
	if allow, _ := p.Match(&Env{Workspace: "/ws"}, gtCall("fs.write_file", ClassWrite, `{"path":"x"}`)); allow == nil {
		t.Errorf("rule %+v does not match", p.Allow)
	}
}
