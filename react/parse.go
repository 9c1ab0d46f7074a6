package react

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

type invalidAction struct {
	text   string
	reason string
}

func (e *invalidAction) Error() string { return "invalid action: " + e.reason }

// askModel asks for the next action; the request and the reply are appended
// to the conversation so the next call shares this prefix.
func (r *run) askModel() (Action, llm.Usage, error) {
	e := r.e
	next := prompt.Next{Reason: r.askReason, Remaining: r.st.MaxSteps - r.st.Attempts, Nudge: r.readsInRow >= e.ReadOnlyNudgeAfter}
	if next.Reason == "" {
		next.Reason = "Choose the next action."
	}
	if p := r.pending(); p != nil {
		next.PendingStep = r.st.PlanIndex + 1
		next.PendingTool = p.Tool
		next.PendingArgs = string(argsJSON(p.Args))
		if r.st.PlanSkipReason != "" {
			next.PendingWhy = "skipped: " + r.st.PlanSkipReason
		}
	}
	r.addMsg(llm.RoleUser, prompt.Render("next", next))
	sch := schema.Action(tools.SchemaTools(r.allowedTools()), r.thoughtOptions(), r.plan != nil && e.Planner != nil)
	req, err := r.prepare(llm.KindAction)
	if err != nil {
		return Action{}, llm.Usage{}, err
	}
	if r.overBudget() {
		// A compaction's summary call spent the rest of the budget.
		return Action{}, llm.Usage{}, errBudget
	}
	r.lastPromptTokens = req.tokens
	r.progress("step %d: thinking", r.st.Attempts+1)
	resp, err := r.send(req, sch)
	r.addUsage(resp.Usage)
	if err != nil {
		return Action{}, resp.Usage, err
	}
	r.addMsg(llm.RoleAssistant, resp.Text)
	r.askReason = ""
	act, err := ParseAction([]byte(resp.Text), sch, r.thoughtOptions())
	if err == nil && act.Tool == tools.FinalAnswer && r.answerV != nil {
		// The grammar holds what it can express of the answer schema;
		// the rest (a pattern, a bound) is checked here, and the model
		// tries again.
		if _, aerr := r.checkAnswer(answerArg(act.Args)); aerr != nil {
			err = fmt.Errorf("answer: %v", aerr)
		}
	}
	if err != nil {
		return Action{}, resp.Usage, &invalidAction{text: resp.Text, reason: err.Error()}
	}
	return act, resp.Usage, nil
}

// ParseAction parses a model's action reply: one JSON object valid against
// the action schema sch, with a substantive thought when thoughts are required.
func ParseAction(text []byte, sch json.RawMessage, thought schema.ThoughtOptions) (Action, error) {
	v, err := schema.Compile(sch)
	if err != nil {
		return Action{}, err
	}
	if _, err := v.ValidateJSON(text); err != nil {
		return Action{}, err
	}
	var act Action
	if err := json.Unmarshal(text, &act); err != nil {
		return Action{}, err
	}
	if thought.Required {
		if why := degenerateThought(act.Thought, act.Tool, thought.MinLength); why != "" {
			return Action{}, errors.New(why)
		}
	}
	return act, nil
}

func (r *run) invalid(inv *invalidAction, usage llm.Usage) {
	r.st.Attempts++
	r.st.RetryCount++
	st := StepTrace{Observation: "invalid action: " + inv.reason, Error: inv.reason, ExitCode: ExitCodeNotRun, Source: "model", TokenUsage: usage, SkipReason: SkipInvalidAction}
	st.Action = ToolCall{Args: json.RawMessage(`{}`)}
	if p := r.pending(); p != nil {
		r.st.PlanSkipReason = SkipInvalidAction
		st.PlanStep = r.st.PlanIndex + 1
	}
	r.record(st)
	r.emit(EventInvalidAction, map[string]any{"reply": inv.text, "error": inv.reason})
	r.addMsg(llm.RoleUser, "Your reply was not a valid action: "+inv.reason)
	r.noteRepeat("invalid:" + inv.text)
}

// degenerateThought returns why a thought is not substantive, or "".
func degenerateThought(thought, tool string, minLen int) string {
	t := strings.TrimSpace(thought)
	if t == "" {
		return "thought is required"
	}
	// Length as the schema (and so the grammar) counts it: untrimmed.
	if len([]rune(thought)) < minLen {
		return fmt.Sprintf("thought is shorter than %d characters", minLen)
	}
	norm := strings.Trim(strings.ToLower(strings.Join(strings.Fields(t), " ")), ".!:;, ")
	switch norm {
	case "i will use the tool", "use the tool", "i will use a tool", "i need to use a tool", "thinking",
		"thought", "next step", "the next step", "continue", "let me think", "ok", "okay", "done", "n/a", "none",
		"i will call the tool", "calling the tool", "action":
		return fmt.Sprintf("degenerate thought %q", t)
	}
	if norm == strings.ToLower(tool) || norm == "use "+strings.ToLower(tool) || norm == "i will use "+strings.ToLower(tool) {
		return fmt.Sprintf("degenerate thought %q", t)
	}
	if f := strings.Fields(norm); len(f) > 2 {
		same := true
		for _, w := range f[1:] {
			if w != f[0] {
				same = false
				break
			}
		}
		if same {
			return fmt.Sprintf("degenerate thought %q", t)
		}
	}
	return ""
}
