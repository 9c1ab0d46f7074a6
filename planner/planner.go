package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// Planner asks a model for a plan.
type Planner struct {
	Backend   llm.Backend
	Registry  *tools.Registry
	Tools     []string // tools the plan may use; final_answer is always added
	Thought   schema.ThoughtOptions
	Sampling  llm.Sampling
	MaxTokens int
	MaxSteps  int            // 0: no limit in the schema
	Info      map[string]any // recorded in the plan header (backend, model)
	// ContextSize is the context window in tokens; 0 asks the backend
	// (llm.ContextSizer), and none known means no limit.
	ContextSize int
	// MinReplyTokens is the room a plan reply needs at least; with less
	// left the prompt does not fit. 0: MaxTokens.
	MinReplyTokens int
	// Conversation is the earlier turns of a conversation (tact chat),
	// rendered, oldest first: the planner sees them before the query so a
	// follow-up ("now open the second one") can be planned.
	Conversation []string
	// Params makes the plan a template (tact plan --param-name): the
	// planner is asked for {{NAME}} where a parameter's value belongs, and
	// the plan gets {"$param": NAME} there and the header declares them.
	Params []string
	// ProjectInstructions (the workspace's AGENTS.md files) end the system
	// prompt, as they end the executor's: house rules shape the plan too.
	ProjectInstructions string
	// Files name the user's context files (tact run -f), which the
	// executor shows: the plan need not read them.
	Files []string
}

// TranscriptEntry is one executed or skipped action, given to the planner on a replan.
type TranscriptEntry struct {
	Step     int             `json:"step"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Stdout   string          `json:"stdout"`
	Stderr   string          `json:"stderr"`
	ExitCode int             `json:"exit_code"`
	Error    string          `json:"error,omitempty"`
	Skip     string          `json:"skip_reason,omitempty"`
}

// InvalidReplyError is a model reply that is not a valid plan.
type InvalidReplyError struct {
	Text string
	Err  error
}

func (e *InvalidReplyError) Error() string { return "invalid plan from model: " + e.Err.Error() }
func (e *InvalidReplyError) Unwrap() error { return e.Err }

func (p *Planner) tools() []tools.Tool {
	var out []tools.Tool
	seen := map[string]bool{}
	for _, n := range append(append([]string(nil), p.Tools...), tools.FinalAnswer) {
		if t, ok := p.Registry.Get(n); ok && !seen[n] {
			seen[n] = true
			out = append(out, t)
		}
	}
	return out
}

// Plan asks the model for a plan. With a transcript (a replan) the model sees
// what ran so far and old is the plan being replaced (may be nil).
func (p *Planner) Plan(ctx context.Context, query string, transcript []TranscriptEntry, old *Plan) (*Plan, llm.Usage, error) {
	offered := p.tools()
	data := prompt.Planner{Tools: tools.PromptTools(offered), Query: query, MaxSteps: p.MaxSteps, Conversation: p.Conversation, Params: p.Params,
		ProjectInstructions: p.ProjectInstructions, Files: p.Files}
	for _, t := range transcript {
		data.Transcript = append(data.Transcript, prompt.TranscriptEntry{
			Step: t.Step, Tool: t.Tool, Args: string(t.Args), Stdout: t.Stdout, Stderr: t.Stderr,
			ExitCode: t.ExitCode, Error: t.Error, Skip: t.Skip,
		})
	}
	if old != nil {
		data.OldPlan = old.Outline()
	}
	sch := schema.Plan(tools.SchemaTools(offered), p.Thought, p.MaxSteps)
	msgs, maxTokens, err := p.fit(data)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	req := llm.Request{
		Kind:      llm.KindPlan,
		Messages:  msgs,
		Schema:    sch,
		Sampling:  p.Sampling,
		MaxTokens: maxTokens,
		// The system message: instructions and tools, no query (that is in
		// the user message); a backend may keep its KV state on disk.
		PersistableMessages: 1,
	}
	resp, err := p.Backend.Complete(ctx, req)
	if err != nil {
		return nil, resp.Usage, fmt.Errorf("planner: %w", err)
	}
	plan, err := p.parseReply(resp.Text, sch)
	if err != nil {
		return nil, resp.Usage, err
	}
	plan.Header = &Header{Type: "plan", Query: query, Created: time.Now().UTC().Truncate(time.Second), Planner: p.Info}
	if len(p.Params) > 0 {
		if err := templatize(plan, p.Params, p.Registry); err != nil {
			return nil, resp.Usage, &InvalidReplyError{Text: resp.Text, Err: err}
		}
	}
	return plan, resp.Usage, nil
}

// SystemMessage is the planning prompt's system message: instructions and
// tools, the same for every query, so a backend may ready it ahead of the
// calls (llm.Warmer).
func (p *Planner) SystemMessage() llm.Message {
	return plannerMessages(prompt.Planner{Tools: tools.PromptTools(p.tools()), MaxSteps: p.MaxSteps, Conversation: p.Conversation,
		ProjectInstructions: p.ProjectInstructions})[0]
}

func plannerMessages(data prompt.Planner) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: prompt.Render("planner_system", data)},
		{Role: llm.RoleUser, Content: prompt.Render("planner_user", data)},
	}
}

// fit makes the planning prompt fit in the context window with room for
// the reply, and returns it with the reply's token limit. A replan's
// transcript is shortened as needed: older entries lose their output
// first, then whole entries are left out (the prompt says how many). A
// prompt that cannot fit even without a transcript is a
// *llm.ContextTooSmallError.
func (p *Planner) fit(data prompt.Planner) ([]llm.Message, int, error) {
	msgs := plannerMessages(data)
	window := p.ContextSize
	if window <= 0 {
		window = llm.ContextSizeOf(p.Backend)
	}
	if window <= 0 {
		return msgs, p.MaxTokens, nil
	}
	minReply := p.MinReplyTokens
	if minReply <= 0 {
		minReply = p.MaxTokens
	}
	if minReply <= 0 {
		minReply = DefaultReplyRoom
	}
	count := llm.CounterFor(p.Backend)
	n := count.Prompt(msgs)
	// The oldest earlier turns of a conversation go first, one by one.
	for n+minReply > window && len(data.Conversation) > 0 {
		data.Conversation = data.Conversation[1:]
		data.ConversationOmitted++
		msgs = plannerMessages(data)
		n = count.Prompt(msgs)
	}
	for step := 0; n+minReply > window; step++ {
		shorter, ok := shortenTranscript(data, step)
		if !ok {
			what := "the planning prompt (system prompt, tools and query)"
			if len(data.Transcript) > 0 {
				what = "the replanning prompt (system prompt, tools, query and plan)"
			}
			return nil, 0, &llm.ContextTooSmallError{What: what, Prompt: n, Reply: minReply, Context: window}
		}
		data = shorter
		msgs = plannerMessages(data)
		n = count.Prompt(msgs)
	}
	maxTokens := window - n
	if p.MaxTokens > 0 {
		maxTokens = min(maxTokens, p.MaxTokens)
	}
	return msgs, maxTokens, nil
}

// DefaultReplyRoom is the room kept for a reply when --max-tokens is 0
// (no limit): prompts are fitted so that at least this much is left.
const DefaultReplyRoom = 512

// shortenTranscript returns data with a shorter transcript, step by step:
// first the older half of the entries keep only their first output line,
// then all but the last entry do, then the oldest entries are dropped one
// by one (down to none; the old plan goes last). false: nothing left to cut.
func shortenTranscript(data prompt.Planner, step int) (prompt.Planner, bool) {
	tr := append([]prompt.TranscriptEntry(nil), data.Transcript...)
	brief := func(upto int) {
		for i := range upto {
			tr[i].Stdout, tr[i].Stderr = firstLineNote(tr[i].Stdout), firstLineNote(tr[i].Stderr)
		}
	}
	switch {
	case step == 0 && len(tr) > 1:
		brief(len(tr) / 2)
	case step <= 1 && len(tr) > 0:
		brief(len(tr) - 1)
	case len(tr) > 0:
		brief(len(tr))
		data.Omitted++
		tr = tr[1:]
	case len(data.OldPlan) > 0:
		data.OldPlan = nil
	default:
		return data, false
	}
	data.Transcript = tr
	return data, true
}

// firstLineNote keeps the first line of s, saying that the rest was left out.
func firstLineNote(s string) string {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s
	}
	return s[:i] + " [rest left out to fit the context window]"
}

func (p *Planner) parseReply(text string, sch json.RawMessage) (*Plan, error) {
	v, err := schema.Compile(sch)
	if err != nil {
		return nil, err
	}
	if _, err := v.ValidateJSON([]byte(text)); err != nil {
		return nil, &InvalidReplyError{Text: text, Err: err}
	}
	var reply struct {
		Plan []Step `json:"plan"`
	}
	if err := json.Unmarshal([]byte(text), &reply); err != nil {
		return nil, &InvalidReplyError{Text: text, Err: err}
	}
	plan := &Plan{Source: "planner"}
	for i := range reply.Plan {
		s := reply.Plan[i]
		if err := CheckStep(&s, p.Registry); err != nil {
			return nil, &InvalidReplyError{Text: text, Err: fmt.Errorf("step %d: %v", i+1, err)}
		}
		plan.Steps = append(plan.Steps, s)
	}
	return plan, nil
}
