package exec

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
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
		{gtCall("run_command", ClassExec, `{"command":"rm -rf x"}`), "", `tool=run_comm* command="rm"`},
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

// Tool patterns match the whole name as people read it: "*" crosses "."
// and "/" (issue 23: "evil.*" let "evil.admin/wipe" run with --yes), and
// nothing else is special or loose. Names no server may give (refused by
// ValidMCPToolName) are matched exactly too, so a rule can never be
// dodged by a name's spelling.
func TestMatchToolPattern(t *testing.T) {
	long := strings.Repeat("x", 128)
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"evil.*", "evil.admin/wipe", true},
		{"evil.*", "evil.a/b/c/d", true},
		{"evil.*", "evil.admin.wipe", true},
		{"evil.*", "evil.", true},
		{"evil.*", "evil", false},
		{"evil.*", "evilx.wipe", false},
		{"evil.*", "Evil.wipe", false},
		{"evil.*", "xevil.wipe", false},
		{"evil.*", "\u0435vil.wipe", false}, // Cyrillic "е"
		{"evil.*", "evil.has space", true},
		{"evil.*", "evil.\x1b[31m", true},
		{"evil.*", "evil.\u202egnp", true},
		{"evil.*", "evil." + long, true},
		{"*", "anything/at all", true},
		{"*", "", true},
		{"**", "x", true},
		{"*.wipe", "evil.admin/wipe", false},
		{"*wipe", "evil.admin/wipe", true},
		{"*/wipe", "evil.admin/wipe", true}, // not a valid rule, but matching stays exact
		{"evil.*wipe*", "evil.admin/wipe-all", true},
		{"evil.*.wipe", "evil.a.b.wipe", true},
		{"evil.*.wipe", "evil.wipe", false},
		{"github.delete_*", "github.delete_repo", true},
		{"github.delete_*", "github.delete", false},
		{"a*a*a*a*a*b", strings.Repeat("a", 190), false},
		{"a*a*a*a*a*b", strings.Repeat("a", 190) + "b", true},
		{"evil.admin", "evil.admin", true},
		{"evil.admin", "evil.admin/wipe", false},
		{"evil.a?min", "evil.admin", false},
		{"evil.[a]dmin", "evil.admin", false},
		{"run_command", "run_command", true},
		{"run_*", "run_command", true},
		{"*_file", "fs.read_file", true},
	}
	for _, tt := range tests {
		if got := MatchToolPattern(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchToolPattern(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// The names a server may give its tools: the MCP specification's alphabet,
// 1 to 128 characters; the rest is refused.
func TestValidMCPToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"read_file": true, "admin.wipe": true, "a-b_c.D9": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, "admin/wipe": false, "has space": false,
		"\u0430dmin": false, "red\x1b[31m": false, "tab\tname": false, "nul\x00": false, "new\nline": false,
		"bidi\u202e": false, "c1\u009b": false, "star*": false, "q?": false, "[s]": false, "back\\": false,
		"caf\u00e9": false, "full\uff0ewidth": false, "\xff": false,
	} {
		if got := ValidMCPToolName(name); got != want {
			t.Errorf("ValidMCPToolName(%q) = %v, want %v", name, got, want)
		}
	}
}

// The attack, across names and rules: a deny pattern stops every
// tool whose whole name it covers, whatever characters follow, with --yes;
// and an allow pattern never covers a name it does not match.
func TestToolPatternDenyBeatsYes(t *testing.T) {
	env := &Env{Workspace: t.TempDir()}
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
			c := gtCall(name, ClassExec, `{}`)
			if _, deny := p.Match(env, c); deny == nil {
				t.Errorf("deny %q does not cover %q", pattern, name)
			}
			v := NewGate(GateOptions{Policy: p, Yes: true}).Check(t.Context(), env, []Call{c})
			if v[0].Allowed || v[0].Decision != DecisionDeny {
				t.Errorf("deny %q, tool %q, --yes: %+v", pattern, name, v[0])
			}
		}
	}
	allow := &Policy{Allow: []Rule{{Tool: "good.*"}, {Tool: "evil.read"}}}
	for _, name := range names {
		if a, _ := allow.Match(env, gtCall(name, ClassExec, `{}`)); a != nil {
			t.Errorf("allow %s covers %q", a, name)
		}
	}
	for _, name := range []string{"evil.read/x", "evil.readx", "good", "goo.d", "xgood.x"} {
		if a, _ := allow.Match(env, gtCall(name, ClassExec, `{}`)); a != nil {
			t.Errorf("allow %s covers %q", a, name)
		}
	}
}

// FuzzMatchToolPattern checks the matcher against a regular expression
// built from the same pattern, on any input, and that it stays fast.
func FuzzMatchToolPattern(f *testing.F) {
	f.Add("evil.*", "evil.admin/wipe")
	f.Add("*a*b*", "xaxbx")
	f.Add("a*", "\x00a")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 300 || len(name) > 300 {
			return
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if err != nil {
			return
		}
		// regexp works on UTF-8 runes, the matcher on bytes: they agree
		// on valid UTF-8.
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			MatchToolPattern(pattern, name)
			return
		}
		if got, want := MatchToolPattern(pattern, name), re.MatchString(name); got != want {
			t.Fatalf("MatchToolPattern(%q, %q) = %v, regexp says %v", pattern, name, got, want)
		}
	})
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
