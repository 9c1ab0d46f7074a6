package main

// Hooks end to end in every front end that runs tools itself: tact batch
// (with --parallel), tact chat on piped stdin, tact serve's /v1/runs (and
// not its step API, whose client runs the tools), and tact mcp serve's
// tact_exec. hooks.txtar covers run and exec. The hooks are real bash/jq
// scripts; each guard call appends its run id ($TACT_RUN_ID) to a calls
// file, so a test sees which runs the hook was asked about.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hooksGuard is Claude Code's kind of PreToolUse hook: rm is blocked with a
// reason on stderr (exit 2); every call is logged with its run id first.
const hooksGuard = `#!/bin/bash
in=$(cat)
printf '%s\n' "$TACT_RUN_ID" >> "$1"
cmd=$(printf '%s' "$in" | jq -r '.tool_input.command')
case "$cmd" in
rm*) echo "no rm here" >&2; exit 2 ;;
esac
exit 0
`

const hooksReason = "no rm here"

// hooksCase is a scratch home and workspace (this test binary as tact)
// holding ws/x and the guard script.
type hooksCase struct {
	*e2eCase
	calls string // the guard's log: one run id a call
}

func newHooksCase(t *testing.T) *hooksCase {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test of tact with hook programs; skipped with -short")
	}
	for _, tool := range []string{"sh", "bash", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("hooks tests need %s: %v", tool, err)
		}
	}
	h := &hooksCase{e2eCase: newFilesCase(t)}
	h.calls = filepath.Join(h.dir, "calls")
	h.file("guard.sh", hooksGuard)
	h.wsFile("x", "keep me\n")
	return h
}

// sq quotes s for sh.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// guardHook is the guard as a hook command.
func (h *hooksCase) guardHook() map[string]any {
	return map[string]any{"type": "command", "command": "bash " + sq(filepath.Join(h.dir, "guard.sh")) + " " + sq(h.calls)}
}

// hooksFile writes a hooks file: event name to its matcher groups.
func (h *hooksCase) hooksFile(name string, events map[string][]map[string]any) string {
	h.t.Helper()
	data, err := json.Marshal(map[string]any{"hooks": events})
	if err != nil {
		h.t.Fatal(err)
	}
	return h.file(name, string(data))
}

// guardFile is a hooks file with the guard on Bash (run_command) only.
func (h *hooksCase) guardFile() string {
	return h.hooksFile("guard.json", map[string][]map[string]any{
		"PreToolUse": {{"matcher": "Bash", "hooks": []any{h.guardHook()}}},
	})
}

// guardCalls is the run ids the guard was called for, in order.
func (h *hooksCase) guardCalls() []string {
	h.t.Helper()
	data, err := os.ReadFile(h.calls)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// assertKept: the file the runs tried to remove is still there, unchanged.
func (h *hooksCase) assertKept() {
	h.t.Helper()
	if data, err := os.ReadFile(filepath.Join(h.ws, "x")); err != nil || string(data) != "keep me\n" {
		h.t.Fatalf("ws/x after the blocked rm: %q, %v; want it kept", data, err)
	}
}

// hookedResult is the part of a run --json object (a batch line, a
// /v1/runs answer, tact_exec's structured content) these tests read.
type hookedResult struct {
	ID                string `json:"id"`
	RunID             string `json:"run_id"`
	ExitCode          int    `json:"exit_code"`
	Success           bool   `json:"success"`
	FinalAnswer       string `json:"final_answer"`
	TerminationReason string `json:"termination_reason"`
	Trace             struct {
		Steps []hookedStep `json:"steps"`
	} `json:"trace"`
}

type hookedStep struct {
	Action struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	} `json:"action"`
	Observation string `json:"observation"`
	Decision    string `json:"decision"`
	Hooks       []struct {
		Event    string `json:"event"`
		Matcher  string `json:"matcher"`
		ExitCode int    `json:"exit_code"`
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	} `json:"hooks"`
}

// assertBlockedStep: s is run_command rm x, blocked by one PreToolUse hook
// that exited 2 with reason; the observation says so.
func assertBlockedStep(t *testing.T, who string, s hookedStep, reason string) {
	t.Helper()
	var args struct{ Command string }
	_ = json.Unmarshal(s.Action.Args, &args)
	if s.Action.Tool != "run_command" || args.Command != "rm x" || s.Decision != "blocked_by_hook" || s.Observation != "blocked by hook: "+reason {
		t.Errorf("%s: step %s %s: decision %q, observation %q; want blocked_by_hook, %q", who, s.Action.Tool, s.Action.Args, s.Decision, s.Observation, "blocked by hook: "+reason)
	}
	if len(s.Hooks) != 1 || s.Hooks[0].Event != "PreToolUse" || s.Hooks[0].ExitCode != 2 || s.Hooks[0].Decision != "block" || s.Hooks[0].Reason != reason {
		t.Errorf("%s: step hooks %+v; want one PreToolUse run, exit 2, block, %q", who, s.Hooks, reason)
	}
}

// batchResults parses batch's JSONL results, in the order written.
func batchResults(t *testing.T, out string) []hookedResult {
	t.Helper()
	var rs []hookedResult
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r hookedResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("batch result line is not JSON: %v\n%s", err, line)
		}
		rs = append(rs, r)
	}
	return rs
}

// hookEvents is the trace's hook events of hookEvent.
func hookEvents(evs []map[string]any, hookEvent string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["event"] == "hook" && ev["hook_event"] == hookEvent {
			out = append(out, ev)
		}
	}
	return out
}

// A saved plan that removes x, run for three queries two at a time: every
// run's rm is blocked, each result says so, and the trace has one hook
// event per run, under its run id.
func TestHooksBatchBlocksEveryRun(t *testing.T) {
	h := newHooksCase(t)
	plan := h.file("plan.jsonl", planJSONL(t, step("run_command", map[string]any{"command": "rm x"}), finalStep("removed")))
	queries := h.file("queries.jsonl", `{"id":"a","query":"remove x please"}
{"id":"b","query":"remove x now"}
{"id":"c","query":"remove x today"}
`)
	p := h.run("batch", "--workspace", h.ws, "--plan", plan, "--parallel", "2", "--hooks", h.guardFile(), "--yes", "--trace", h.trace, queries)
	// 9: some query did not succeed (all did not: each ends at the block).
	if code := p.wait(2 * time.Minute); code != 9 {
		t.Fatalf("tact batch: exit %d, want 9\nstdout: %s\nstderr: %s", code, p.stdout.String(), p.stderr.String())
	}
	h.assertKept()
	rs := batchResults(t, p.stdout.String())
	var ids, runIDs []string
	for _, r := range rs {
		ids = append(ids, r.ID)
		runIDs = append(runIDs, r.RunID)
		if r.Success || r.ExitCode != 3 || len(r.Trace.Steps) != 1 {
			t.Errorf("result %s: success %v, exit_code %d, %d steps; want a failure (3) after the one blocked step", r.ID, r.Success, r.ExitCode, len(r.Trace.Steps))
			continue
		}
		assertBlockedStep(t, "result "+r.ID, r.Trace.Steps[0], hooksReason)
		if !strings.Contains(r.FinalAnswer, "blocked by hook: "+hooksReason) {
			t.Errorf("result %s: final answer %q does not say the step was blocked", r.ID, r.FinalAnswer)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("result ids %v, want a, b, c", ids)
	}
	slices.Sort(runIDs)
	var traced []string
	for _, ev := range h.events() {
		if ev["event"] != "hook" {
			continue
		}
		id, _ := ev["run_id"].(string)
		traced = append(traced, id)
		if ev["hook_event"] != "PreToolUse" || ev["tool"] != "run_command" || ev["matcher"] != "Bash" || ev["decision"] != "block" ||
			ev["exit_code"] != 2.0 || ev["reason"] != hooksReason || !strings.Contains(fmt.Sprint(ev["command"]), "guard.sh") {
			t.Errorf("hook event %v", ev)
		}
		if d, ok := ev["duration_ms"].(float64); !ok || d < 0 {
			t.Errorf("hook event duration_ms %v", ev["duration_ms"])
		}
	}
	slices.Sort(traced)
	if !slices.Equal(traced, runIDs) {
		t.Errorf("hook events' run ids %v, want one per run %v", traced, runIDs)
	}
	// The hook itself was asked once by each run, under the run's id.
	called := h.guardCalls()
	slices.Sort(called)
	if !slices.Equal(called, runIDs) {
		t.Errorf("the guard was called for runs %v, want %v", called, runIDs)
	}
}

// tact chat on piped stdin: a turn's rm is blocked and the model's next
// prompt holds the reason; each turn's task message holds the RunStart
// hook's context for that turn.
func TestHooksChatBlocksAndAddsContext(t *testing.T) {
	h := newHooksCase(t)
	hooksPath := h.hooksFile("chat.json", map[string][]map[string]any{
		"RunStart":   {{"hooks": []any{map[string]any{"type": "command", "command": `jq -r '"house rule for: " + .query'`}}}},
		"PreToolUse": {{"matcher": "Bash", "hooks": []any{h.guardHook()}}},
	})
	replies := h.file("replies.jsonl", script(t,
		reply("run_command", map[string]any{"command": "rm x"},
			"expect", []string{"Query: remove x", "Context from the user's hooks:\nhouse rule for: remove x"}),
		answer("x kept", "expect", []string{"blocked by hook: " + hooksReason}),
		answer("nothing", "expect", []string{"Query: anything else?", "Context from the user's hooks:\nhouse rule for: anything else?"}),
	))
	p := h.start(strings.NewReader("remove x\nanything else?\n"), nil,
		"chat", "--workspace", h.ws, "--script", replies, "--no-plan", "--hooks", hooksPath, "--yes", "--trace", h.trace)
	if code := p.wait(2 * time.Minute); code != 0 {
		t.Fatalf("tact chat: exit %d\nstdout: %s\nstderr: %s", code, p.stdout.String(), p.stderr.String())
	}
	// A script expect missing from a prompt fails that model call: both
	// answers shown means every prompt held what it should.
	if out := p.stdout.String(); !strings.Contains(out, "x kept") || !strings.Contains(out, "nothing") {
		t.Fatalf("chat output %q, want both turns' answers", out)
	}
	h.assertKept()
	evs := h.events()
	var turns []string
	for _, ev := range evs {
		if ev["event"] == "run_start" {
			turns = append(turns, fmt.Sprint(ev["run_id"]))
		}
	}
	if len(turns) != 2 {
		t.Fatalf("%d run_start events, want one per turn (2)", len(turns))
	}
	var started []string
	for _, ev := range hookEvents(evs, "RunStart") {
		started = append(started, fmt.Sprint(ev["run_id"]))
		if ev["decision"] != "allow" || ev["exit_code"] != 0.0 {
			t.Errorf("RunStart hook event %v", ev)
		}
	}
	if !slices.Equal(started, turns) {
		t.Errorf("RunStart hooks ran for %v, want once per turn %v", started, turns)
	}
	pre := hookEvents(evs, "PreToolUse")
	if len(pre) != 1 || pre[0]["run_id"] != turns[0] || pre[0]["decision"] != "block" || pre[0]["reason"] != hooksReason {
		t.Errorf("PreToolUse hook events %v, want one block in the first turn", pre)
	}
	blocked := 0
	for _, ev := range evs {
		if ev["event"] != "step" {
			continue
		}
		raw, _ := json.Marshal(ev["step"])
		var s hookedStep
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if s.Action.Tool == "run_command" {
			blocked++
			assertBlockedStep(t, "chat step", s, hooksReason)
		}
	}
	if blocked != 1 {
		t.Errorf("%d run_command steps in the trace, want 1", blocked)
	}
}

// tact serve: a /v1/runs run whose plan removes x is blocked (and the model
// hears why), while the step API, whose client runs the tools, calls no
// hook even when the proposed action is the same rm.
func TestHooksServeRunsNotSteps(t *testing.T) {
	h := newHooksCase(t)
	replies := h.file("replies.jsonl", script(t,
		// The step API's proposal (the first model call).
		reply("run_command", map[string]any{"command": "rm x"}),
		// The /v1/runs run, after its plan's rm was blocked.
		answer("x kept", "expect", []string{"blocked by hook: " + hooksReason}),
	))
	srv := startServe(t, h.bin, h.dir, []string{"serve", "--workspace", h.ws, "--script", replies, "--hooks", h.guardFile(), "--yes",
		"--addr", "127.0.0.1:0", "--shutdown-grace", "5s"})
	client := &http.Client{Timeout: 2 * time.Minute}
	post := func(path string, body any) []byte {
		t.Helper()
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Post(srv.base+path, "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s (%v)\nserver log:\n%s", path, resp.StatusCode, out, err, srv.logs.String())
		}
		return out
	}

	// The step API: the model proposes rm x; the client would run it, so
	// no hook runs (the guard logs every call, even one it allows).
	raw := post("/api/agent/react_step", map[string]any{"user_query": "remove x", "tools": []json.RawMessage{
		json.RawMessage(`{"name":"run_command","description":"Run a shell command.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}}`)}})
	var sr struct {
		Status        string `json:"status"`
		ActionDetails *struct {
			ToolName string          `json:"tool_name"`
			ToolArgs json.RawMessage `json:"tool_args"`
		} `json:"action_details"`
	}
	if err := json.Unmarshal(raw, &sr); err != nil || sr.Status != "action_proposed" || sr.ActionDetails == nil ||
		sr.ActionDetails.ToolName != "run_command" || string(sr.ActionDetails.ToolArgs) != `{"command":"rm x"}` {
		t.Fatalf("step: %s (%v); want run_command rm x proposed", raw, err)
	}
	if calls := h.guardCalls(); len(calls) != 0 {
		t.Fatalf("the step API called the hook for %v; its client runs the tools, so no hook should run", calls)
	}
	h.assertKept()

	// /v1/runs: the server runs the plan, so the hook blocks its rm.
	raw = post("/v1/runs", map[string]any{"query": "remove x", "plan": planJSONL(t,
		step("run_command", map[string]any{"command": "rm x"}), finalStep("removed"))})
	var r hookedResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("/v1/runs answer: %v\n%s", err, raw)
	}
	h.assertKept()
	if len(r.Trace.Steps) == 0 {
		t.Fatalf("/v1/runs: no steps: %s", raw)
	}
	assertBlockedStep(t, "/v1/runs", r.Trace.Steps[0], hooksReason)
	// The model was told why (its script line expects the reason).
	if !r.Success || r.FinalAnswer != "x kept" {
		t.Errorf("/v1/runs: success %v, answer %q (%s); want the model's answer after the block", r.Success, r.FinalAnswer, r.TerminationReason)
	}
	if calls := h.guardCalls(); !slices.Equal(calls, []string{r.RunID}) {
		t.Errorf("the guard was called for runs %v, want once for the run %s", calls, r.RunID)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-srv.exited:
		if err != nil {
			t.Errorf("tact serve after SIGTERM: %v\n%s", err, srv.logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("tact serve did not exit after SIGTERM\n%s", srv.logs.String())
	}
}

// tact mcp serve: tact_exec runs a plan through the same engine, so the
// hook blocks its rm and the structured result says so.
func TestHooksMCPServeExec(t *testing.T) {
	h := newHooksCase(t)
	cs := connectStdio(t, h.e2eCase, nil, "--hooks", h.guardFile(), "--yes")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "tact_exec", Arguments: map[string]any{
		"query": "remove x",
		"rows":  []any{step("run_command", map[string]any{"command": "rm x"}), finalStep("removed")},
	}})
	if err != nil {
		t.Fatalf("tact_exec: %v", err)
	}
	h.assertKept()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var r hookedResult
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Trace.Steps) != 1 {
		t.Fatalf("tact_exec structured content: %s (%v); want one step", raw, err)
	}
	assertBlockedStep(t, "tact_exec", r.Trace.Steps[0], hooksReason)
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if r.Success || !strings.Contains(text.String(), "blocked by hook: "+hooksReason) {
		t.Errorf("tact_exec: success %v, text %q; want a failed run whose text names the block", r.Success, text.String())
	}
	if calls := h.guardCalls(); !slices.Equal(calls, []string{r.RunID}) {
		t.Errorf("the guard was called for runs %v, want once for the run %s", calls, r.RunID)
	}
}

var hangSeq atomic.Int64

// A hook that hangs in one run of batch --parallel 2 is killed at its
// timeout (with its sleep) and blocks that run; the other run's hook
// answers at once and its result is written first, though its query comes
// second: the hang held up no other run.
func TestHooksHangingHookHoldsUpNoOtherRun(t *testing.T) {
	h := newHooksCase(t)
	// A sleep of about 1000 s whose argument no other process has, so /proc
	// finds exactly this test's sleep.
	marker := fmt.Sprintf("1000.%d%04d", os.Getpid(), hangSeq.Add(1))
	killMarked(t, marker)
	cmd := `in=$(cat); case "$in" in *HANGME*) exec sleep ` + marker + ` ;; esac; echo "blocked at once" >&2; exit 2`
	hooksPath := h.hooksFile("hang.json", map[string][]map[string]any{
		"PreToolUse": {{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": 3}}}},
	})
	plan := h.file("plan.jsonl", planJSONL(t, step("run_command", map[string]any{"command": "rm x"}), finalStep("removed")))
	queries := h.file("queries.jsonl", `{"id":"hang","query":"HANGME remove x"}
{"id":"quick","query":"remove x"}
`)
	p := h.run("batch", "--workspace", h.ws, "--plan", plan, "--parallel", "2", "--hooks", hooksPath, "--yes", "--trace", h.trace, queries)
	if code := p.wait(time.Minute); code != 9 {
		t.Fatalf("tact batch: exit %d, want 9\nstdout: %s\nstderr: %s", code, p.stdout.String(), p.stderr.String())
	}
	h.assertKept()
	rs := batchResults(t, p.stdout.String())
	if len(rs) != 2 || rs[0].ID != "quick" || rs[1].ID != "hang" {
		t.Fatalf("results in the order written: %+v; want quick first, then hang", rs)
	}
	for _, r := range rs {
		if r.Success || r.ExitCode != 3 || len(r.Trace.Steps) != 1 || r.Trace.Steps[0].Decision != "blocked_by_hook" {
			t.Errorf("result %s: %+v; want one step, blocked_by_hook, exit 3", r.ID, r)
		}
	}
	if got := rs[0].Trace.Steps[0].Observation; got != "blocked by hook: blocked at once" {
		t.Errorf("quick run's observation %q", got)
	}
	if got := rs[1].Trace.Steps[0].Observation; !strings.HasPrefix(got, "blocked by hook: hook `") || !strings.HasSuffix(got, "` timed out after 3s") {
		t.Errorf("hanging run's observation %q, want the hook's timeout", got)
	}
	// One hook event a run: the quick one's exit 2, the hanging one's a
	// block for its timeout, after at least the timeout.
	byRun := map[any][]map[string]any{}
	for _, ev := range hookEvents(h.events(), "PreToolUse") {
		byRun[ev["run_id"]] = append(byRun[ev["run_id"]], ev)
	}
	quick, hang := byRun[rs[0].RunID], byRun[rs[1].RunID]
	if len(byRun) != 2 || len(quick) != 1 || len(hang) != 1 {
		t.Fatalf("PreToolUse hook events by run: %v; want one for each of the two runs", byRun)
	}
	if quick[0]["exit_code"] != 2.0 || quick[0]["decision"] != "block" || quick[0]["reason"] != "blocked at once" {
		t.Errorf("quick run's hook event %v", quick[0])
	}
	if d, _ := hang[0]["duration_ms"].(float64); hang[0]["exit_code"] == 0.0 || hang[0]["exit_code"] == 2.0 || hang[0]["decision"] != "block" ||
		!strings.HasSuffix(fmt.Sprint(hang[0]["reason"]), "timed out after 3s") || d < 3000 {
		t.Errorf("hanging run's hook event %v; want a block at the 3s timeout", hang[0])
	}
	// Its sleep was killed with its process group.
	assertNoSurvivors(t, marker, 10*time.Second)
}
