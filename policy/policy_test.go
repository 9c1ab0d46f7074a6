package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tactcli/tact/tools"
)

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    *Policy
		wantErr string // substring; empty means success
	}{
		{
			name: "good",
			in: `{
  "allow": [
    {"tool": "run_command", "command": "git status", "comment": "harmless"},
    {"tool": "write_file", "path": "src/**"},
    {"tool": "edit_file", "path": "./docs/*.md"}
  ],
  "deny": [{"command": "rm"}, {"tool": "*", "path": "**/.env"}]
}`,
			want: &Policy{
				Allow: []Rule{
					{Tool: "run_command", Command: "git status", Comment: "harmless"},
					{Tool: "write_file", Path: "src/**"},
					{Tool: "edit_file", Path: "./docs/*.md"},
				},
				Deny: []Rule{{Command: "rm"}, {Tool: "*", Path: "**/.env"}},
			},
		},
		{name: "any tool with command or path", in: `{"deny":[{"tool":"*","command":"rm"},{"path":"x/**"}]}`, want: &Policy{Deny: []Rule{{Tool: "*", Command: "rm"}, {Path: "x/**"}}}},
		{name: "empty file", in: "", want: &Policy{}},
		{name: "whitespace", in: " \n\t", want: &Policy{}},
		{name: "empty object", in: "{}", want: &Policy{}},
		{name: "only deny", in: `{"deny":[{"tool":"run_command"}]}`, want: &Policy{Deny: []Rule{{Tool: "run_command"}}}},
		{name: "unknown top-level field", in: `{"allow":[],"alow":[]}`, wantErr: `p.json: unknown field "alow"`},
		{name: "unknown rule field", in: `{"allow":[{"tool":"run_command"},{"paht":"src/**"}]}`, wantErr: `p.json: allow[1] {"paht":"src/**"}: unknown field "paht"`},
		{name: "bad glob", in: `{"allow":[{"path":"src/[a"}]}`, wantErr: `p.json: allow[0] {"path":"src/[a"}: path "src/[a": bad glob syntax`},
		{name: "absolute glob", in: `{"deny":[{"path":"/etc/*"}]}`, wantErr: `deny[0] {"path":"/etc/*"}: path "/etc/*": glob must be relative`},
		{name: "dotdot glob", in: `{"allow":[{"path":"../x"}]}`, wantErr: `".." segments are not allowed`},
		{name: "trailing slash glob", in: `{"allow":[{"path":"src/"}]}`, wantErr: `empty path segment`},
		{name: "empty rule", in: `{"allow":[{}]}`, wantErr: `p.json: allow[0] {}: empty rule`},
		{name: "comment-only rule", in: `{"deny":[{"comment":"x"}]}`, wantErr: `deny[0] {"comment":"x"}: empty rule`},
		{name: "command and path", in: `{"allow":[{"command":"ls","path":"x"}]}`, wantErr: `command and path cannot both be set`},
		{name: "unbalanced quote", in: `{"allow":[{"command":"echo 'hi"}]}`, wantErr: `allow[0] {"command":"echo 'hi"}: command "echo 'hi"`},
		{name: "blank command", in: `{"allow":[{"command":"   "}]}`, wantErr: `no words`},
		{name: "bad tool name", in: `{"allow":[{"tool":"run command"}]}`, wantErr: `unknown tool "run command"; did you mean "run_command"?`},
		// Rules that could never match are errors, not silently dead rules.
		{name: "tool typo", in: `{"deny":[{"tool":"run_comand","command":"rm"}]}`, wantErr: `p.json: deny[0] {"tool":"run_comand","command":"rm"}: unknown tool "run_comand"; did you mean "run_command"? (rules name edit_file, run_command, write_file or "*")`},
		{name: "tool with dash", in: `{"deny":[{"tool":"write-file"}]}`, wantErr: `deny[0] {"tool":"write-file"}: unknown tool "write-file"; did you mean "write_file"?`},
		{name: "tool case", in: `{"deny":[{"tool":"Edit_File"}]}`, wantErr: `unknown tool "Edit_File"; did you mean "edit_file"?`},
		{name: "no such tool", in: `{"allow":[{"tool":"nosuchtool"}]}`, wantErr: `p.json: allow[0] {"tool":"nosuchtool"}: unknown tool "nosuchtool" (rules name edit_file, run_command, write_file or "*")`},
		{name: "path on run_command", in: `{"deny":[{"tool":"run_command","path":"x"}]}`, wantErr: `deny[0] {"tool":"run_command","path":"x"}: "path" applies only to write_file and edit_file, not run_command`},
		{name: "command on write_file", in: `{"deny":[{"tool":"write_file","command":"rm"}]}`, wantErr: `"command" applies only to run_command, not write_file`},
		{name: "read tool", in: `{"deny":[{"tool":"read_file","path":".env"}]}`, wantErr: `tool "read_file" is a read tool: read tools always run and are never checked against policy`},
		{name: "git global option in rule", in: `{"deny":[{"command":"git -C repo push"}]}`, wantErr: `command "git -C repo push": git's options before the subcommand are not matched (tact looks through them); write "git push"`},
		{name: "kubectl global option in rule", in: `{"deny":[{"command":"kubectl -n prod delete"}]}`, wantErr: `write "kubectl delete"`},
		{name: "not a program", in: `{"deny":[{"command":"/ x"}]}`, wantErr: `"/" is not a program name`},
		{name: "long rule shortened", in: `{"allow":[{"tool":"` + strings.Repeat("x", 300) + `"}]}`, wantErr: `…: unknown tool`},
		{name: "syntax error position", in: "{\n  \"allow\": [\n    {\"tool\": \"x\",}\n  ]\n}", wantErr: `p.json:3:19: invalid character '}'`},
		{name: "truncated", in: `{"allow": [`, wantErr: `p.json:1:12: unexpected end of JSON`},
		{name: "wrong type", in: `{"allow": "everything"}`, wantErr: `p.json:1:23: allow: expected array, got string`},
		{name: "rule wrong type", in: `{"allow": [{"tool": 5}]}`, wantErr: `p.json: allow[0] {"tool":5}: tool: expected string, got number`},
		{name: "top-level array", in: `[]`, wantErr: `p.json:1:2: value: expected object, got array`},
		{name: "trailing data", in: `{} {}`, wantErr: `p.json:1:5: unexpected data after the policy object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePolicy([]byte(tt.in), "p.json")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "exec.") {
					t.Errorf("error %q should be one line without Go type names", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	p, err := LoadPolicy(filepath.Join(dir, "missing.json"))
	if err != nil || len(p.Allow)+len(p.Deny) != 0 {
		t.Fatalf("missing file: got %+v, %v; want empty policy", p, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"allow":[{"nope":1}]}`), 0o644)
	if _, err := LoadPolicy(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Fatalf("bad file: err = %v, want it prefixed with the path", err)
	}
}

func TestMatchPrecedence(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	p := &Policy{
		Allow: []Rule{
			{Tool: "run_command", Command: "git"},
			{Tool: "*"},
		},
		Deny: []Rule{
			{Tool: "run_command", Command: "git push"},
			{Path: "secrets/**"},
		},
	}
	tests := []struct {
		name                string
		call                tools.Call
		wantAllow, wantDeny string
	}{
		{"allowed by first rule", gtCall("run_command", tools.ClassExec, `{"command":"git log"}`), "tool=run_command command=\"git\"", ""},
		{"deny matches too", gtCall("run_command", tools.ClassExec, `{"command":"git push origin"}`), "tool=run_command command=\"git\"", "tool=run_command command=\"git push\""},
		{"path deny", gtCall("write_file", tools.ClassWrite, `{"path":"secrets/a/b"}`), "tool=*", "path=\"secrets/**\""},
		{"wildcard allow", gtCall("write_file", tools.ClassWrite, `{"path":"ok.txt"}`), "tool=*", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allow, deny := p.Match(env, tt.call)
			if got := ruleText(allow); got != tt.wantAllow {
				t.Errorf("allow = %s, want %s", got, tt.wantAllow)
			}
			if got := ruleText(deny); got != tt.wantDeny {
				t.Errorf("deny = %s, want %s", got, tt.wantDeny)
			}
		})
	}
	// And the gate lets deny win.
	v := NewGate(GateOptions{Policy: p, Yes: true}).Check(t.Context(), env, []tools.Call{tests[1].call})
	if v[0].Allowed || v[0].Decision != DecisionDeny || !strings.Contains(v[0].Reason, `command="git push"`) {
		t.Errorf("gate verdict = %+v, want deny naming the rule", v[0])
	}
	var nilPolicy *Policy
	if a, d := nilPolicy.Match(env, tests[0].call); a != nil || d != nil {
		t.Errorf("nil policy matched")
	}
}

func ruleText(r *Rule) string {
	if r == nil {
		return ""
	}
	return r.String()
}

func TestMatchCommandPrefix(t *testing.T) {
	tests := []struct {
		rule, command string
		want          bool
	}{
		{"git status", "git status", true},
		{"git status", "git status -s", true},
		{"git status", "git  status   -s", true},
		{"git status", "git statusx", false},
		{"git status", "git", false},
		{"git status", "gitstatus", false},
		{"git", "git push --force", true},
		{"git", "gitk", false},
		{"echo 'a b'", `echo "a b" c`, true},
		{"echo 'a b'", "echo a b", false},
		{"ls", "", false},
		{"ls", "echo 'unbalanced", false},
		{"go test", "/nonexistent/go test", false}, // not the go PATH finds
		{"go test", "./go test", false},
		{"./go test", "./go test -v", true}, // a rule naming a path matches that path
	}
	for _, tt := range tests {
		t.Run(tt.rule+"|"+tt.command, func(t *testing.T) {
			p := &Policy{Allow: []Rule{{Tool: "run_command", Command: tt.rule}}}
			args, _ := json.Marshal(map[string]string{"command": tt.command})
			allow, _ := p.Match(&tools.Env{Workspace: "/ws"}, gtCall("run_command", tools.ClassExec, string(args)))
			if (allow != nil) != tt.want {
				t.Errorf("match = %v, want %v", allow != nil, tt.want)
			}
		})
	}
	// Command given as an argv array is matched the same way.
	p := &Policy{Allow: []Rule{{Command: "git status"}}}
	if a, _ := p.Match(nil, gtCall("run_command", tools.ClassExec, `{"command":["git","status","-s"]}`)); a == nil {
		t.Errorf("argv array did not match")
	}
	// A rule on a tool name does not match other tools.
	p = &Policy{Allow: []Rule{{Tool: "run_command", Command: "ls"}}}
	if a, _ := p.Match(nil, gtCall("other", tools.ClassExec, `{"command":"ls"}`)); a != nil {
		t.Errorf("rule for run_command matched tool other")
	}
}

func TestMatchPathGlob(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"src/**", "src/a.go", true},
		{"src/**", "src/x/y/z.go", true},
		{"src/**", "srcx/a.go", false},
		{"src/**", "lib/src/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "a/b/c.txt", false},
		{"*.md", "README.md", true},
		{"*.md", "docs/README.md", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/sub/a.md", false},
		{"a/**/b/*.txt", "a/b/x.txt", true},
		{"a/**/b/*.txt", "a/1/2/b/x.txt", true},
		{"a/**/b/*.txt", "a/1/2/c/x.txt", false},
		{"./src/**", "src/a.go", true},
		{"src/**", "./src/../src/a.go", true},    // cleaned first
		{"src/**", "/ws/src/a.go", true},         // absolute inside the workspace
		{"src/**", "/elsewhere/src/a.go", false}, // outside
		{"**", "../outside.txt", false},          // allow rules never cover escapes
		{"x\\*y", "x*y", true},
		{"x\\*y", "xay", false},
	}
	env := &tools.Env{Workspace: "/ws"}
	for _, tt := range tests {
		t.Run(tt.glob+"|"+tt.path, func(t *testing.T) {
			p := &Policy{Allow: []Rule{{Tool: "write_file", Path: tt.glob}}}
			args, _ := json.Marshal(map[string]string{"path": tt.path, "content": "x"})
			allow, _ := p.Match(env, gtCall("write_file", tools.ClassWrite, string(args)))
			if (allow != nil) != tt.want {
				t.Errorf("match = %v, want %v", allow != nil, tt.want)
			}
		})
	}
	// Deny rules do cover paths that leave the workspace.
	p := &Policy{Deny: []Rule{{Path: "**"}}}
	if _, d := p.Match(env, gtCall("write_file", tools.ClassWrite, `{"path":"../outside.txt"}`)); d == nil {
		t.Errorf("deny ** did not match an escaping path")
	}
	// A path rule never matches a call without a path, nor a command rule a call without one.
	p = &Policy{Allow: []Rule{{Path: "**"}, {Command: "ls"}}}
	if a, _ := p.Match(env, gtCall("run_command", tools.ClassExec, `{"working_dir":"x"}`)); a != nil {
		t.Errorf("matched %v on a call with neither path nor command", a)
	}
}

func TestAppendRule(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deep", "tact", "policy.json")
	r1 := Rule{Tool: "run_command", Command: "git status"}
	if err := AppendRule(path, r1); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Allow, []Rule{r1}) {
		t.Fatalf("allow = %+v", p.Allow)
	}
	// A new policy file is private, and so are the directories tact made.
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("new policy file mode = %v, want 0600", st.Mode().Perm())
	}
	for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		if st, _ := os.Stat(d); st.Mode().Perm() != 0o700 {
			t.Errorf("created directory %s mode = %v, want 0700", d, st.Mode().Perm())
		}
	}

	// Existing rules (deny included) survive; a duplicate is not added again.
	os.WriteFile(path, []byte(`{"allow":[{"tool":"write_file","path":"a/**","comment":"mine"}],"deny":[{"command":"rm"}]}`), 0o640)
	os.Chmod(path, 0o640)
	for range 2 {
		if err := AppendRule(path, r1); err != nil {
			t.Fatal(err)
		}
	}
	p, _ = LoadPolicy(path)
	want := &Policy{Allow: []Rule{{Tool: "write_file", Path: "a/**", Comment: "mine"}, r1}, Deny: []Rule{{Command: "rm"}}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %+v, want %+v", p, want)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", st.Mode().Perm())
	}

	// An unparsable file is left alone.
	os.WriteFile(path, []byte(`{"allow": [`), 0o644)
	if err := AppendRule(path, r1); err == nil {
		t.Errorf("append to a broken file succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != `{"allow": [` {
		t.Errorf("broken file was rewritten: %q", b)
	}
	// An invalid rule is refused.
	if err := AppendRule(filepath.Join(dir, "x.json"), Rule{}); err == nil {
		t.Errorf("empty rule accepted")
	}
}

func TestAppendRuleThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "policy.json")
	os.MkdirAll(filepath.Dir(real), 0o755)
	os.WriteFile(real, []byte(`{"allow":[],"deny":[]}`), 0o644)
	link := filepath.Join(dir, "policy.json")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	if err := AppendRule(link, Rule{Tool: "edit_file"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink replaced by a file")
	}
	if p, _ := LoadPolicy(real); len(p.Allow) != 1 {
		t.Errorf("rule not written to the link target: %+v", p)
	}
}

// Two runs answering "always" at once must not lose each other's rule.
func TestAppendRuleConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- AppendRule(path, Rule{Tool: "run_command", Command: fmt.Sprintf("cmd%d", i)})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Allow) != n {
		t.Fatalf("got %d rules, want %d: %+v", len(p.Allow), n, p.Allow)
	}
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`,
		`{"allow":[{"tool":"run_command","command":"git status"}],"deny":[{"path":"**/.env"}]}`,
		`{"allow":[{"path":"a/**/b/*.go"},{"tool":"*"}]}`,
		`{"deny":[{"command":"echo 'a b' \"c\""}]}`,
		`{"allow":[{"path":"[a-z]*/\\*"}]}`,
		`{"allow": [`, `{"allow":[{"x":1}]}`,
	} {
		f.Add([]byte(s))
	}
	env := &tools.Env{Workspace: "/ws"}
	calls := []tools.Call{
		gtCall("run_command", tools.ClassExec, `{"command":"git status -s"}`),
		gtCall("run_command", tools.ClassExec, `{"command":["a","b"]}`),
		gtCall("run_command", tools.ClassExec, `{"command":"echo 'x"}`),
		gtCall("write_file", tools.ClassWrite, `{"path":"a/b/c/d.go","content":"x"}`),
		gtCall("edit_file", tools.ClassWrite, `{"path":"/ws/../etc/passwd"}`),
		gtCall("write_file", tools.ClassWrite, `not json`),
		{Tool: nil, Args: nil},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data, "fuzz.json")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error: %q", err)
			}
			return
		}
		for _, c := range calls {
			p.Match(env, c)
			p.Match(nil, c)
		}
		// What parses re-encodes to the same rules.
		out, err := p.marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := ParsePolicy(out, "again")
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if len(q.Allow) != len(p.Allow) || len(q.Deny) != len(p.Deny) {
			t.Fatalf("round trip changed the rules: %+v vs %+v", p, q)
		}
	})
}

// A symlink cannot carry an allowed write into a denied directory.
func TestMatchPathSymlink(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "secrets"), 0o755)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	if err := os.Symlink(filepath.Join(ws, "secrets"), filepath.Join(ws, "src", "link")); err != nil {
		t.Skip(err)
	}
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(ws, "src", "out"))
	env := &tools.Env{Workspace: ws}
	p := &Policy{Allow: []Rule{{Path: "src/**"}}, Deny: []Rule{{Path: "secrets/**"}}}
	tests := []struct {
		path                string
		wantAllow, wantDeny bool
	}{
		{"src/a.go", true, false},
		{"src/link/key.pem", false, true},
		{"src/link/new/deep.txt", false, true},
		{"src/out/x", false, false},
		{"secrets/x", false, true},
	}
	for _, tt := range tests {
		args, _ := json.Marshal(map[string]string{"path": tt.path})
		a, d := p.Match(env, gtCall("write_file", tools.ClassWrite, string(args)))
		if (a != nil) != tt.wantAllow || (d != nil) != tt.wantDeny {
			t.Errorf("%s: allow=%v deny=%v, want %v %v", tt.path, a != nil, d != nil, tt.wantAllow, tt.wantDeny)
		}
	}
}
