// Package prompt renders tact's prompts from embedded text/templates. The
// action conversation is laid out append-only (system prompt, tool list and
// query first, then one message per event) so that an inference backend with
// a KV cache re-evaluates only what was added since the previous call.
package prompt

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/tactcli/tact/internal/text"
)

//go:embed templates/*.tmpl
var files embed.FS

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"inc":    func(i int) int { return i + 1 },
	"indent": func(n int, s string) string { return indentLines(n, s) },
	"trim":   strings.TrimSpace,
}).ParseFS(files, "templates/*.tmpl"))

// DefaultThoughtPrompt is the PRD's thought prompt; --thought-prompt replaces it.
const DefaultThoughtPrompt = `Based on the current state of the task:
- What do I know so far?
- What do I still need to find out or accomplish?
- What is the most logical next step?
- Which tool or action would best accomplish this step?

Think step by step before deciding on an action.`

// Tool describes a tool to the model.
type Tool struct {
	Name        string
	Class       string
	Description string
	Schema      string // compact JSON
}

// System is the data of the executor's system prompt.
type System struct {
	Tools          []Tool
	ThoughtPrompt  string
	RequireThought bool
	MinThought     int
	AllowReplan    bool
	// ProjectInstructions are the workspace's AGENTS.md files, joined
	// (internal/instructions); "" when none or turned off.
	ProjectInstructions string
}

// Task is the first user message: the query and the plan outline.
type Task struct {
	Query   string
	Outline []string // "1. read_file: thought" lines; empty in free mode
	Files   []TaskFile
	// HookContext is what the user's RunStart hooks said (docs/hooks.md).
	HookContext string
}

// TaskFile is a context file the user gave (tact run -f), already cut.
type TaskFile struct {
	Name string
	Text string
}

// Next asks for the next action.
type Next struct {
	Reason      string // why the model is asked (failed step, skipped step, plan used up, free mode)
	PendingStep int    // 1-based; 0 when none
	PendingTool string
	PendingArgs string
	PendingWhy  string
	Nudge       bool
	Remaining   int // attempts left
}

// Observation reports one step's result.
type Observation struct {
	Step     int
	Tool     string
	Text     string
	IsError  bool
	ExitCode int
	Stderr   string
}

// Planner is the data of the planner prompts.
type Planner struct {
	Tools      []Tool
	Query      string
	MaxSteps   int
	Transcript []TranscriptEntry // empty on the first plan
	Omitted    int               // earlier transcript entries left out to fit the context
	OldPlan    []string
	// Conversation is the earlier turns of a conversation (tact chat), each
	// rendered; ConversationOmitted counts older ones left out to fit.
	Conversation        []string
	ConversationOmitted int
	// Params names the parameters of a plan made as a template (tact plan
	// --param-name): the planner writes {{NAME}} where a value belongs.
	Params []string
	// ProjectInstructions end the planner's system prompt, as the
	// executor's (the workspace's AGENTS.md files).
	ProjectInstructions string
	// Files name the user's context files (tact run -f): their content is
	// the executor's to show; the planner learns they exist.
	Files []string
}

// TranscriptEntry is one executed (or skipped) action, given to the planner on a replan.
type TranscriptEntry struct {
	Step     int
	Tool     string
	Args     string
	Stdout   string
	Stderr   string
	ExitCode int
	Error    string
	Skip     string
}

// Fill asks for the missing arguments of a planned step.
type Fill struct {
	Step    int
	Tool    string
	Thought string
	Known   string // JSON of the arguments already fixed
	Missing []string
}

// Fallback asks for a final answer from what was observed.
type Fallback struct {
	Query  string
	Reason string
}

// CompactRequest asks the model to summarize the steps above it.
type CompactRequest struct {
	Words int // a length hint; 0: none
}

// CompactNote replaces compacted steps in the conversation.
type CompactNote struct {
	First, Last int    // iterations covered
	Method      string // how the summary was made
	Summary     string
}

// EarlierTurn is one finished turn of a conversation (tact chat), shown to
// the model before a later turn's query.
type EarlierTurn struct {
	N       int // the turn's number, from 1
	Query   string
	Actions []EarlierAction
	Answer  string
	Note    string // how the turn ended when it did not succeed
}

// EarlierAction is one action of an earlier turn with a short observation.
type EarlierAction struct {
	Call    string // tool and arguments
	Outcome string // "ok", "failed (exit code 1): ...", "skipped ..."
	Output  string // the observation's first lines, with a cut note
}

// EarlierSummary stands for compacted earlier turns.
type EarlierSummary struct {
	First, Last int
	Summary     string
}

// Render executes the named template ("system", "task", "next",
// "observation", "planner_system", "planner_user", "fill", "fallback",
// "compact_request", "compact_note", "earlier_turn", "earlier_summary").
func Render(name string, data any) string {
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name, data); err != nil {
		// Templates are embedded and tested; a failure is a programming error.
		panic(fmt.Sprintf("prompt %s: %v", name, err))
	}
	return strings.TrimSpace(b.String())
}

func indentLines(n int, s string) string { return text.Indent(s, strings.Repeat(" ", n)) }
