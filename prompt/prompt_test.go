package prompt

import (
	"strings"
	"testing"
)

func TestTemplatesRender(t *testing.T) {
	tools := []Tool{{Name: "read_file", Class: "read", Description: "Read a file.", Schema: `{"type":"object"}`}}
	tests := []struct {
		name string
		data any
		want []string
	}{
		{"system", System{Tools: tools, ThoughtPrompt: DefaultThoughtPrompt, RequireThought: true, MinThought: 10, AllowReplan: true},
			[]string{"- read_file [read]: Read a file.", `args: {"type":"object"}`, "- replan:", "at least 10 characters", "Think step by step"}},
		{"system", System{ThoughtPrompt: DefaultThoughtPrompt, ProjectInstructions: "From AGENTS.md:\nUse tabs."},
			[]string{"Think step by step before deciding on an action.\n\nProject instructions, from the workspace's AGENTS.md files", "From AGENTS.md:\nUse tabs."}},
		{"task", Task{Query: "why?", Outline: []string{"1. read_file {}"}}, []string{"Query: why?", "Plan:\n1. read_file {}"}},
		{"next", Next{Reason: "The last action failed.", PendingStep: 2, PendingTool: "jq", PendingArgs: "{}", PendingWhy: "skipped: invalid_action", Nudge: true, Remaining: 3},
			[]string{"The last action failed.", "Pending plan step 2: jq {} (skipped: invalid_action)", "If you can answer now", "Attempts left: 3"}},
		{"observation", Observation{Step: 3, Tool: "run_command", Text: "out", IsError: true, ExitCode: 2, Stderr: "bad"},
			[]string{"Observation (step 3, run_command) ERROR exit code 2:", "out", "stderr:\nbad"}},
		{"planner_system", Planner{Tools: tools, MaxSteps: 12}, []string{"at most 12 steps", "- read_file [read]"}},
		{"planner_user", Planner{Query: "q", Transcript: []TranscriptEntry{{Step: 1, Tool: "run_command", Args: `{"command":"false"}`, Stdout: "o", Stderr: "e", ExitCode: 1, Error: "exit 1"}}, OldPlan: []string{"1. run_command"}},
			[]string{"Query: q", `- step 1: run_command {"command":"false"} exit code 1, error: exit 1`, "stdout:\n    o", "stderr:\n    e", "Previous plan:\n1. run_command", "Write a new plan"}},
		{"fill", Fill{Step: 2, Tool: "read_file", Known: `{}`, Missing: []string{"path", "limit"}}, []string{"Plan step 2 uses read_file", "Fill in: path, limit."}},
		{"fallback", Fallback{Query: "q", Reason: "Stopping: budget."}, []string{"Stopping: budget.", `query "q"`, `{"answer": "..."}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Render(tc.name, tc.data)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
}

func TestPlannerUserWithoutTranscriptIsJustTheQuery(t *testing.T) {
	if got := Render("planner_user", Planner{Query: "list the files"}); got != "Query: list the files" {
		t.Fatalf("%q", got)
	}
}

func TestSystemWithoutProjectInstructionsSaysNothingOfThem(t *testing.T) {
	if got := Render("system", System{ThoughtPrompt: DefaultThoughtPrompt}); strings.Contains(got, "Project instructions") {
		t.Fatalf("%s", got)
	}
}
