package main

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tactcli/tact/hooks"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/tools"
)

// dryRunSink lists a --dry-run job on stderr as it happens, one sink of
// its events: first run_command's sandbox (when execution starts), then
// each step with the decision it got — read tools ran, write/exec tools
// show what the policy would decide.
type dryRunSink struct {
	mu      sync.Mutex
	write   func(line string)
	sandbox string // from run_start, printed at execute_start
	// instructions are the project instruction files run_start names.
	instructions []string
}

func newDryRunSink(write func(line string)) *dryRunSink {
	return &dryRunSink{write: write}
}

func (d *dryRunSink) Handle(ev react.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch ev.Type {
	case react.EventRunStart:
		var sb tools.SandboxInfo
		if ev.Decode("sandbox", &sb) == nil {
			d.sandbox = sb.String()
		}
		d.instructions = nil
		_ = ev.Decode("project_instructions", &d.instructions) // absent: none
		var widened []string
		if ev.Decode("answer_schema_widened", &widened) == nil && len(widened) > 0 {
			d.write(termCell("dry-run: --schema: the grammar does not hold " + strings.Join(widened, ", ") + "; the answer is validated against the whole schema after"))
		}
	case react.EventExecuteStart:
		// Not at run_start: a job that cannot start lists nothing.
		d.write("dry-run: run_command sandbox: " + d.sandbox)
		if len(d.instructions) > 0 {
			d.write(termCell("dry-run: project instructions: " + strings.Join(d.instructions, ", ")))
		}
	case react.EventHook:
		// A dry run lists the hooks that would run, and when; the
		// PreToolUse hooks of read tools, which run, ran.
		var event, command, tool, matcher, decision string
		_ = ev.Decode("hook_event", &event)
		_ = ev.Decode("command", &command)
		_ = ev.Decode("tool", &tool) // absent for Stop and RunStart
		_ = ev.Decode("matcher", &matcher)
		_ = ev.Decode("decision", &decision)
		line := "dry-run: hook " + event
		if tool != "" {
			line += " (" + tool
			if matcher != "" {
				line += ", matcher " + matcher
			}
			line += ")"
		}
		if decision != hooks.DecisionDryRun {
			d.write(termCell(line + " ran (" + decision + "): " + command))
			break
		}
		d.write(termCell(line + " would run: " + command))
	case react.EventStep:
		var st react.StepTrace
		if err := ev.Decode("step", &st); err != nil {
			return
		}
		// The tool and arguments come from the plan or the model.
		d.write(termCell(fmt.Sprintf("dry-run: step %d: %s %s -> %s", st.Iteration, st.Action.Tool, st.Action.Args, dryRunDecision(st))))
	}
}

// dryRunDecision says what became of a step in a dry run.
func dryRunDecision(st react.StepTrace) string {
	switch {
	case strings.HasPrefix(st.Decision, "dry_run:"):
		return "would " + strings.TrimPrefix(st.Decision, "dry_run:")
	case st.Decision == react.DecisionHookBlocked:
		return "blocked by hook"
	case st.SkipReason != "":
		return "skipped: " + st.SkipReason
	case st.Action.Tool == tools.FinalAnswer:
		return "final answer"
	}
	return "ran (read)"
}
