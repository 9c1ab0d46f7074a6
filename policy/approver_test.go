package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/tools"
)

// approverFixture is a real workspace, a scratch directory for the approval
// scripts' files, and the real tools (their Describers shape the summary).
type approverFixture struct {
	t       *testing.T
	env     *tools.Env
	scratch string
}

func newApproverFixture(t *testing.T) *approverFixture {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	env, err := tools.NewEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &approverFixture{t: t, env: env, scratch: t.TempDir()}
}

// file is a path in the scratch directory, shell-quoted for scripts by q.
func (fx *approverFixture) file(name string) string { return filepath.Join(fx.scratch, name) }
func (fx *approverFixture) q(name string) string    { return shellquote.Join(fx.file(name)) }

// approver runs script with /bin/sh; each call also appends a line to the
// scratch file "calls".
func (fx *approverFixture) approver(script string) Approver {
	return NewCommandApprover(CommandApproverOptions{Command: "echo >> " + fx.q("calls") + "\n" + script, Timeout: 30 * time.Second})
}

// calls is how many times the approver ran.
func (fx *approverFixture) calls() int {
	data, err := os.ReadFile(fx.file("calls"))
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "\n")
}

// request decodes the request a script saved with `cat > FILE`.
func (fx *approverFixture) request(name string) (ApprovalRequest, string) {
	fx.t.Helper()
	data, err := os.ReadFile(fx.file(name))
	if err != nil {
		fx.t.Fatalf("approver got no request: %v", err)
	}
	var req ApprovalRequest
	if err := json.Unmarshal(data, &req); err != nil {
		fx.t.Fatalf("request is not JSON: %v\n%s", err, data)
	}
	return req, string(data)
}

func (fx *approverFixture) call(tool, args string) tools.Call {
	fx.t.Helper()
	tl, ok := tools.DefaultRegistry().Get(tool)
	if !ok {
		fx.t.Fatalf("no tool %s", tool)
	}
	return tools.Call{Tool: tl, Args: json.RawMessage(args)}
}

func (fx *approverFixture) check(g tools.Gate, c tools.Call) tools.Verdict {
	fx.t.Helper()
	v := g.Check(tools.WithRunID(fx.t.Context(), "run-1"), fx.env, []tools.Call{c})
	if len(v) != 1 {
		fx.t.Fatalf("got %d verdicts", len(v))
	}
	return v[0]
}

func TestCommandApproverExits(t *testing.T) {
	fx := newApproverFixture(t)
	tests := []struct {
		name    string
		script  string
		answer  string
		errWant string // prefix of the error; "" for none
	}{
		{"yes", "exit 0", AnswerYes, ""},
		{"always", "exit 3", AnswerAlways, ""},
		{"no", "echo '' >&2; echo 'not on Fridays' >&2; echo more >&2; exit 1", AnswerNo, "approver exited 1: not on Fridays"},
		{"other status", "exit 42", AnswerNo, "approver exited 42"},
		{"crash", "kill -SEGV $$", AnswerNo, "approver killed by signal 11 (segmentation fault)"},
		{"not found", "no-such-approver-program", AnswerNo, "approver exited 127: "},
		{"reads nothing, writes much", "head -c 1000000 /dev/zero; head -c 1000000 /dev/zero >&2; exit 3", AnswerAlways, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewCommandApprover(CommandApproverOptions{Command: tt.script, Dir: fx.env.Workspace})
			ans, err := a.Approve(t.Context(), ApprovalRequest{Tool: "run_command", Arguments: json.RawMessage(`{}`)})
			if ans != tt.answer {
				t.Errorf("answer = %q, want %q", ans, tt.answer)
			}
			switch {
			case tt.errWant == "" && err != nil:
				t.Errorf("error = %v", err)
			case tt.errWant != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.errWant)):
				t.Errorf("error = %v, want %q...", err, tt.errWant)
			}
		})
	}
	t.Run("cannot start", func(t *testing.T) {
		a := NewCommandApprover(CommandApproverOptions{Command: "exit 0", Dir: fx.file("missing-dir")})
		ans, err := a.Approve(t.Context(), ApprovalRequest{})
		if ans != AnswerNo || err == nil || !strings.HasPrefix(err.Error(), "approver could not start") {
			t.Errorf("got %q, %v", ans, err)
		}
	})
}

// pidGone waits until the process is gone (or a zombie nobody reaped yet).
func pidGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("no pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if s := string(stat); strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still runs", pid)
}

// waitFile waits (bounded) until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// A timeout or a cancelled run kills the approver's whole process group;
// a background child holding the pipes neither delays the answer for long
// nor outlives it.
func TestCommandApproverKillsGroup(t *testing.T) {
	fx := newApproverFixture(t)
	t.Run("timeout", func(t *testing.T) {
		pid := fx.file("timeout.pid")
		a := NewCommandApprover(CommandApproverOptions{
			Command: "sleep 1000 & echo $! > " + shellquote.Join(pid) + "; wait",
			Timeout: 200 * time.Millisecond, Dir: fx.env.Workspace,
		})
		ans, err := a.Approve(t.Context(), ApprovalRequest{})
		if ans != AnswerNo || err == nil || err.Error() != "approver timed out after 200ms" {
			t.Fatalf("got %q, %v", ans, err)
		}
		pidGone(t, pid)
	})
	t.Run("cancel", func(t *testing.T) {
		pid := fx.file("cancel.pid")
		a := NewCommandApprover(CommandApproverOptions{Command: "sleep 1000 & echo $! > " + shellquote.Join(pid) + "; wait", Dir: fx.env.Workspace})
		ctx, cancel := context.WithCancel(t.Context())
		type result struct {
			ans string
			err error
		}
		done := make(chan result, 1)
		go func() {
			ans, err := a.Approve(ctx, ApprovalRequest{})
			done <- result{ans, err}
		}()
		waitFile(t, pid)
		cancel()
		select {
		case r := <-done:
			if r.ans != AnswerNo || r.err == nil || !strings.HasPrefix(r.err.Error(), "approver stopped: context canceled") {
				t.Fatalf("got %q, %v", r.ans, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("cancel did not stop the approver")
		}
		pidGone(t, pid)
	})
	t.Run("background child", func(t *testing.T) {
		pid := fx.file("bg.pid")
		a := NewCommandApprover(CommandApproverOptions{Command: "sleep 1000 & echo $! > " + shellquote.Join(pid) + "; exit 0", Dir: fx.env.Workspace})
		done := make(chan string, 1)
		go func() {
			ans, _ := a.Approve(t.Context(), ApprovalRequest{})
			done <- ans
		}()
		select {
		case ans := <-done:
			if ans != AnswerYes {
				t.Fatalf("answer = %q", ans)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a background child holding the pipes blocked the approver")
		}
		pidGone(t, pid)
	})
}

// The command runs in the given directory, with TACT_RUN_ID and
// TACT_WORKSPACE set and no terminal.
func TestCommandApproverEnvironment(t *testing.T) {
	fx := newApproverFixture(t)
	a := NewCommandApprover(CommandApproverOptions{
		Command: `{ pwd; echo "$TACT_RUN_ID"; echo "$TACT_WORKSPACE"; echo "$KEEP"; if (: < /dev/tty) 2>/dev/null; then echo tty; else echo no-tty; fi; } > ` + fx.q("env.txt"),
		Dir:     fx.scratch,
		Env:     []string{"KEEP=kept", "TACT_RUN_ID=stale", "PATH=" + os.Getenv("PATH")},
	})
	if ans, err := a.Approve(t.Context(), ApprovalRequest{RunID: "r-42", Workspace: "/some/ws"}); ans != AnswerYes || err != nil {
		t.Fatalf("got %q, %v", ans, err)
	}
	data, _ := os.ReadFile(fx.file("env.txt"))
	if want := fx.scratch + "\nr-42\n/some/ws\nkept\nno-tty\n"; string(data) != want {
		t.Errorf("approver saw\n%s\nwant\n%s", data, want)
	}
}

// The approver gets the call as the prompt shows it: tool, command, argv,
// directory, sandbox, summary, the "always" rule, and for file tools the diff.
func TestGateApproverRequest(t *testing.T) {
	fx := newApproverFixture(t)
	ws := fx.env.Workspace
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "src/a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(fx.scratch, "outside.txt")
	if err := os.WriteFile(outside, []byte("OUTSIDE-CONTENT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	realOutside, err := filepath.EvalSymlinks(outside)
	if err != nil {
		t.Fatal(err)
	}
	// docs/out leads to src inside the workspace: a write through it is a
	// write to src, and the approver is told so (issue 36 item 1).
	if err := os.MkdirAll(filepath.Join(ws, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../src", filepath.Join(ws, "docs", "out")); err != nil {
		t.Fatal(err)
	}
	g := NewGate(GateOptions{Approver: fx.approver("cat > " + fx.q("req.json") + "; exit 1")})

	t.Run("command", func(t *testing.T) {
		c := fx.call("run_command", `{"command":"git status -s","working_dir":"sub"}`)
		v := fx.check(g, c)
		if v.Allowed || v.Decision != DecisionRejected || v.Reason != "denied by --approve-cmd: approver exited 1" {
			t.Errorf("verdict = %+v", v)
		}
		req, _ := fx.request("req.json")
		want := ApprovalRequest{
			RunID: "run-1", Tool: "run_command", Class: "exec", Workspace: ws,
			Sandbox: fx.env.SandboxInfo().String(),
			Command: "git status -s", Argv: []string{"git", "status", "-s"}, WorkingDir: filepath.Join(ws, "sub"),
			Arguments:  json.RawMessage(`{"command":"git status -s","working_dir":"sub"}`),
			Summary:    DescribeCall(fx.env, c),
			AlwaysRule: `tool=run_command command="git status"`,
		}
		if got, _ := json.Marshal(req); string(got) != string(mustJSON(t, want)) {
			t.Errorf("request\n%s\nwant\n%s", got, mustJSON(t, want))
		}
		if req.Sandbox == "" || !strings.Contains(req.Summary, "run_command (exec)") {
			t.Errorf("sandbox %q, summary %q", req.Sandbox, req.Summary)
		}
	})
	tests := []struct {
		name, tool, args, path, diff, always string
	}{
		{"edit", "edit_file", `{"path":"src/a.txt","old_string":"one\ntwo","new_string":"uno\ndos\ntres\n"}`, "src/a.txt",
			"--- a/src/a.txt\n+++ b/src/a.txt\n-one\n-two\n+uno\n+dos\n+tres\n", `tool=edit_file path="src/**"`},
		{"overwrite", "write_file", `{"path":"` + ws + `/src/a.txt","content":"three\n"}`, "src/a.txt",
			"--- a/src/a.txt\n+++ b/src/a.txt\n-one\n-two\n+three\n", `tool=write_file path="src/**"`},
		{"new file", "write_file", `{"path":"new.txt","content":"hello\nworld"}`, "new.txt",
			"--- a/new.txt\n+++ b/new.txt\n+hello\n+world\n", `tool=write_file path="new.txt"`},
		{"empty content", "write_file", `{"path":"src/a.txt","content":""}`, "src/a.txt",
			"--- a/src/a.txt\n+++ b/src/a.txt\n-one\n-two\n", `tool=write_file path="src/**"`},
		{"symlink inside", "write_file", `{"path":"docs/out/a.txt","content":"three\n"}`, "src/a.txt",
			"--- a/src/a.txt\n+++ b/src/a.txt\n-one\n-two\n+three\n", ""},
		{"symlink inside, edit", "edit_file", `{"path":"docs/out/a.txt","old_string":"one","new_string":"uno"}`, "src/a.txt",
			"--- a/src/a.txt\n+++ b/src/a.txt\n-one\n+uno\n", ""},
		// The current file is read inside the workspace only.
		{"symlink out", "write_file", `{"path":"link.txt","content":"x\n"}`, realOutside,
			"--- " + realOutside + "\n+++ " + realOutside + "\n\\ the current file is not shown: path \"link.txt\" escapes the workspace through a symlink\n+x\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx.check(g, fx.call(tt.tool, tt.args))
			req, raw := fx.request("req.json")
			if req.Tool != tt.tool || req.Class != "write" || req.Path != tt.path || req.Diff != tt.diff || req.AlwaysRule != tt.always {
				t.Errorf("request = %s\nwant path %q, diff\n%s", raw, tt.path, tt.diff)
			}
			var args struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal([]byte(tt.args), &args)
			if want, _ := workspaceRel(fx.env, args.Path); req.LexicalPath != want {
				t.Errorf("lexical_path %q, want %q", req.LexicalPath, want)
			}
			if req.Command != "" || req.Argv != nil || req.Sandbox != "" || strings.Contains(raw, "OUTSIDE-CONTENT") {
				t.Errorf("file call request has command fields or outside content: %s", raw)
			}
		})
	}
	t.Run("big", func(t *testing.T) {
		big := strings.Repeat("0123456789abcdef\n", 3*MaxApprovalDiff/17)
		if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"path": "big.txt", "content": big + "more\n"})
		fx.check(g, tools.Call{Tool: fx.call("write_file", "{}").Tool, Args: args})
		req, _ := fx.request("req.json")
		if len(req.Diff) > MaxApprovalDiff+500 || !strings.Contains(req.Diff, "\n-0123456789abcdef\n") || !strings.Contains(req.Diff, "\n+0123456789abcdef\n") {
			t.Errorf("diff of %d bytes, want at most about %d with both sides", len(req.Diff), MaxApprovalDiff)
		}
		for _, want := range []string{fmt.Sprintf("the current text has %d bytes", len(big)), fmt.Sprintf("the new text has %d bytes", len(big)+5)} {
			if !strings.Contains(req.Diff, "\\ cut: the diff shows at most 64 KiB; "+want+"\n") {
				t.Errorf("diff lacks the note %q", want)
			}
		}
	})
	t.Run("no rule", func(t *testing.T) {
		fx.check(g, fx.call("run_command", `{"command":"sh -c 'eval \"$X\"'"}`))
		req, _ := fx.request("req.json")
		if req.AlwaysRule != "" || !strings.HasPrefix(req.AlwaysUnavailable, "tact cannot fully analyse this command") {
			t.Errorf("always_rule %q, always_unavailable %q", req.AlwaysRule, req.AlwaysUnavailable)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// No secret reaches the approver's stdin: not in the command, the
// arguments, the diff, the summary or the path.
func TestGateApproverRedacts(t *testing.T) {
	const secret = "sekrit-value"
	fx := newApproverFixture(t)
	red, err := redact.NewRedactor([]string{"API_TOKEN=" + secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fx.env.Workspace, "cfg.txt"), []byte("token="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := NewGate(GateOptions{Redactor: red, Approver: fx.approver("cat > " + fx.q("req.json") + "; echo 'no " + secret + "' >&2; exit 1")})
	for _, c := range []tools.Call{
		fx.call("run_command", `{"command":"curl -H 'Authorization: `+secret+`' x","working_dir":"`+secret+`"}`),
		fx.call("write_file", `{"path":"cfg.txt","content":"token=`+secret+`-2\n"}`),
		fx.call("edit_file", `{"path":"`+secret+`/x","old_string":"`+secret+`","new_string":"y"}`),
	} {
		v := fx.check(g, c)
		_, raw := fx.request("req.json")
		if strings.Contains(raw, secret) || !strings.Contains(raw, redact.Redacted) {
			t.Errorf("request holds the secret:\n%s", raw)
		}
		if strings.Contains(v.Reason, secret) || !strings.HasPrefix(v.Reason, "denied by --approve-cmd: approver exited 1: no ") {
			t.Errorf("verdict = %+v", v)
		}
	}
}

// "yes" approves once, "always" adds the rule the terminal's "always" adds
// (narrowed around a secret) to the policy file, and later calls it covers
// run without asking.
func TestGateApproverAnswers(t *testing.T) {
	const secret = "sekrit-value"
	red, err := redact.NewRedactor([]string{"API_TOKEN=" + secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool, args, rule string
	}{
		{"command", "run_command", `{"command":"git status -s"}`, `tool=run_command command="git status"`},
		{"narrowed command", "run_command", `{"command":"grep ` + secret + ` notes.txt"}`, `tool=run_command command="grep"`},
		{"file", "write_file", `{"path":"src/main.go","content":"package main\n"}`, `tool=write_file path="src/**"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newApproverFixture(t)
			c := fx.call(tc.tool, tc.args)

			// yes: approved, nothing saved, asked again next time.
			path := fx.file("yes/policy.json")
			g := NewGate(GateOptions{PolicyPath: path, Redactor: red, Approver: fx.approver("exit 0")})
			for n := 1; n <= 2; n++ {
				v := fx.check(g, c)
				if !v.Allowed || v.Decision != DecisionApproved || v.Reason != "approved by --approve-cmd" || fx.calls() != n {
					t.Fatalf("yes #%d: verdict %+v, %d calls", n, v, fx.calls())
				}
			}
			if _, err := os.Stat(path); err == nil {
				t.Errorf("yes wrote the policy file")
			}

			// always: the terminal's rule, saved 0600, and no more questions.
			path = fx.file("always/policy.json")
			g = NewGate(GateOptions{PolicyPath: path, Redactor: red, Approver: fx.approver("exit 3")})
			v := fx.check(g, c)
			if !v.Allowed || v.Decision != DecisionApprovedAlways || v.Reason != "approved by --approve-cmd; added allow rule "+tc.rule || fx.calls() != 3 {
				t.Fatalf("always: verdict %+v, %d calls", v, fx.calls())
			}
			termPath := fx.file("terminal/policy.json")
			NewGate(GateOptions{PolicyPath: termPath, Redactor: red, Prompter: &scriptPrompter{answers: []string{"always"}}}).Check(t.Context(), fx.env, []tools.Call{c})
			saved, err := LoadPolicy(path)
			if err != nil {
				t.Fatal(err)
			}
			term, err := LoadPolicy(termPath)
			if err != nil {
				t.Fatal(err)
			}
			if len(saved.Allow) != 1 || len(term.Allow) != 1 || saved.Allow[0].String() != tc.rule || term.Allow[0].String() != tc.rule ||
				!strings.HasPrefix(saved.Allow[0].Comment, "added by --approve-cmd ") {
				t.Fatalf("saved %+v, the terminal saved %+v; want %s", saved.Allow, term.Allow, tc.rule)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("policy file: %v, %v; want mode 0600", st, err)
			}
			for _, gate := range []tools.Gate{g, NewGate(GateOptions{Policy: saved, Approver: fx.approver("exit 1")})} {
				if v := fx.check(gate, c); !v.Allowed || v.Decision != DecisionAllow || fx.calls() != 3 {
					t.Errorf("after always: verdict %+v, %d calls", v, fx.calls())
				}
			}
		})
	}
}

// "Always" where no rule can cover the call approves it once and says why.
func TestGateApproverAlwaysWithoutRule(t *testing.T) {
	fx := newApproverFixture(t)
	path := fx.file("policy.json")
	g := NewGate(GateOptions{PolicyPath: path, Approver: fx.approver("exit 3")})
	c := fx.call("run_command", `{"command":"sh -c 'eval \"$X\"'"}`)
	for n := 1; n <= 2; n++ {
		v := fx.check(g, c)
		if !v.Allowed || v.Decision != DecisionApproved || !strings.HasPrefix(v.Reason, `approved by --approve-cmd; "always" added no rule: tact cannot fully analyse this command`) || fx.calls() != n {
			t.Fatalf("#%d: verdict %+v, %d calls", n, v, fx.calls())
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a rule was saved")
	}
}

// Deny rules, --read-only, --yes and dry runs decide before the approver,
// which is never asked then; it wins over a terminal prompter.
func TestGateApproverPrecedence(t *testing.T) {
	fx := newApproverFixture(t)
	pol := &Policy{Deny: []Rule{{Tool: "run_command", Command: "rm"}}}
	rm := fx.call("run_command", `{"command":"rm -rf build"}`)
	ls := fx.call("run_command", `{"command":"ls"}`)
	approver := fx.approver("exit 0")
	tests := []struct {
		name     string
		opts     GateOptions
		call     tools.Call
		allowed  bool
		decision string
		reason   string // prefix
		asked    bool
	}{
		{"deny rule", GateOptions{Policy: pol}, rm, false, DecisionDeny, "denied by policy: deny rule", false},
		{"read-only", GateOptions{ReadOnly: true}, ls, false, DecisionDeny, "denied by policy: read-only mode", false},
		{"yes", GateOptions{Yes: true}, ls, true, DecisionAllow, "allowed by --yes", false},
		{"dry run", GateOptions{DryRun: true}, ls, false, DecisionAsk, "dry run: not run; would ask for approval", false},
		{"dry run deny", GateOptions{DryRun: true, Policy: pol}, rm, false, DecisionDeny, "dry run: not run; would be denied", false},
		{"read tool", GateOptions{}, fx.call("read_file", `{"path":"x"}`), true, DecisionAllow, "read tool", false},
		{"unattended asks it", GateOptions{}, ls, true, DecisionApproved, "approved by --approve-cmd", true},
		{"wins over prompter", GateOptions{Prompter: failPrompter{t}}, ls, true, DecisionApproved, "approved by --approve-cmd", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fx.calls()
			tt.opts.Approver = approver
			v := fx.check(NewGate(tt.opts), tt.call)
			if v.Allowed != tt.allowed || v.Decision != tt.decision || !strings.HasPrefix(v.Reason, tt.reason) {
				t.Errorf("verdict = %+v, want allowed=%v %s %q", v, tt.allowed, tt.decision, tt.reason)
			}
			if asked := fx.calls() > before; asked != tt.asked {
				t.Errorf("approver asked: %v, want %v", asked, tt.asked)
			}
		})
	}
}

// funcApprover answers with a function.
type funcApprover func(context.Context, ApprovalRequest) (string, error)

func (f funcApprover) Approve(ctx context.Context, req ApprovalRequest) (string, error) {
	return f(ctx, req)
}

// Within a step, "always" covers the later calls it matches; each answer
// maps to its verdict, and a cancelled run asks nothing.
func TestGateApproverStep(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	var asked []string
	answers := map[string]struct {
		ans string
		err error
	}{
		"git status -s": {AnswerAlways, nil},
		"make":          {"maybe", nil},
		"ls":            {AnswerNo, nil},
		"rm x":          {"", errors.New("approval service unreachable")},
	}
	a := funcApprover(func(_ context.Context, req ApprovalRequest) (string, error) {
		asked = append(asked, req.Command)
		r := answers[req.Command]
		return r.ans, r.err
	})
	calls := []tools.Call{runCall("git status -s"), runCall("git status --porcelain"), runCall("make"), runCall("ls"), runCall("rm x")}
	v := NewGate(GateOptions{Approver: a}).Check(t.Context(), env, calls)
	want := []struct{ decision, reason string }{
		{DecisionApprovedAlways, `approved by --approve-cmd; added allow rule tool=run_command command="git status"`},
		{DecisionAllow, `allowed by rule tool=run_command command="git status"`},
		{DecisionRejected, `denied by --approve-cmd: unknown answer "maybe"`},
		{DecisionRejected, "denied by --approve-cmd: the approver said no"},
		{DecisionRejected, "denied by --approve-cmd: approval service unreachable"},
	}
	for i, w := range want {
		if v[i].Decision != w.decision || v[i].Reason != w.reason {
			t.Errorf("verdict %d = %+v, want %s %q", i, v[i], w.decision, w.reason)
		}
	}
	if strings.Join(asked, "|") != "git status -s|make|ls|rm x" {
		t.Errorf("asked %q", asked)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	asked = nil
	v = NewGate(GateOptions{Approver: a}).Check(ctx, env, []tools.Call{runCall("ls")})
	if v[0].Decision != DecisionRejected || v[0].Reason != "denied by --approve-cmd: context canceled" || asked != nil {
		t.Errorf("cancelled: %+v, asked %q", v[0], asked)
	}
}

// Runs sharing a gate (tact batch --parallel) wait for their approvers at
// the same time: here each approver waits until all four have started,
// which never happens if the gate asks one at a time.
func TestGateApproversRunConcurrently(t *testing.T) {
	fx := newApproverFixture(t)
	const n = 4
	dir := shellquote.Join(fx.scratch)
	script := `touch ` + dir + `/started."$TACT_RUN_ID"
i=0
while :; do
	set -- ` + dir + `/started.*
	[ $# -ge ` + strconv.Itoa(n) + ` ] && exit 0
	i=$((i+1)); [ $i -gt 200 ] && { echo "only $# approvers started" >&2; exit 1; }
	sleep 0.05
done`
	g := NewGate(GateOptions{Approver: NewCommandApprover(CommandApproverOptions{Command: script, Timeout: time.Minute})})
	verdicts := make([]tools.Verdict, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			ctx := tools.WithRunID(t.Context(), fmt.Sprintf("run-%d", k))
			verdicts[k] = g.Check(ctx, fx.env, []tools.Call{fx.call("run_command", fmt.Sprintf(`{"command":"touch f%d"}`, k))})[0]
		})
	}
	wg.Wait()
	for k, v := range verdicts {
		if v.Decision != DecisionApproved {
			t.Errorf("run %d: %+v", k, v)
		}
	}
}

// blockingPrompter answers "yes" once released, counting how many questions
// are open at once.
type blockingPrompter struct {
	release chan struct{}
	entered chan struct{}
	open    atomic.Int32
	most    atomic.Int32
}

func (p *blockingPrompter) Ask(ctx context.Context, _ string, _ []string) (string, error) {
	n := p.open.Add(1)
	defer p.open.Add(-1)
	for {
		m := p.most.Load()
		if n <= m || p.most.CompareAndSwap(m, n) {
			break
		}
	}
	p.entered <- struct{}{}
	select {
	case <-p.release:
		return "yes", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Terminal questions of two runs never overlap, yet a run waiting at the
// prompt does not hold up another run's checks that need no question.
func TestGatePromptsSerializedNotBlocking(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	p := &blockingPrompter{release: make(chan struct{}), entered: make(chan struct{}, 2)}
	g := NewGate(GateOptions{Prompter: p, Policy: &Policy{Allow: []Rule{{Tool: "run_command", Command: "ls"}}}})
	done := make(chan tools.Verdict, 2)
	for _, cmd := range []string{"make", "make install"} {
		go func() { done <- g.Check(t.Context(), env, []tools.Call{runCall(cmd)})[0] }()
	}
	<-p.entered
	// One question is open: an allowed call still goes through at once.
	other := make(chan tools.Verdict, 1)
	go func() { other <- g.Check(t.Context(), env, []tools.Call{runCall("ls -l")})[0] }()
	select {
	case v := <-other:
		if v.Decision != DecisionAllow {
			t.Errorf("allowed call: %+v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a check that needs no question waited for another run's prompt")
	}
	p.release <- struct{}{}
	<-p.entered
	p.release <- struct{}{}
	for range 2 {
		if v := <-done; v.Decision != DecisionApproved {
			t.Errorf("verdict %+v", v)
		}
	}
	if p.most.Load() != 1 {
		t.Errorf("%d questions were open at once", p.most.Load())
	}
}

// A jq approver: what it decides on is in the request's fields.
func TestGateApproverJQ(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("no jq")
	}
	fx := newApproverFixture(t)
	g := NewGate(GateOptions{Approver: fx.approver(`jq -e '.class == "exec" and .argv[0] == "go" and .always_rule != ""' > /dev/null || { echo "only go commands" >&2; exit 1; }`)})
	if v := fx.check(g, fx.call("run_command", `{"command":"go test ./..."}`)); v.Decision != DecisionApproved {
		t.Errorf("go test: %+v", v)
	}
	if v := fx.check(g, fx.call("run_command", `{"command":"make"}`)); v.Decision != DecisionRejected || v.Reason != "denied by --approve-cmd: approver exited 1: only go commands" {
		t.Errorf("make: %+v", v)
	}
}
