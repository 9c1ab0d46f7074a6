package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
)

// declTool is a tool policy has never heard of by name: what policy knows
// of it is its declaration.
type declTool struct {
	gateTestTool
	decl tools.Decl
}

func (t declTool) Declare() tools.Decl { return t.decl }

// A write tool that declares two path arguments under its own names:
// rules match both, an allow rule never covers one leading out, and the
// gate refuses it, though policy names neither the tool nor its arguments.
func TestDeclaredPathsAreConfined(t *testing.T) {
	ws := t.TempDir()
	env := &tools.Env{Workspace: ws}
	cp := declTool{gateTestTool{name: "copy_into", class: tools.ClassWrite}, tools.Decl{Paths: []string{"from", "to"}}}
	call := func(from, to string) tools.Call {
		args, _ := json.Marshal(map[string]string{"from": from, "to": to})
		return tools.Call{Tool: cp, Args: args}
	}
	pol := &Policy{Allow: []Rule{{Tool: "*", Path: "**"}}, Deny: []Rule{{Path: "secret/**"}}}
	for _, tt := range []struct {
		from, to    string
		allow, deny bool
	}{
		{"a", "b/c", true, false},
		{"a", "../out", false, false},
		{"../in", "b", false, false},
		{"/etc/passwd", "b", false, false},
		{ws + "/a", "b", true, false},
		{"a", "secret/x", true, true},
		{"secret/x", "a", true, true},
	} {
		allow, deny := pol.Match(env, call(tt.from, tt.to))
		if (allow != nil) != tt.allow || (deny != nil) != tt.deny {
			t.Errorf("%s -> %s: allow %v, deny %v; want allow %v, deny %v", tt.from, tt.to, allow, deny, tt.allow, tt.deny)
		}
	}
	g := NewGate(GateOptions{Policy: pol})
	v := g.Check(t.Context(), env, []tools.Call{call("a", "../out")})[0]
	if v.Allowed || v.Reason != ReasonUnattended {
		t.Errorf("a path leading out: %+v, want refused unattended", v)
	}
	if v := g.Check(t.Context(), env, []tools.Call{call("a", "b")})[0]; !v.Allowed {
		t.Errorf("paths inside: %+v, want allowed", v)
	}
	// The approval request shows the first path.
	var got ApprovalRequest
	ag := NewGate(GateOptions{Approver: approverFunc(func(req ApprovalRequest) string { got = req; return AnswerNo })})
	ag.Check(t.Context(), env, []tools.Call{call("x/../a", "b")})
	if got.Path != "a" || got.LexicalPath != "a" {
		t.Errorf("approval request path %q, lexical %q; want a", got.Path, got.LexicalPath)
	}
	// "Always" cannot make one glob of two paths.
	if _, err := AlwaysRule(env, call("a", "b/c")); err == nil || !strings.Contains(err.Error(), "several paths") {
		t.Errorf("AlwaysRule with two paths: %v", err)
	}
}

// A tool that declares a command under its own name has it analysed and
// matched by command rules like run_command's.
func TestDeclaredCommandIsAnalysed(t *testing.T) {
	sh := declTool{gateTestTool{name: "shell", class: tools.ClassExec}, tools.Decl{Command: "script", WorkDir: "dir"}}
	c := tools.Call{Tool: sh, Args: json.RawMessage(`{"script":"env rm -rf x","dir":"."}`)}
	pol := &Policy{Deny: []Rule{{Command: "rm"}}, Allow: []Rule{{Tool: "*", Command: "env"}}}
	if allow, deny := pol.Match(&tools.Env{Workspace: t.TempDir()}, c); deny == nil || allow != nil {
		t.Errorf("allow %v, deny %v; want the deny rule through env, no allow", allow, deny)
	}
}

type approverFunc func(ApprovalRequest) string

func (f approverFunc) Approve(_ context.Context, req ApprovalRequest) (string, error) {
	return f(req), nil
}

// Every built-in tool's declared path arguments are confined by policy's
// rules, found by the declaration alone (a new tool gets a subtest here
// without a change to policy): an allow rule for every path never covers
// one leading out of the workspace, whether by "..", an absolute path or
// a symlink, and a deny rule matches the path as written or as resolved.
func TestBuiltinPathsConfined(t *testing.T) {
	ws := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secret", filepath.Join(ws, "alias")); err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{Workspace: ws}
	pol := &Policy{Allow: []Rule{{Tool: "*", Path: "**"}}, Deny: []Rule{{Path: "secret/**"}}}
	n := 0
	for _, tool := range tools.Builtins() {
		for _, arg := range tools.DeclOf(tool).Paths {
			n++
			t.Run(tool.Name()+"/"+arg, func(t *testing.T) {
				call := func(p string) tools.Call {
					args, _ := json.Marshal(map[string]string{arg: p})
					return tools.Call{Tool: tool, Args: args}
				}
				for _, tt := range []struct {
					path        string
					allow, deny bool
				}{
					{"src/a.go", true, false},
					{"../x", false, false},
					{"/etc/passwd", false, false},
					{"out/x", false, false},
					{"secret/x", true, true},
					{"alias/x", true, true},
				} {
					allow, deny := pol.Match(env, call(tt.path))
					if (allow != nil) != tt.allow || (deny != nil) != tt.deny {
						t.Errorf("%s: allow %v, deny %v; want allow %v, deny %v", tt.path, allow, deny, tt.allow, tt.deny)
					}
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no built-in tool declares a path")
	}
}
