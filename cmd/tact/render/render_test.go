package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
)

func ev(typ string, fields map[string]any) react.Event {
	// As the executor sends them: each field JSON already.
	out := map[string]any{}
	for k, v := range fields {
		b, _ := json.Marshal(v)
		out[k] = json.RawMessage(b)
	}
	return react.Event{Type: typ, Fields: out}
}

func step(it int, tool, args, obs string, exit int, errText, skip string) react.Event {
	return ev(react.EventStep, map[string]any{"step": react.StepTrace{Iteration: it, Action: react.ToolCall{Tool: tool, Args: json.RawMessage(args)},
		Observation: obs, ExitCode: exit, Error: errText, SkipReason: skip}})
}

// fakeClock advances one second a call.
func fakeClock() func() time.Time {
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func TestRunDrawn(t *testing.T) {
	var out bytes.Buffer
	r := New(&out, Options{ObservationLines: 3, Width: func() int { return 60 }, Now: fakeClock()})
	defer r.Close()
	for _, e := range []react.Event{
		ev(react.EventRunStart, map[string]any{"query": "q"}),
		ev(react.EventPlan, map[string]any{"plan": []map[string]any{{"type": "plan", "query": "q"}, {"type": "step", "tool": "read_file"}, {"type": "step", "tool": "final_answer"}}}),
		ev(react.EventModelCall, map[string]any{"kind": "action"}),
		ev(react.EventAction, map[string]any{"iteration": 1, "tool": "read_file", "args": json.RawMessage(`{"path":"auth.py","limit":20}`)}),
		step(1, "read_file", `{"path":"auth.py","limit":20}`, "def authenticate(token):\n    return True\n\x1b[31mred\n4\n5\n6", 0, "", ""),
		// A step without an action event (a skipped plan step) gets its line too.
		step(2, "run_command", `{"command":"make test"}`, "denied by policy: read-only", 1, "denied by policy: read-only", ""),
		step(3, "write_file", `{"path":"x"}`, "tool not permitted", -1, "", "tool_not_permitted"),
		step(4, "", `{}`, "invalid action: missing tool", -1, "missing tool", "invalid_action"),
		ev(react.EventCompaction, map[string]any{"tokens_before": 3000, "tokens_after": 1200, "first_iteration": 1, "last_iteration": 2}),
		step(5, "final_answer", `{"answer":"ok"}`, "ok", 0, "", ""),
		ev(react.EventTermination, map[string]any{"reason": "success", "token_usage": llm.Usage{PromptTokens: 1200, CachedTokens: 800, CompletionTokens: 34}}),
	} {
		r.Handle(e)
	}
	want := `plan: read_file → final_answer
● read_file(path="auth.py", limit=20)
  ⎿ def authenticate(token):
        return True
    \u001b[31mred
    … 3 more lines (5B)
● run_command(command="make test")
  ✗ denied by policy: read-only
● write_file(path="x")
  ⎿ skipped (tool_not_permitted): tool not permitted
✗ invalid reply: missing tool
  compacted steps 1-2 to fit the context window (3,000 → 1,200 tokens)
`
	if got := out.String(); got != want {
		t.Errorf("drawn:\n%s\nwant:\n%s", got, want)
	}
	if got, want := r.Summary(), "1,234 tokens (800 cached) · 3 actions · "; !strings.HasPrefix(got, want) {
		t.Errorf("summary %q, want prefix %q", got, want)
	}
}

func TestLongValuesClipped(t *testing.T) {
	var out bytes.Buffer
	r := New(&out, Options{Width: func() int { return 80 }})
	content := strings.Repeat("x", 500)
	r.Handle(ev(react.EventAction, map[string]any{"iteration": 1, "tool": "write_file", "args": map[string]any{"content": content + "\n", "path": "a"}}))
	line := strings.TrimSuffix(out.String(), "\n")
	if !strings.HasPrefix(line, `● write_file(content="xxxx`) || !strings.Contains(line, `…" (501B), path="a")`) || len([]rune(line)) > 79 {
		t.Errorf("line %q", line)
	}
}

func TestStatusLineClearedFirst(t *testing.T) {
	var out bytes.Buffer
	r := New(&out, Options{Hint: "Ctrl-C to interrupt", Now: fakeClock()})
	defer r.Close()
	r.o.Spinner = true // drawn on demand: no ticking goroutine in this test
	r.mu.Lock()
	r.status("thinking")
	r.mu.Unlock()
	if got := out.String(); !strings.HasPrefix(got, "\r\033[K⠋ thinking (1.0s · Ctrl-C to interrupt)") {
		t.Fatalf("status line %q", got)
	}
	out.Reset()
	resume := r.Pause()
	if out.String() != "\r\033[K" {
		t.Errorf("pause wrote %q, want the line cleared", out.String())
	}
	out.Reset()
	r.Println("approval block")
	if out.String() != "approval block\n" {
		t.Errorf("while paused: %q (no status line drawn)", out.String())
	}
	out.Reset()
	resume()
	if !strings.HasPrefix(out.String(), "\r\033[K") || !strings.Contains(out.String(), "thinking") {
		t.Errorf("resume drew %q", out.String())
	}
	out.Reset()
	r.LogWriter().Write([]byte("level=WARN msg=x\n"))
	if got := out.String(); !strings.HasPrefix(got, "\r\033[Klevel=WARN msg=x\n\r\033[K") {
		t.Errorf("log line %q: want the status cleared before it and drawn again after", got)
	}
}

func TestColor(t *testing.T) {
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	if !ColorFor(true) || ColorFor(false) {
		t.Error("colour: want on a terminal only")
	}
	t.Setenv("NO_COLOR", "1")
	if ColorFor(true) {
		t.Error("NO_COLOR set, colour on")
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if ColorFor(true) {
		t.Error("TERM=dumb, colour on")
	}
	var out bytes.Buffer
	r := New(&out, Options{Color: true})
	r.Handle(step(1, "run_command", `{"command":"false"}`, "exit status 1", 1, "exit status 1", ""))
	if got := out.String(); !strings.Contains(got, "\033[31m✗\033[0m") || !strings.Contains(got, "\033[1mrun_command\033[0m") {
		t.Errorf("coloured: %q", got)
	}
}

func TestFormatHelpers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{thousands(0), "0"}, {thousands(999), "999"}, {thousands(1234567), "1,234,567"},
		{seconds(400 * time.Millisecond), "0.4s"}, {seconds(42 * time.Second), "42s"}, {seconds(125 * time.Second), "2m05s"},
		{formatArgs(json.RawMessage(`{"b":1,"a":[1, 2],"c":null}`)), "b=1, a=[1,2], c=null"},
		{formatArgs(json.RawMessage(`not json`)), "not json"},
		{text.Clip("héllo", 3), "hé…"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
