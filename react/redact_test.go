package react

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/redact/redacttest"
	"github.com/tactcli/tact/tools"
)

const planted = "supersecretval"

// realHarness runs the real tools in a workspace, with a redactor that
// knows MY_API_KEY=supersecretval, as the CLI does.
func realHarness(t *testing.T, script string) (*harness, string) {
	t.Helper()
	h := newHarness(t, script)
	ws := t.TempDir()
	env, err := tools.NewEnv(ws)
	if err != nil {
		t.Fatal(err)
	}
	env.Redactor, err = redact.NewRedactor([]string{"MY_API_KEY=" + planted}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.ex.Env = env
	h.ex.Registry = tools.DefaultRegistry()
	h.ex.Gate = tools.AllowAll{}
	if h.planner != nil {
		h.planner.Registry = h.ex.Registry
		h.planner.Tools = h.ex.Registry.Names()
	}
	return h, ws
}

// Regression: $jq arguments saw redacted outputs, so a plan copying a config
// wrote "db_password = [REDACTED]". The copy is raw; every exit is redacted.
func TestPlanDataIsRawExitsAreRedacted(t *testing.T) {
	h, ws := realHarness(t, "")
	config := "db_password = " + planted + "\nhost = <db> & more\n"
	if err := os.WriteFile(filepath.Join(ws, "app.conf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ex.StopWhen = `.output | contains("never")` // --stop-when sees raw data too
	res := h.run(`{"tool":"read_file","args":{"path":"app.conf"}}
{"tool":"write_file","args":{"path":"copy.conf","content":{"$jq":".steps[0].output"}}}
{"tool":"final_answer","args":{"answer":{"$jq":".steps[0].output"}}}`)
	if res.TerminationReason != ReasonSuccess {
		t.Fatalf("%s: %s", res.TerminationReason, res.Message)
	}
	got, err := os.ReadFile(filepath.Join(ws, "copy.conf"))
	if err != nil || string(got) != config {
		t.Fatalf("copy.conf = %q (%v), want the raw config %q", got, err, config)
	}
	out, _ := json.Marshal(res)
	for name, text := range map[string]string{"trace": h.trace.String(), "result": string(out), "answer": res.FinalAnswer} {
		if part := redacttest.LeakedPart(text, planted); part != "" {
			t.Errorf("%s holds %q", name, part)
		}
		if !strings.Contains(text, redact.Redacted) {
			t.Errorf("%s has no %s", name, redact.Redacted)
		}
	}
	// write_file's arguments in the trace are redacted, valid JSON.
	var args map[string]string
	if err := json.Unmarshal(res.Trace.Steps[1].Action.Args, &args); err != nil || !strings.Contains(args["content"], redact.Redacted) {
		t.Fatalf("write_file args %s (%v)", res.Trace.Steps[1].Action.Args, err)
	}
	// No HTML escaping in arguments, computed or literal.
	if strings.Contains(h.trace.String(), `\u003c`) || !strings.Contains(string(res.Trace.Steps[1].Action.Args), "<db> & more") {
		t.Fatalf("HTML-escaped arguments: %s", res.Trace.Steps[1].Action.Args)
	}
}

// Regression: the observation was cut before it was redacted, so a secret
// straddling the cut (the head keeps 6000 bytes) leaked in part into the
// trace, the result and the model's prompt.
func TestObservationCutKeepsSecretWhole(t *testing.T) {
	h, ws := realHarness(t, action(thought, "final_answer", `{"answer":"done"}`))
	for _, f := range []struct{ name, content string }{
		{"head.txt", strings.Repeat("A", 5993) + planted + strings.Repeat("B", 20000)},
		// The tail keeps the last 2000 bytes: here the secret straddles its start.
		{"tail.txt", strings.Repeat("A", 20000) + planted + strings.Repeat("B", 1990)},
	} {
		if err := os.WriteFile(filepath.Join(ws, f.name), []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := h.run(`{"tool":"read_file","args":{"path":"head.txt"}}
{"tool":"read_file","args":{"path":"tail.txt"}}`)
	if res.TerminationReason != ReasonSuccess {
		t.Fatalf("%s: %s", res.TerminationReason, res.Message)
	}
	for i, st := range res.Trace.Steps[:2] {
		if !strings.Contains(st.Observation, " cut (") {
			t.Fatalf("step %d not cut: %d bytes", i+1, len(st.Observation))
		}
	}
	out, _ := json.Marshal(res)
	var prompts strings.Builder
	for _, req := range h.rec.reqs {
		for _, m := range req.Messages {
			prompts.WriteString(m.Content)
		}
	}
	for name, text := range map[string]string{"trace": h.trace.String(), "result": string(out), "prompt": prompts.String()} {
		if part := redacttest.LeakedPart(text, planted); part != "" {
			t.Errorf("%s holds %q", name, part)
		}
	}
}

// The model's prompts are redacted even where they carry raw plan data:
// a fill request's known arguments and a replan's transcript.
func TestPromptsRedacted(t *testing.T) {
	h, ws := realHarness(t, planReply(planStep("final_answer", `{"answer":"x"}`)))
	if err := os.WriteFile(filepath.Join(ws, "k.txt"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ex.ReplanThreshold = 1
	res := h.run(`{"tool":"read_file","args":{"path":"k.txt"}}
{"tool":"read_file","args":{"path":{"$jq":".steps[0].output"}}}`)
	if res.State.Replans != 1 {
		t.Fatalf("replans %d (%s: %s)", res.State.Replans, res.TerminationReason, res.Message)
	}
	for _, req := range h.rec.reqs {
		for _, m := range req.Messages {
			if part := redacttest.LeakedPart(m.Content, planted); part != "" {
				t.Fatalf("%s request holds %q: %s", req.Kind, part, m.Content)
			}
		}
	}
	if part := redacttest.LeakedPart(h.trace.String(), planted); part != "" {
		t.Fatalf("trace holds %q", part)
	}
}

// Regression: skipped steps reported exit_code 0.
func TestSkippedStepsReportNotRun(t *testing.T) {
	h := newHarness(t, "")
	h.ex.AllowTools = []string{"echo"}
	res := h.run(`{"tool":"other","args":{"msg":"a"}}`)
	st := res.Trace.Steps[0]
	if st.SkipReason != SkipToolNotPermitted || st.ExitCode != ExitCodeNotRun || ExitCodeNotRun == 0 {
		t.Fatalf("skipped step %+v", st)
	}
	ev := h.events("step")
	if code := ev[0]["step"].(map[string]any)["exit_code"]; code != float64(ExitCodeNotRun) {
		t.Fatalf("trace exit_code %v", code)
	}
}

// Regression: "I cannotice" counted as the model saying it cannot, and
// phrases matched inside words.
func TestPhrasesMatchWholeWords(t *testing.T) {
	for _, tc := range []struct {
		answer, phrase string
		failed         bool
	}{
		{"I cannotice nothing wrong", "", false},
		{"I cannot read that disk.", "", true},
		{"i can't.", "", true},
		{"I can’t see it", "", true},
		{"Unable to completely verify, but fine", "", false},
		{"errorless run", "error", false},
		{"one error found", "error", true},
		{"ERROR: disk", "error", true},
		{"nothing here, 2026", "2026", true},
		{"nothing here, 20260", "2026", false},
		{"x-fail-y", "-fail-", true},
		{"status: not found", "not found", true},
	} {
		h := newHarness(t, "")
		if tc.phrase != "" {
			h.ex.FailurePhrases = []string{tc.phrase}
		}
		r := &run{e: h.ex}
		if got := r.failurePhrase(tc.answer) != ""; got != tc.failed {
			t.Errorf("answer %q, phrase %q: failed = %v, want %v", tc.answer, tc.phrase, got, tc.failed)
		}
	}
}

// Regression: a cancelled run said "cancelled: cancelled".
func TestCancelMessage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := cancelMessage(ctx); got != "interrupted before the run finished" {
		t.Errorf("cancelMessage = %q", got)
	}
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(errors.New("received SIGTERM"))
	if got := cancelMessage(ctx); got != "interrupted: received SIGTERM" {
		t.Errorf("cancelMessage with cause = %q", got)
	}
	h := newHarness(t, "")
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	res := h.ex.Run(ctx, "q", h.plan(`{"tool":"echo","args":{"msg":"a"}}`))
	if res.TerminationReason != ReasonCancelled || res.Message != "interrupted before the run finished" {
		t.Fatalf("%s: %q", res.TerminationReason, res.Message)
	}
}

// The planner's prompts go through the redacting backend.
func TestRedactingBackend(t *testing.T) {
	h := newHarness(t, planReply(planStep("final_answer", `{"answer":"x"}`)))
	red, _ := redact.NewRedactor([]string{"MY_API_KEY=" + planted}, nil)
	pl := &planner.Planner{Backend: llm.Redacting(h.rec, red.Redact), Registry: h.ex.Registry, Tools: []string{"echo"}}
	if _, _, err := pl.Plan(context.Background(), "use key "+planted, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range h.rec.reqs[0].Messages {
		if strings.Contains(m.Content, planted) {
			t.Fatalf("planner prompt holds the secret: %s", m.Content)
		}
	}
}
