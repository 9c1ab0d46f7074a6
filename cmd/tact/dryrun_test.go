package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/sandbox"
	"github.com/tactcli/tact/tools"
)

// The dry-run listing is a sink of the job's events: one line a step, as
// it happens, with the decision it got.
func TestDryRunSink(t *testing.T) {
	step := func(st react.StepTrace) react.Event {
		// As the executor emits it: the step as redacted JSON.
		raw, err := text.JSON(st)
		if err != nil {
			t.Fatal(err)
		}
		return react.Event{RunID: "r", Type: react.EventStep, Fields: map[string]any{"step": json.RawMessage(raw), "state": json.RawMessage(`{}`)}}
	}
	call := func(tool, args string) react.ToolCall { return react.ToolCall{Tool: tool, Args: json.RawMessage(args)} }
	for _, tc := range []struct {
		name string
		st   react.StepTrace
		want string
	}{
		{"policy would deny", react.StepTrace{Iteration: 1, Action: call("run_command", `{"command":"rm -rf x"}`), Decision: "dry_run:deny"},
			`dry-run: step 1: run_command {"command":"rm -rf x"} -> would deny`},
		{"policy would allow", react.StepTrace{Iteration: 2, Action: call("write_file", `{"content":"a>b","path":"o"}`), Decision: "dry_run:allow"},
			`dry-run: step 2: write_file {"content":"a>b","path":"o"} -> would allow`},
		{"would ask", react.StepTrace{Iteration: 3, Action: call("run_command", `{"command":"make"}`), Decision: "dry_run:ask"},
			`dry-run: step 3: run_command {"command":"make"} -> would ask`},
		{"skipped", react.StepTrace{Iteration: 4, Action: call("read_file", `{"path":"a"}`), SkipReason: react.SkipDuplicateAction},
			`dry-run: step 4: read_file {"path":"a"} -> skipped: duplicate_action`},
		{"not permitted", react.StepTrace{Iteration: 5, Action: call("fetch", `{}`), SkipReason: react.SkipToolNotPermitted},
			`dry-run: step 5: fetch {} -> skipped: tool_not_permitted`},
		{"read tool ran", react.StepTrace{Iteration: 6, Action: call("list_dir", `{"path":"."}`), Decision: "allow"},
			`dry-run: step 6: list_dir {"path":"."} -> ran (read)`},
		{"final answer", react.StepTrace{Iteration: 7, Action: call("final_answer", `{"answer":"done"}`)},
			`dry-run: step 7: final_answer {"answer":"done"} -> final answer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			newDryRunSink(func(l string) { lines = append(lines, l) }).Handle(step(tc.st))
			if len(lines) != 1 || lines[0] != tc.want {
				t.Fatalf("got %q, want %q", lines, tc.want)
			}
		})
	}
}

// The sandbox line comes first, once execution starts; a job that never
// starts executing (a bad plan, no model) lists nothing. Other events add
// no line.
func TestDryRunSinkSandboxFirst(t *testing.T) {
	var lines []string
	d := newDryRunSink(func(l string) { lines = append(lines, l) })
	sandbox := tools.SandboxInfo{Mode: sandbox.ReadOnly, NoNetwork: true}
	d.Handle(react.Event{Type: react.EventRunStart, Fields: map[string]any{"mode": "exec", "sandbox": sandbox}})
	d.Handle(react.Event{Type: react.EventProgress, Fields: map[string]any{"line": "step 1"}})
	if len(lines) != 0 {
		t.Fatalf("before execution: %q", lines)
	}
	d.Handle(react.Event{Type: react.EventExecuteStart, Fields: map[string]any{"dry_run": json.RawMessage(`true`)}})
	// A step given as a Go value, not JSON, reads the same.
	d.Handle(react.Event{Type: react.EventStep, Fields: map[string]any{"step": react.StepTrace{Iteration: 1, Action: react.ToolCall{Tool: "final_answer", Args: json.RawMessage(`{"answer":"x"}`)}}}})
	d.Handle(react.Event{Type: react.EventTermination, Fields: map[string]any{"reason": "success"}})
	want := "dry-run: run_command sandbox: " + sandbox.String() + "\n" + `dry-run: step 1: final_answer {"answer":"x"} -> final answer`
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
