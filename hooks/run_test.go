package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/tactcli/tact/internal/testwait"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/redact"
)

// spec is one hook of a test's hooks file.
type spec struct {
	matcher string
	command string
	timeout float64 // seconds; 0: default
}

// file writes a hooks file with one group per hook, all for ev.
func file(ev Event, hooks ...spec) string {
	var groups []any
	for _, h := range hooks {
		hj := map[string]any{"type": "command", "command": h.command}
		if h.timeout > 0 {
			hj["timeout"] = h.timeout
		}
		groups = append(groups, map[string]any{"matcher": h.matcher, "hooks": []any{hj}})
	}
	b, err := json.Marshal(map[string]any{"hooks": map[string]any{string(ev): groups}})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func newRunner(t *testing.T, data string, opt Options) *Runner {
	t.Helper()
	c, err := Parse("hooks.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return NewRunner(c, opt)
}

// run runs the hooks of ev from hooks on one call in a new workspace,
// which it returns.
func run(t *testing.T, opt Options, ev Event, tool, args string, hooks ...spec) (Outcome, string) {
	t.Helper()
	ws := t.TempDir()
	r := newRunner(t, file(ev, hooks...), opt)
	in := Input{SessionID: "run-42", HookEventName: ev, Cwd: ws, ToolName: tool}
	if args != "" {
		in.ToolInput = json.RawMessage(args)
	}
	return r.Run(t.Context(), in), ws
}

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed: this test runs a hook written with it", name)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestToolInputSeenByHook(t *testing.T) {
	needTool(t, "jq")
	// A Claude Code hook reads these fields; tact's own stay.
	const dump = `cat > stdin.json; jq -r .tool_input.command < stdin.json > command.txt`
	out, ws := run(t, Options{}, PreToolUse, "run_command", `{"command":"ls -l","working_dir":"sub"}`, spec{"Bash", dump, 0})
	if out.Decision != DecisionAllow || len(out.Runs) != 1 {
		t.Fatalf("outcome %+v", out)
	}
	if got := readFile(t, filepath.Join(ws, "command.txt")); got != "ls -l\n" {
		t.Errorf("jq -r .tool_input.command = %q", got)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(ws, "stdin.json"))), &in); err != nil {
		t.Fatal(err)
	}
	ti, _ := in["tool_input"].(map[string]any)
	if ti["working_dir"] != "sub" || ti["cwd"] != filepath.Join(ws, "sub") {
		t.Errorf("tool_input = %v", ti)
	}
	if in["session_id"] != "run-42" || in["hook_event_name"] != "PreToolUse" || in["cwd"] != ws || in["tool_name"] != "run_command" {
		t.Errorf("stdin = %v", in)
	}

	out, ws = run(t, Options{}, PreToolUse, "read_file", `{"path":"dir/a.go","limit":5}`, spec{"Read", "jq -c .tool_input > ti.json", 0})
	if out.Decision != DecisionAllow {
		t.Fatalf("outcome %+v", out)
	}
	want := fmt.Sprintf(`{"path":"dir/a.go","limit":5,"file_path":%q,"lexical_path":"dir/a.go"}`+"\n", filepath.Join(ws, "dir/a.go"))
	if got := readFile(t, filepath.Join(ws, "ti.json")); got != want {
		t.Errorf("tool_input = %s, want %s", got, want)
	}

	// Arguments that are not JSON still give the hook one JSON object.
	out, ws = run(t, Options{}, PreToolUse, "run_command", `{"command": "ls`, spec{"", "jq -r .tool_input > ti.txt", 0})
	if out.Decision != DecisionAllow {
		t.Fatalf("outcome %+v", out)
	}
	if got := readFile(t, filepath.Join(ws, "ti.txt")); got != `{"command": "ls`+"\n" {
		t.Errorf("broken args reached the hook as %q", got)
	}
}

func TestClaudeCodeStyleScript(t *testing.T) {
	needTool(t, "jq")
	needTool(t, "bash")
	dir := t.TempDir()
	script := filepath.Join(dir, "no-rm.sh")
	body := "#!/usr/bin/env bash\ncmd=$(jq -r .tool_input.command)\ncase $cmd in rm*) echo \"no rm\" >&2; exit 2;; esac\nexit 0\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args, decision, reason string
	}{
		{`{"command":"rm x"}`, DecisionBlock, "no rm"},
		{`{"command":"ls"}`, DecisionAllow, ""},
	} {
		out, _ := run(t, Options{}, PreToolUse, "run_command", tt.args, spec{"Bash", script, 0})
		if out.Decision != tt.decision || out.Reason != tt.reason {
			t.Errorf("%s: decision %q reason %q, want %q %q", tt.args, out.Decision, out.Reason, tt.decision, tt.reason)
		}
		if len(out.Runs) != 1 || out.Runs[0].Decision != tt.decision || out.Runs[0].Matcher != "Bash" || out.Runs[0].Command != script {
			t.Errorf("runs %+v", out.Runs)
		}
	}
	// The matcher is anchored: the script is not run for other tools.
	out, _ := run(t, Options{}, PreToolUse, "read_file", `{"command":"rm x"}`, spec{"Bash", script, 0})
	if out.Decision != DecisionAllow || len(out.Runs) != 0 {
		t.Errorf("read_file: %+v", out)
	}
}

func TestReplies(t *testing.T) {
	for _, tt := range []struct {
		name     string
		ev       Event
		stdout   string
		exit     int
		decision string
		reason   string
		context  string
	}{
		{"plain exit 0", PreToolUse, "checked\n", 0, DecisionAllow, "", ""},
		{"block", PreToolUse, `{"decision":"block","reason":"not on Fridays"}`, 0, DecisionBlock, "not on Fridays", ""},
		{"block without reason", PostToolUse, `{"decision":"block"}`, 0, DecisionBlock, "blocked by hook (no reason given)", ""},
		{"approve", PreToolUse, `{"decision":"approve","reason":"safe"}`, 0, DecisionApprove, "", ""},
		{"approve ignored on PostToolUse", PostToolUse, `{"decision":"approve"}`, 0, DecisionAllow, "", ""},
		{"no opinion", PreToolUse, `{"decision":"","continue":true,"suppressOutput":false}`, 0, DecisionAllow, "", ""},
		{"permission deny", PreToolUse, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"protected file"}}`, 0, DecisionBlock, "protected file", ""},
		{"permission allow", PreToolUse, `{"hookSpecificOutput":{"permissionDecision":"allow"}}`, 0, DecisionApprove, "", ""},
		{"permission ask", PreToolUse, `{"hookSpecificOutput":{"permissionDecision":"ask"}}`, 0, DecisionAllow, "", ""},
		{"context", PostToolUse, `{"additionalContext":"lint: 2 warnings"}`, 0, DecisionAllow, "", "lint: 2 warnings"},
		{"hook-specific context", PostToolUse, `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"tests pass"}}`, 0, DecisionAllow, "", "tests pass"},
		{"RunStart plain text is context", RunStart, "branch: main\n", 0, DecisionAllow, "", "branch: main"},
		{"Stop plain text ignored", Stop, "done\n", 0, DecisionAllow, "", ""},
		{"Stop block", Stop, `{"decision":"block","reason":"tests fail"}`, 0, DecisionBlock, "tests fail", ""},
		{"exit 2", PreToolUse, `{"decision":"approve"}`, 2, DecisionBlock, "blocked by hook (exit 2, no reason given)", ""},
		{"wrong type", PreToolUse, `{"decision":true}`, 0, DecisionBlock, "hook `cat reply` gave a malformed reply: decision: want a string, got true", ""},
		{"wrong type elsewhere", PostToolUse, `{"additionalContext":["x"]}`, 0, DecisionAllow, "", ""},
		{"broken JSON", PreToolUse, `{"decision":`, 0, DecisionBlock, "hook `cat reply` gave a malformed reply: stdout starts with \"{\" but is not a JSON object: unexpected end of JSON input", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "reply"), []byte(tt.stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := "cat reply"
			if tt.exit != 0 {
				cmd += "; exit " + strconv.Itoa(tt.exit)
			}
			r := newRunner(t, file(tt.ev, spec{"", cmd, 0}), Options{})
			out := r.Run(t.Context(), Input{HookEventName: tt.ev, Cwd: ws, ToolName: "run_command", ToolInput: json.RawMessage(`{}`)})
			if out.Decision != tt.decision || out.Reason != tt.reason || out.Context != tt.context {
				t.Errorf("outcome %q reason %q context %q, want %q %q %q", out.Decision, out.Reason, out.Context, tt.decision, tt.reason, tt.context)
			}
			if len(out.Runs) != 1 || out.Runs[0].ExitCode != tt.exit {
				t.Errorf("runs %+v", out.Runs)
			}
		})
	}
}

func TestCombine(t *testing.T) {
	ws := t.TempDir()
	reply := func(name, body string) string {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return "cat " + name
	}
	data := file(PreToolUse,
		spec{"", reply("a", `{"decision":"approve","additionalContext":"one"}`), 0},
		spec{"", reply("b", `{"decision":"block","reason":"first"}`), 0},
		spec{"", "echo second >&2; exit 2", 0},
		spec{"", reply("d", `{"hookSpecificOutput":{"additionalContext":"two"}}`), 0},
	)
	out := newRunner(t, data, Options{}).Run(t.Context(), Input{HookEventName: PreToolUse, Cwd: ws, ToolName: "x"})
	if out.Decision != DecisionBlock || out.Reason != "first\nsecond" || out.Context != "one\ntwo" {
		t.Errorf("outcome %+v", out)
	}
	var decisions []string
	for _, r := range out.Runs {
		decisions = append(decisions, r.Decision)
	}
	if got := strings.Join(decisions, " "); got != "approve block block allow" {
		t.Errorf("run decisions %q", got)
	}
	// Without the blocks, one approval approves.
	out = newRunner(t, file(PreToolUse, spec{"", "true", 0}, spec{"", reply("a", `{"decision":"approve"}`), 0}), Options{}).
		Run(t.Context(), Input{HookEventName: PreToolUse, Cwd: ws, ToolName: "x"})
	if out.Decision != DecisionApprove {
		t.Errorf("outcome %+v", out)
	}
}

// gone reports whether pid has ended (a zombie nobody reaped counts).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// waitGone waits until pid has ended.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("process %d to end", pid), func() bool { return gone(pid) })
}

// waitUntil polls cond until it holds, failing t after a minute. It is
// these tests' one poll: they wait on a state (a file, a process), never
// for a fixed time, and the bound is generous, as a busy machine is slow.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testwait.Until(time.Minute, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, path)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return pid
}

func TestHangingHook(t *testing.T) {
	for _, tt := range []struct {
		name     string
		ev       Event
		command  string
		decision string // the Run's
		outcome  string
		exit     int
		reason   string
	}{
		{"PreToolUse blocks", PreToolUse, "sleep 1000 & echo $! > pid; sleep 1000", DecisionBlock, DecisionBlock, -1, "timed out after 500ms"},
		{"PostToolUse warns", PostToolUse, "sleep 1000 & echo $! > pid; sleep 1000", DecisionError, DecisionAllow, -1, "timed out after 500ms"},
		// The hook ends, but a child keeps its stdout open: Run does not
		// wait for it, and it is ended with the hook.
		{"child holds stdout", PreToolUse, "sleep 1000 & echo $! > pid; exit 0", DecisionAllow, DecisionAllow, 0, ""},
		{"stdin never read", PreToolUse, "sleep 1000 <&- & echo $! > pid; exec sleep 1000 <&-", DecisionBlock, DecisionBlock, -1, "timed out"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, ws := run(t, Options{}, tt.ev, "run_command", `{"command":"`+strings.Repeat("x", 256<<10)+`"}`, spec{"", tt.command, 0.5})
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("Run took %s", d)
			}
			if len(out.Runs) != 1 {
				t.Fatalf("runs %+v", out.Runs)
			}
			r := out.Runs[0]
			if out.Decision != tt.outcome || r.Decision != tt.decision || r.ExitCode != tt.exit || !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("outcome %q, run %+v", out.Decision, r)
			}
			if tt.reason != "" && !strings.Contains(r.Reason, tt.command) {
				t.Errorf("reason %q does not name the command", r.Reason)
			}
			waitGone(t, readPid(t, filepath.Join(ws, "pid")))
		})
	}
}

func TestFailedHook(t *testing.T) {
	for _, tt := range []struct {
		name    string
		command string
		exit    int
		reason  string
	}{
		{"exit 1", "echo '  boom' >&2; echo more >&2; exit 1", 1, "hook `echo ' boom' >&2; echo more >&2; exit 1` exited 1: boom"},
		{"crash", "kill -SEGV $$", -1, "hook `kill -SEGV $$` was killed by signal 11 (segmentation fault)"},
		{"not found", "no-such-hook-command-xyz", 127, "hook `no-such-hook-command-xyz` exited 127: "},
	} {
		for _, ev := range []Event{PreToolUse, PostToolUse, Stop} {
			t.Run(tt.name+"/"+string(ev), func(t *testing.T) {
				var log bytes.Buffer
				opt := Options{Log: slog.New(slog.NewTextHandler(&log, nil))}
				out, _ := run(t, opt, ev, "run_command", `{"command":"ls"}`, spec{"", tt.command, 0})
				r := out.Runs[0]
				if r.ExitCode != tt.exit || !strings.HasPrefix(r.Reason, tt.reason) {
					t.Errorf("run %+v, want exit %d reason %q", r, tt.exit, tt.reason)
				}
				want, wantRun := DecisionAllow, DecisionError
				if ev == PreToolUse {
					want, wantRun = DecisionBlock, DecisionBlock
				}
				if out.Decision != want || r.Decision != wantRun {
					t.Errorf("outcome %q run %q, want %q %q", out.Decision, r.Decision, want, wantRun)
				}
				if want == DecisionBlock && out.Reason != r.Reason {
					t.Errorf("outcome reason %q", out.Reason)
				}
				if lines := strings.Count(log.String(), "\n"); lines != 1 || !strings.Contains(log.String(), "level=WARN") {
					t.Errorf("log %q, want one warning", log.String())
				}
			})
		}
	}
	// A workspace that is gone: the hook cannot start.
	r := newRunner(t, file(PreToolUse, spec{"", "true", 0}), Options{})
	out := r.Run(t.Context(), Input{HookEventName: PreToolUse, Cwd: filepath.Join(t.TempDir(), "gone"), ToolName: "x"})
	if out.Decision != DecisionBlock || !strings.Contains(out.Reason, "could not start") || out.Runs[0].ExitCode != -1 {
		t.Errorf("outcome %+v", out)
	}
}

func TestOutputCap(t *testing.T) {
	// 10 MB on each stream: kept to MaxOutput, the rest drained.
	const flood = "head -c 10000000 /dev/zero | tr '\\0' a; head -c 10000000 /dev/zero | tr '\\0' b >&2"
	out, _ := run(t, Options{MaxOutput: 1000}, RunStart, "", "", spec{"", flood, 0})
	if out.Decision != DecisionAllow || out.Runs[0].ExitCode != 0 {
		t.Fatalf("outcome %+v", out)
	}
	if len(out.Context) > maxMessage || !strings.HasPrefix(out.Context, "aaaa") {
		t.Errorf("context of %d bytes", len(out.Context))
	}
	out, _ = run(t, Options{}, PreToolUse, "x", "", spec{"", flood + "; exit 2", 0})
	if out.Decision != DecisionBlock || len(out.Reason) > maxMessage || !strings.HasPrefix(out.Reason, "bbbb") || !strings.HasSuffix(out.Reason, "…") {
		t.Errorf("outcome %s, reason of %d bytes", out.Decision, len(out.Reason))
	}
}

func TestRedaction(t *testing.T) {
	const secret = "s3cr3t-v4lue-0123"
	red, err := redact.NewRedactor([]string{"MY_API_KEY=" + secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Redactor: red}
	out, ws := run(t, opt, PreToolUse, "run_command", `{"command":"curl -H 'X-Key: `+secret+`' host"}`,
		spec{"", "cat > stdin.json; echo \"bad key " + secret + "\" >&2; exit 2", 0})
	got := readFile(t, filepath.Join(ws, "stdin.json"))
	if strings.Contains(got, secret) || !strings.Contains(got, `X-Key: [REDACTED]`) || !json.Valid([]byte(got)) {
		t.Errorf("the hook read %s", got)
	}
	if out.Reason != "bad key [REDACTED]" || out.Runs[0].Reason != out.Reason {
		t.Errorf("reason %q", out.Reason)
	}
}

func TestEnvironment(t *testing.T) {
	const show = `printf '%s|%s|%s|%s|%s|%s|%s' "$MY_VAR" "$TACT_RUN_ID" "$TACT_HOOK_EVENT" "$TACT_WORKSPACE" "$CLAUDE_PROJECT_DIR" "$(pwd)" "$TACT_TEST_HOOK_VAR"`
	opt := Options{Env: []string{"PATH=" + os.Getenv("PATH"), "MY_VAR=hello", "TACT_RUN_ID=stale"}}
	out, ws := run(t, opt, RunStart, "", "", spec{"", show, 0})
	if want := "hello|run-42|RunStart|" + ws + "|" + ws + "|" + ws + "|"; out.Context != want {
		t.Errorf("the hook saw %q, want %q", out.Context, want)
	}
	// No Env: the user's environment.
	t.Setenv("TACT_TEST_HOOK_VAR", "from-user")
	out, _ = run(t, Options{}, RunStart, "", "", spec{"", show, 0})
	if !strings.HasSuffix(out.Context, "|from-user") {
		t.Errorf("the hook saw %q", out.Context)
	}
}

func TestNoTerminal(t *testing.T) {
	const probe = `if (exec 3</dev/tty) 2>/dev/null; then echo has-tty; else echo no-tty; fi; tty || true`
	out, _ := run(t, Options{}, RunStart, "", "", spec{"", probe, 0})
	if out.Context != "no-tty\nnot a tty" {
		t.Errorf("the hook saw %q", out.Context)
	}
}

func TestConcurrentHooks(t *testing.T) {
	// Each hook makes its file, then waits (bounded) for the other's: both
	// succeed only if they run at the same time.
	wait := func(mine, other string) string {
		return fmt.Sprintf("touch %s; i=0; while [ ! -e %s ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; [ -e %s ] || { echo never saw %s >&2; exit 1; }; echo %s", mine, other, other, other, mine)
	}
	out, _ := run(t, Options{}, PostToolUse, "write_file", `{"path":"x","content":""}`,
		spec{"Write", wait("a", "b"), 20}, spec{"write_file", wait("b", "a"), 20})
	if out.Decision != DecisionAllow || len(out.Runs) != 2 {
		t.Fatalf("outcome %+v", out)
	}
	for i, r := range out.Runs {
		if r.Decision != DecisionAllow {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	if out.Runs[0].Matcher != "Write" || out.Runs[1].Matcher != "write_file" {
		t.Errorf("runs out of file order: %+v", out.Runs)
	}
}

func TestDryRun(t *testing.T) {
	out, ws := run(t, Options{DryRun: true}, PreToolUse, "run_command", `{}`, spec{"Bash", "touch ran; exit 2", 0}, spec{"Read", "touch ran", 0})
	if out.Decision != DecisionAllow || len(out.Runs) != 1 || out.Runs[0].Decision != DecisionDryRun || out.Runs[0].Command != "touch ran; exit 2" {
		t.Errorf("outcome %+v", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("a dry run ran the hook")
	}
}

func TestCancel(t *testing.T) {
	ws := t.TempDir()
	r := newRunner(t, file(PreToolUse, spec{"", "echo $$ > pid; touch started; sleep 1000", 0}), Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan Outcome)
	go func() { done <- r.Run(ctx, Input{HookEventName: PreToolUse, Cwd: ws, ToolName: "x"}) }()
	waitUntil(t, "the hook to start", func() bool { _, err := os.Stat(filepath.Join(ws, "started")); return err == nil })
	cancel()
	select {
	case out := <-done:
		if out.Decision != DecisionBlock || !strings.Contains(out.Reason, "was cancelled") {
			t.Errorf("outcome %+v", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the cancel")
	}
	waitGone(t, readPid(t, filepath.Join(ws, "pid")))
}

func TestCancelledBeforeStart(t *testing.T) {
	ws := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, ev := range []Event{PreToolUse, Stop} {
		out := newRunner(t, file(ev, spec{"", "touch ran", 0}), Options{}).Run(ctx, Input{HookEventName: ev, Cwd: ws, ToolName: "x"})
		if !strings.HasSuffix(out.Runs[0].Reason, "was cancelled") || (ev == PreToolUse) != (out.Decision == DecisionBlock) {
			t.Errorf("%s: %+v", ev, out)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("a hook started after the cancel")
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute:             "60s",
		2 * time.Second:         "2s",
		500 * time.Millisecond:  "500ms",
		1500 * time.Millisecond: "1.5s",
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestCutReply: a reply longer than what is kept of stdout is unknown,
// whatever the kept part says: a PreToolUse hook then blocks (a "block"
// after 64 KiB of blanks is not "no opinion"), a PostToolUse hook is a
// failed hook; a RunStart hook's plain text is context, kept as before.
func TestCutReply(t *testing.T) {
	const blanks = "head -c 70000 /dev/zero | tr '\\0' ' '; "
	for _, tc := range []struct {
		name    string
		ev      Event
		command string
		want    string
	}{
		{"blank then block", PreToolUse, blanks + `echo '{"decision":"block","reason":"no"}'`, DecisionBlock},
		{"blank then approve", PreToolUse, blanks + `echo '{"decision":"approve"}'`, DecisionBlock},
		{"object cut", PreToolUse, `printf '{"reason":"'; head -c 70000 /dev/zero | tr '\0' a; echo '"}'`, DecisionBlock},
		{"post blank", PostToolUse, blanks + `echo '{"decision":"block"}'`, DecisionAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := run(t, Options{}, tc.ev, "run_command", `{"command":"ls"}`, spec{"", tc.command, 0})
			if out.Decision != tc.want || !strings.Contains(out.Runs[0].Reason, "a cut reply is unknown") {
				t.Fatalf("outcome %+v", out)
			}
			if tc.ev == PostToolUse && out.Runs[0].Decision != DecisionError {
				t.Fatalf("run %+v", out.Runs[0])
			}
		})
	}
}
