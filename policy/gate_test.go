package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/tools"
)

// gateTestTool stands in for real tools: the gate only needs name and class.
type gateTestTool struct {
	name     string
	class    tools.Class
	describe string // when set, the tool implements Describer via gateDescTool
}

func (t gateTestTool) Name() string            { return t.name }
func (t gateTestTool) Description() string     { return "test tool" }
func (t gateTestTool) Class() tools.Class      { return t.class }
func (t gateTestTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t gateTestTool) Run(context.Context, *tools.Env, json.RawMessage) tools.Result {
	return tools.Result{Err: errors.New("gate tests never run tools")}
}

type gateDescTool struct{ gateTestTool }

func (t gateDescTool) Describe(*tools.Env, json.RawMessage) string { return t.describe }

func gtCall(name string, class tools.Class, args string) tools.Call {
	return tools.Call{Tool: gateTestTool{name: name, class: class}, Args: json.RawMessage(args)}
}

// failPrompter fails the test when asked: the gate must not prompt.
type failPrompter struct{ t *testing.T }

func (p failPrompter) Ask(context.Context, string, []string) (string, error) {
	p.t.Helper()
	p.t.Errorf("unexpected prompt")
	return "", io.EOF
}

// scriptPrompter answers from a list and records what it was asked.
type scriptPrompter struct {
	answers []string
	asked   []string
}

func (p *scriptPrompter) Ask(_ context.Context, summary string, _ []string) (string, error) {
	p.asked = append(p.asked, summary)
	if len(p.answers) == 0 {
		return "", io.EOF
	}
	a := p.answers[0]
	p.answers = p.answers[1:]
	return a, nil
}

var (
	gtRead  = gtCall("read_file", tools.ClassRead, `{"path":"a.txt"}`)
	gtGit   = gtCall("run_command", tools.ClassExec, `{"command":"git status -s"}`)
	gtRm    = gtCall("run_command", tools.ClassExec, `{"command":"rm -rf build"}`)
	gtWrite = gtCall("write_file", tools.ClassWrite, `{"path":"src/main.go","content":"package main"}`)
)

func TestGateDecisions(t *testing.T) {
	pol := &Policy{
		Allow: []Rule{{Tool: "run_command", Command: "git status"}},
		Deny:  []Rule{{Tool: "run_command", Command: "rm"}},
	}
	env := &tools.Env{Workspace: "/ws"}
	tests := []struct {
		name     string
		opts     GateOptions
		call     tools.Call
		allowed  bool
		decision string
		reason   string // substring
	}{
		{"read always allowed", GateOptions{ReadOnly: true}, gtRead, true, "allow", "read tool"},
		{"read allowed in dry run", GateOptions{DryRun: true}, gtRead, true, "allow", ""},
		{"read-only denies exec", GateOptions{ReadOnly: true, Yes: true, Policy: pol}, gtGit, false, "deny", "read-only mode"},
		{"read-only denies write", GateOptions{ReadOnly: true}, gtWrite, false, "deny", "write_file is a write tool"},
		{"deny rule beats yes", GateOptions{Yes: true, Policy: pol}, gtRm, false, "deny", `denied by policy: deny rule tool=run_command command="rm"`},
		{"deny rule beats prompter", GateOptions{Policy: pol, Prompter: failPrompter{t}}, gtRm, false, "deny", "deny rule"},
		{"allow rule", GateOptions{Policy: pol, Prompter: failPrompter{t}}, gtGit, true, "allow", `allowed by rule tool=run_command command="git status"`},
		{"yes", GateOptions{Yes: true}, gtWrite, true, "allow", "--yes"},
		{"unattended denies", GateOptions{Policy: pol}, gtWrite, false, "deny", ReasonUnattended},
		{"dry run allow", GateOptions{DryRun: true, Policy: pol}, gtGit, false, "allow", "dry run: not run; would be allowed"},
		{"dry run deny", GateOptions{DryRun: true, Policy: pol, Yes: true}, gtRm, false, "deny", "would be denied (denied by policy: deny rule"},
		{"dry run ask", GateOptions{DryRun: true, Prompter: failPrompter{t}}, gtWrite, false, "ask", "would ask"},
		{"dry run unattended", GateOptions{DryRun: true}, gtWrite, false, "deny", ReasonUnattended},
		{"dry run yes", GateOptions{DryRun: true, Yes: true}, gtWrite, false, "allow", "--yes"},
		{"nil tool", GateOptions{Yes: true}, tools.Call{}, false, "deny", "unknown tool"},
		// A deny rule wins over --yes however the command is wrapped, and
		// one matched only by its words in an unanalysable call says so.
		{"deny through wrapper beats yes", GateOptions{Yes: true, Policy: pol}, runCall("sudo -u root nice rm -rf build"), false, "deny", `denied by policy: deny rule tool=run_command command="rm"`},
		{"deny by words", GateOptions{Yes: true, Policy: pol}, runCall(`sh -c 'c=rm; $c x'`), false, "deny", `deny rule tool=run_command command="rm" (the command cannot be fully analysed (the command name $c is only known when it runs) and contains the rule's words)`},
		{"allow needs every command", GateOptions{Policy: pol}, runCall(`sh -c 'git status; touch x'`), false, "deny", ReasonUnattended + " (no allow rule covers touch)"},
		{"the pipeline's uncovered commands named", GateOptions{Policy: pol}, runCall(`sh -c 'git status | sort -r | head -n 3 | sort'`), false, "deny", ReasonUnattended + " (no allow rule covers sort, head)"},
		{"allow looks through wrappers", GateOptions{Policy: pol}, runCall(`env LC_ALL=C sh -c 'cd sub && git status'`), true, "allow", `allowed by rule tool=run_command command="git status"`},
		{"unanalysable unattended", GateOptions{Policy: pol}, runCall(`sh -c 'eval "$1"'`), false, "deny", ReasonUnattended + " (tact cannot fully analyse this command, so no allow rule can approve it: eval runs code built when it runs)"},
		{"unanalysable with yes", GateOptions{Policy: pol, Yes: true}, runCall(`sh -c 'eval "$1"'`), true, "allow", "--yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewGate(tt.opts).Check(t.Context(), env, []tools.Call{tt.call})
			if len(v) != 1 {
				t.Fatalf("got %d verdicts", len(v))
			}
			if v[0].Allowed != tt.allowed || v[0].Decision != tt.decision || !strings.Contains(v[0].Reason, tt.reason) {
				t.Errorf("verdict = %+v, want allowed=%v decision=%s reason~%q", v[0], tt.allowed, tt.decision, tt.reason)
			}
		})
	}
}

// A denial names the commands of a pipeline no allow rule covers, only when
// the policy has command rules and the call can be analysed.
func TestUncovered(t *testing.T) {
	env := &tools.Env{Workspace: t.TempDir()}
	du := &Policy{Allow: []Rule{{Tool: "run_command", Command: "du"}}}
	for _, tt := range []struct {
		name string
		pol  *Policy
		cmd  string
		want []string
	}{
		{"pipeline", du, `sh -c 'du -k . | sort -rn | head'`, []string{"sort", "head"}},
		{"all covered", &Policy{Allow: []Rule{{Tool: "run_command", Command: "du"}, {Tool: "run_command", Command: "sort"}}}, `sh -c 'du | sort'`, nil},
		{"wrappers looked through", du, `env LC_ALL=C nice du -k .`, nil},
		{"no command rules", &Policy{Allow: []Rule{{Tool: "write_file", Path: "x"}}}, `sh -c 'du | sort'`, nil},
		{"no policy", nil, `du`, nil},
		{"unanalysable", du, `sh -c 'eval "$1"'`, nil},
	} {
		if got := tt.pol.uncovered(env, runCall(tt.cmd)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: uncovered = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Unattended: nothing is read from stdin (closed here) and nothing blocks.
func TestGateUnattendedNeverReads(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	oldStdin := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = oldStdin; r.Close() }()

	done := make(chan []tools.Verdict, 1)
	go func() {
		done <- NewGate(GateOptions{}).Check(t.Context(), &tools.Env{Workspace: "/ws"}, []tools.Call{gtGit, gtWrite, gtRead})
	}()
	select {
	case v := <-done:
		for i, want := range []string{"deny", "deny", "allow"} {
			if v[i].Decision != want {
				t.Errorf("verdict %d = %+v, want %s", i, v[i], want)
			}
		}
		if v[0].Reason != ReasonUnattended {
			t.Errorf("reason = %q", v[0].Reason)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("unattended gate blocked")
	}
}

func TestGateCollectsAllBeforeVerdicts(t *testing.T) {
	p := &scriptPrompter{answers: []string{"yes", "no"}}
	calls := []tools.Call{gtGit, gtRead, gtWrite}
	v := NewGate(GateOptions{Prompter: p}).Check(t.Context(), &tools.Env{Workspace: "/ws"}, calls)
	want := []string{"approved", "allow", "rejected"}
	for i := range want {
		if v[i].Decision != want[i] {
			t.Errorf("verdict %d = %+v, want %s", i, v[i], want[i])
		}
	}
	if v[2].Allowed || !strings.HasPrefix(v[2].Reason, "denied by user") {
		t.Errorf("rejection = %+v", v[2])
	}
	// scriptPrompter has no Display: the overview leads the first question.
	if len(p.asked) != 2 || !strings.Contains(p.asked[0], "src/main.go") || !strings.Contains(p.asked[0], "git status -s") {
		t.Errorf("first question should show both actions: %q", p.asked)
	}
}

func TestGateNoAnswerRejectsRest(t *testing.T) {
	p := &scriptPrompter{} // EOF at once
	v := NewGate(GateOptions{Prompter: p}).Check(t.Context(), &tools.Env{Workspace: "/ws"}, []tools.Call{gtGit, gtWrite})
	for i := range v {
		if v[i].Allowed || v[i].Decision != DecisionRejected {
			t.Errorf("verdict %d = %+v, want rejected", i, v[i])
		}
	}
	if len(p.asked) != 1 {
		t.Errorf("asked %d times after EOF, want 1", len(p.asked))
	}
}

// An "always" answer covers later matching calls of the same step and run.
func TestGateAlwaysCoversRestOfRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tact", "policy.json")
	p := &scriptPrompter{answers: []string{"always"}}
	g := NewGate(GateOptions{Prompter: p, PolicyPath: path})
	again := gtCall("run_command", tools.ClassExec, `{"command":"git status --porcelain"}`)
	v := g.Check(t.Context(), &tools.Env{Workspace: "/ws"}, []tools.Call{gtGit, again})
	if v[0].Decision != DecisionApprovedAlways || !v[1].Allowed || v[1].Decision != DecisionAllow {
		t.Fatalf("verdicts = %+v", v)
	}
	v = g.Check(t.Context(), &tools.Env{Workspace: "/ws"}, []tools.Call{gtGit})
	if v[0].Decision != DecisionAllow || len(p.asked) != 1 {
		t.Fatalf("second step: %+v, asked %d", v, len(p.asked))
	}
	pol, err := LoadPolicy(path)
	if err != nil || len(pol.Allow) != 1 || pol.Allow[0].Command != "git status" || pol.Allow[0].Tool != "run_command" {
		t.Fatalf("policy file = %+v, %v", pol, err)
	}
}

func TestAlwaysRule(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	tests := []struct {
		call tools.Call
		want Rule
	}{
		{gtGit, Rule{Tool: "run_command", Command: "git status"}},
		// A program whose effect depends on its arguments: exactly this call.
		{gtRm, Rule{Tool: "run_command", Command: "rm -rf build", Exact: true}},
		{gtCall("run_command", tools.ClassExec, `{"command":"ls"}`), Rule{Tool: "run_command", Command: "ls"}},
		{gtCall("run_command", tools.ClassExec, `{"command":"cat notes.txt"}`), Rule{Tool: "run_command", Command: "cat notes.txt"}},
		{gtCall("run_command", tools.ClassExec, `{"command":"'my tool' sub x"}`), Rule{Tool: "run_command", Command: "'my tool' sub x", Exact: true}},
		// Wrappers and shells are looked through: the rule names what runs.
		{gtCall("run_command", tools.ClassExec, `{"command":"sh -c 'rm -rf /'"}`), Rule{Tool: "run_command", Command: "rm -rf /", Exact: true}},
		{gtCall("run_command", tools.ClassExec, `{"command":"/usr/bin/env FOO=1 make"}`), Rule{Tool: "run_command", Command: "make", Exact: true}},
		{gtCall("run_command", tools.ClassExec, `{"command":"nice -n 5 git -C sub status -s"}`), Rule{Tool: "run_command", Command: "git status"}},
		{gtCall("run_command", tools.ClassExec, `{"command":"/no/such/dir/tool run"}`), Rule{Tool: "run_command", Command: "/no/such/dir/tool run", Exact: true}},
		{gtCall("run_command", tools.ClassExec, `{"command":"python3 -m pytest -q"}`), Rule{Tool: "run_command", Command: "python3 -m pytest -q", Exact: true}},
		// Several programs, or a runner: exactly this command line.
		{gtCall("run_command", tools.ClassExec, `{"command":"sh -c 'git status; ls'"}`), Rule{Tool: "run_command", Command: "sh -c 'git status; ls'", Exact: true}},
		{gtCall("run_command", tools.ClassExec, `{"command":"sudo -u root ls"}`), Rule{Tool: "run_command", Command: "sudo -u root ls", Exact: true}},
		{gtWrite, Rule{Tool: "write_file", Path: "src/**"}},
		{gtCall("edit_file", tools.ClassWrite, `{"path":"/ws/a/b/c.txt"}`), Rule{Tool: "edit_file", Path: "a/b/**"}},
		{gtCall("write_file", tools.ClassWrite, `{"path":"notes.md"}`), Rule{Tool: "write_file", Path: "notes.md"}},
		{gtCall("write_file", tools.ClassWrite, `{"path":"we*rd/x"}`), Rule{Tool: "write_file", Path: `we\*rd/**`}},
		{gtCall("write_file", tools.ClassWrite, `{"path":"../x"}`), Rule{Tool: "write_file"}},
	}
	for _, tt := range tests {
		got, err := AlwaysRule(env, tt.call)
		if err != nil || got != tt.want {
			t.Errorf("AlwaysRule(%s) = %+v, %v; want %+v", tt.call.Args, got, err, tt.want)
			continue
		}
		if err := got.validate(); err != nil {
			t.Errorf("AlwaysRule(%s) is invalid: %v", tt.call.Args, err)
		}
		// The rule covers the call it was made from.
		if a, _ := (&Policy{Allow: []Rule{got}}).Match(env, tt.call); a == nil {
			t.Errorf("rule %v does not cover %s", got, tt.call.Args)
		}
	}
	// No rule can cover what tact cannot analyse, nor a command that does
	// not split.
	for _, args := range []string{`{"command":"sh -c '$X'"}`, `{"command":"sh ./x.sh"}`, `{"command":"echo 'x"}`, `{}`} {
		if r, err := AlwaysRule(env, gtCall("run_command", tools.ClassExec, args)); err == nil {
			t.Errorf("AlwaysRule(%s) = %+v, want an error", args, r)
		}
	}
}

// optionsPrompter answers from a list and records questions and options.
type optionsPrompter struct {
	answers []string
	asked   []string
	options [][]string
}

func (p *optionsPrompter) Ask(_ context.Context, summary string, options []string) (string, error) {
	p.asked = append(p.asked, summary)
	p.options = append(p.options, options)
	if len(p.answers) == 0 {
		return "", io.EOF
	}
	a := p.answers[0]
	p.answers = p.answers[1:]
	return a, nil
}

// "Always" never writes a secret to the policy file: the rule is narrowed to
// the part before the secret when that still covers the call (and the
// prompt shows the narrowed rule), else "always" is not offered.
func TestGateAlwaysNeverSavesSecret(t *testing.T) {
	const secret = "sekrit-value"
	red, err := redact.NewRedactor([]string{"API_TOKEN=" + secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{Workspace: "/ws"}
	tests := []struct {
		name      string
		call      tools.Call
		wantRule  string // the offered and saved rule; "" when none is offered
		wantNote  string
		answer    string
		wantSaved bool
	}{
		{"command narrowed", runCall("grep " + secret + " notes.txt"), `tool=run_command command="grep"`, "", "always", true},
		// A program whose rule is exact cannot be cut short: no rule.
		{"exact command not saved", runCall("mytool " + secret + " --verbose"), "", "a rule for it would contain a secret", "yes", false},
		{"path narrowed", gtCall("write_file", tools.ClassWrite, `{"path":"out/`+secret+`/x.txt","content":"x"}`), `tool=write_file path="out/**"`, "", "always", true},
		{"command not saved", runCall(`sh -c 'curl -u me:` + secret + ` x; ls'`), "", "a rule for it would contain a secret", "yes", false},
		{"path not saved", gtCall("write_file", tools.ClassWrite, `{"path":"`+secret+`/x.txt","content":"x"}`), "", "a rule for it would contain a secret", "yes", false},
		{"unanalysable", runCall(`sh -c 'eval "$X"'`), "", "tact cannot fully analyse this command (eval runs code built when it runs)", "yes", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tact", "policy.json")
			p := &optionsPrompter{answers: []string{tt.answer}}
			v := NewGate(GateOptions{Prompter: p, PolicyPath: path, Redactor: red}).Check(t.Context(), env, []tools.Call{tt.call})
			if !v[0].Allowed || strings.Contains(v[0].Reason, secret) {
				t.Fatalf("verdict = %+v", v[0])
			}
			if len(p.asked) != 1 || strings.Contains(p.asked[0], secret) || strings.Contains(strings.Join(p.options[0], " "), secret) {
				t.Fatalf("prompt leaks the secret or was not shown: %q %q", p.asked, p.options)
			}
			opts := strings.Join(p.options[0], " | ")
			if tt.wantRule != "" {
				if want := "always (don't ask again for " + tt.wantRule + ")"; len(p.options[0]) != 3 || p.options[0][1] != want {
					t.Errorf("options = %q, want %q offered", opts, want)
				}
			} else if len(p.options[0]) != 2 || strings.Contains(opts, "always") {
				t.Errorf("options = %q, want only yes and no", opts)
			}
			if tt.wantNote != "" && !strings.Contains(p.asked[0], `(no "always": `+tt.wantNote) {
				t.Errorf("question lacks the note %q:\n%s", tt.wantNote, p.asked[0])
			}
			data, err := os.ReadFile(path)
			switch {
			case tt.wantSaved && err != nil:
				t.Fatalf("policy file not written: %v", err)
			case !tt.wantSaved && err == nil:
				t.Fatalf("policy file written: %s", data)
			}
			if strings.Contains(string(data), secret) {
				t.Fatalf("policy file holds the secret:\n%s", data)
			}
			if tt.wantSaved {
				pol, err := LoadPolicy(path)
				if err != nil || len(pol.Allow) != 1 || pol.Allow[0].String() != tt.wantRule {
					t.Fatalf("saved %+v, %v; want %s", pol, err, tt.wantRule)
				}
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
					t.Errorf("policy file mode %v, want 0600", st.Mode().Perm())
				}
			}
		})
	}
}

func TestDescribeCall(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	long := strings.Repeat("x", 5000)
	args, _ := json.Marshal(map[string]string{"path": "src/a.go", "content": long})
	s := DescribeCall(env, tools.Call{Tool: gateTestTool{name: "write_file", class: tools.ClassWrite}, Args: args})
	for _, want := range []string{"write_file (write)", "path: src/a.go", "(5000 bytes)", `"path": "src/a.go"`} {
		if !strings.Contains(s, want) {
			t.Errorf("description lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, long) {
		t.Errorf("long content not shortened")
	}
	s = DescribeCall(env, gtCall("run_command", tools.ClassExec, `{"command":"go test ./...","working_dir":"sub"}`))
	for _, want := range []string{`argv: ["go","test","./..."]`, "working directory: /ws/sub"} {
		if !strings.Contains(s, want) {
			t.Errorf("description lacks %q:\n%s", want, s)
		}
	}
	s = DescribeCall(env, tools.Call{Tool: gateDescTool{gateTestTool{name: "run_command", class: tools.ClassExec, describe: "$ make test\n(in /ws)"}}, Args: json.RawMessage(`{"command":"make test"}`)})
	if !strings.Contains(s, "  $ make test\n  (in /ws)") || strings.Contains(s, "argv:") {
		t.Errorf("Describer output not used:\n%s", s)
	}
}

func TestGateRedactsPrompt(t *testing.T) {
	red, err := redact.NewRedactor([]string{"API_TOKEN=sekrit-value"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &scriptPrompter{answers: []string{"no"}}
	call := gtCall("run_command", tools.ClassExec, `{"command":"curl -H 'Authorization: sekrit-value' x"}`)
	NewGate(GateOptions{Prompter: p, Redactor: red}).Check(t.Context(), &tools.Env{Workspace: "/ws"}, []tools.Call{call})
	if len(p.asked) != 1 || strings.Contains(p.asked[0], "sekrit-value") || !strings.Contains(p.asked[0], redact.Redacted) {
		t.Errorf("prompt not redacted: %q", p.asked)
	}
}

// ptyTerm drives the master side of a pseudo-terminal.
type ptyTerm struct {
	t      *testing.T
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
}

func newPtyTerm(t *testing.T, master *os.File) *ptyTerm {
	pt := &ptyTerm{t: t, master: master}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			pt.mu.Lock()
			pt.out.Write(buf[:n])
			pt.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return pt
}

func (pt *ptyTerm) output() string {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.out.String()
}

// waitFor waits until the terminal has shown want n times in total.
func (pt *ptyTerm) waitFor(want string, n int) string {
	pt.t.Helper()
	deadline := time.Now().Add(time.Minute) // generous: a busy machine is slow
	for time.Now().Before(deadline) {
		if s := pt.output(); strings.Count(s, want) >= n {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	pt.t.Fatalf("terminal never showed %q (x%d); got:\n%s", want, n, pt.output())
	return ""
}

func (pt *ptyTerm) typeLine(s string) {
	pt.t.Helper()
	if _, err := pt.master.Write([]byte(s + "\n")); err != nil {
		pt.t.Fatal(err)
	}
}

func openPty(t *testing.T) (*ptyTerm, *os.File) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close(); master.Close() })
	return newPtyTerm(t, master), tty
}

// The interactive flow through a real pseudo-terminal: y, n, invalid then y,
// and a two-call step that is shown whole before the first question.
func TestGatePromptPty(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	tests := []struct {
		name    string
		calls   []tools.Call
		typed   []string // typed after each "Run this?"/re-ask
		waitFor []string // what to wait for before each typed line
		want    []string
	}{
		{"yes", []tools.Call{gtGit}, []string{"y"}, []string{"Run this?"}, []string{"approved"}},
		{"no", []tools.Call{gtGit}, []string{"n"}, []string{"Run this?"}, []string{"rejected"}},
		{"word answer", []tools.Call{gtWrite}, []string{"YES"}, []string{"Run this?"}, []string{"approved"}},
		{"invalid re-asks", []tools.Call{gtGit}, []string{"maybe", "", "y"}, []string{"Run this?", "Please answer y, a or n: ", "Please answer y, a or n: "}, []string{"approved"}},
		{"two calls", []tools.Call{gtGit, gtWrite}, []string{"y", "n"}, []string{"Run this?", "Run this?"}, []string{"approved", "rejected"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, tty := openPty(t)
			prompter := NewPrompter(tty, tty)
			done := make(chan []tools.Verdict, 1)
			go func() {
				done <- NewGate(GateOptions{Prompter: prompter}).Check(t.Context(), env, tt.calls)
			}()
			counts := map[string]int{}
			for i, line := range tt.typed {
				counts[tt.waitFor[i]]++
				term.waitFor(tt.waitFor[i], counts[tt.waitFor[i]])
				select {
				case v := <-done:
					t.Fatalf("verdicts %+v returned before all questions were answered", v)
				default:
				}
				term.typeLine(line)
			}
			var v []tools.Verdict
			select {
			case v = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("gate did not return; terminal:\n%s", term.output())
			}
			for i, want := range tt.want {
				if v[i].Decision != want {
					t.Errorf("verdict %d = %+v, want %s", i, v[i], want)
				}
			}
			out := term.output()
			if !strings.Contains(out, "[a]lways (don't ask again for tool=run_command command=\"git status\")") && tt.calls[0].Tool.Name() == "run_command" {
				t.Errorf("prompt lacks the always option:\n%s", out)
			}
			if len(tt.calls) > 1 {
				first := strings.Index(out, "Run this?")
				for _, want := range []string{"git status -s", "src/main.go", "This step has 2 actions"} {
					if i := strings.Index(out, want); i < 0 || i > first {
						t.Errorf("%q not shown before the first question:\n%s", want, out)
					}
				}
			}
		})
	}
}

// "a" writes a rule; a new Gate loaded from that file allows the same call
// without prompting, even unattended.
func TestGatePromptPtyAlways(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	path := filepath.Join(t.TempDir(), "tact", "policy.json")
	term, tty := openPty(t)
	done := make(chan []tools.Verdict, 1)
	go func() {
		done <- NewGate(GateOptions{Prompter: NewPrompter(tty, tty), PolicyPath: path}).Check(t.Context(), env, []tools.Call{gtGit})
	}()
	term.waitFor("Run this?", 1)
	term.typeLine("a")
	v := <-done
	if !v[0].Allowed || v[0].Decision != DecisionApprovedAlways {
		t.Fatalf("verdict = %+v", v[0])
	}
	pol, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []GateOptions{{Policy: pol, Prompter: failPrompter{t}}, {Policy: pol}} {
		v := NewGate(opts).Check(t.Context(), env, []tools.Call{gtCall("run_command", tools.ClassExec, `{"command":"git status"}`)})
		if !v[0].Allowed || v[0].Decision != DecisionAllow {
			t.Errorf("next run: verdict = %+v, want allow by the saved rule", v[0])
		}
	}
	// The rule is no wider than asked: other git subcommands still need approval.
	v = NewGate(GateOptions{Policy: pol}).Check(t.Context(), env, []tools.Call{gtCall("run_command", tools.ClassExec, `{"command":"git push"}`)})
	if v[0].Allowed {
		t.Errorf("git push allowed by the git status rule")
	}
}

// Cancelling the run while the prompt waits unblocks it promptly.
func TestGatePromptCancel(t *testing.T) {
	pt, tty := openPty(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []tools.Verdict, 1)
	go func() {
		done <- NewGate(GateOptions{Prompter: NewPrompter(tty, tty)}).Check(ctx, &tools.Env{Workspace: "/ws"}, []tools.Call{gtGit, gtWrite})
	}()
	pt.waitFor("Run this?", 1) // the prompt waits
	cancel()
	select {
	case v := <-done:
		for i := range v {
			if v[i].Allowed || v[i].Decision != DecisionRejected {
				t.Errorf("verdict %d = %+v, want rejected", i, v[i])
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("cancel did not unblock the prompt")
	}
}

// A two-action step on a terminal: both actions are shown, then each asked.
func ExampleNewGate() {
	var term bytes.Buffer // stands in for /dev/tty
	gate := NewGate(GateOptions{Prompter: NewPrompter(strings.NewReader("y\nn\n"), &term)})
	verdicts := gate.Check(context.Background(), &tools.Env{Workspace: "/ws"}, []tools.Call{
		gtCall("run_command", tools.ClassExec, `{"command":"git status -s"}`),
		gtCall("write_file", tools.ClassWrite, `{"path":"src/main.go","content":"package main\n"}`),
	})
	for _, line := range strings.Split(term.String(), "\n") {
		fmt.Println(strings.TrimRight(line, " "))
	}
	for _, v := range verdicts {
		fmt.Println(v.Decision, "-", v.Reason)
	}
	// Output:
	// This step has 2 actions that need your approval:
	//
	// [1/2] run_command (exec)
	//   argv: ["git","status","-s"]
	//   working directory: /ws
	//   arguments: {
	//     "command": "git status -s"
	//   }
	//
	// [2/2] write_file (write)
	//   path: src/main.go
	//   arguments: {
	//     "path": "src/main.go",
	//     "content": "package main\n"
	//   }
	//
	// [1/2] run_command: git status -s
	// Run this? [y]es / [a]lways (don't ask again for tool=run_command command="git status") / [n]o:
	// [2/2] write_file: src/main.go
	// Run this? [y]es / [a]lways (don't ask again for tool=write_file path="src/**") / [n]o:
	// approved - approved at the prompt
	// rejected - denied by user: rejected at the approval prompt
}

// A PreToolUse hook's approval stands for a person's yes: it needs no
// prompter and asks none, but deny rules, --read-only and dry runs still win.
func TestGateHookApproved(t *testing.T) {
	env := &tools.Env{Workspace: "/ws"}
	approved := gtCall("run_command", tools.ClassExec, `{"command":"git push"}`)
	approved.HookApproved = "release window"
	deny := &Policy{Deny: []Rule{{Tool: "run_command", Command: "git push"}}}
	tests := []struct {
		name     string
		o        GateOptions
		allowed  bool
		decision string
	}{
		{"unattended", GateOptions{}, true, DecisionHookApproved},
		{"with a prompter", GateOptions{Prompter: failPrompter{t}}, true, DecisionHookApproved},
		{"deny rule wins", GateOptions{Policy: deny, Prompter: failPrompter{t}}, false, DecisionDeny},
		{"read-only wins", GateOptions{ReadOnly: true}, false, DecisionDeny},
		{"dry run", GateOptions{DryRun: true}, false, DecisionHookApproved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewGate(tt.o).Check(t.Context(), env, []tools.Call{approved})[0]
			if v.Allowed != tt.allowed || v.Decision != tt.decision {
				t.Fatalf("verdict %+v, want allowed=%v decision %s", v, tt.allowed, tt.decision)
			}
			if v.Allowed && !strings.Contains(v.Reason, "release window") {
				t.Errorf("reason %q does not say the hook's reason", v.Reason)
			}
		})
	}
}
