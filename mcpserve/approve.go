package mcpserve

import (
	"context"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/policy"
)

// Approval over MCP: a write or exec call that only a person may approve
// is put to the client as a form elicitation (the question with the
// command or diff, and the answers yes, always, no). A client that does
// not support elicitation cannot be asked, so its session's gate has no
// prompter and such calls are denied at once with the reason.

type sessionKey struct{}

// withSession makes ss the session a prompter asks (a tact_run's actions
// are asked of the session that called it).
func withSession(ctx context.Context, ss *sdk.ServerSession) context.Context {
	return context.WithValue(ctx, sessionKey{}, ss)
}

// canElicit reports whether ss's client said it supports elicitation.
func canElicit(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// errNoElicitation is the reason a call is denied when the client cannot
// be asked.
var errNoElicitation = errors.New("the MCP client does not support elicitation, so nobody can approve it; add an allow rule to the policy file or start tact mcp serve with --yes")

// errNoQuestion is ask_user's observation when the client cannot be
// asked.
var errNoQuestion = errors.New("the MCP client does not support elicitation, so nobody can answer the question; go on without it, or say in the answer what is missing")

// elicitPrompter asks one session's client.
type elicitPrompter struct{ ss *sdk.ServerSession }

// Ask elicits one of options' first words; a decline or cancel is "no".
func (p elicitPrompter) Ask(ctx context.Context, summary string, options []string) (string, error) {
	words := make([]any, 0, len(options))
	titles := make([]any, 0, len(options))
	for _, o := range options {
		w, _, _ := strings.Cut(o, " ")
		words = append(words, w)
		titles = append(titles, policy.SanitizeTerminal(o))
	}
	res, err := p.ss.Elicit(ctx, &sdk.ElicitParams{
		// The client may show it on a terminal or a page: control and
		// bidi characters (a file name that reorders the command shown)
		// as \uXXXX, as the terminal's question shows them.
		Message: policy.SanitizeTerminal(summary),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"answer": map[string]any{"type": "string", "title": "Run this?", "enum": words, "enumNames": titles},
			},
			"required": []any{"answer"},
		},
	})
	if err != nil {
		return "", err
	}
	if res.Action != "accept" {
		return "no", nil
	}
	ans, _ := res.Content["answer"].(string)
	for _, w := range words {
		if ans == w {
			return ans, nil
		}
	}
	return "no", nil
}

// AskChoice elicits one of options, taken whole (ask_user's options).
func (p elicitPrompter) AskChoice(ctx context.Context, question string, options []string) (string, error) {
	return p.askFor(ctx, question, choice("Answer", options, options))
}

// AskText elicits a free-text answer (ask_user without options).
func (p elicitPrompter) AskText(ctx context.Context, question string) (string, error) {
	return p.askFor(ctx, question, map[string]any{"type": "string", "title": "Answer", "minLength": 1})
}

// askFor elicits the one property answer; a decline or cancel is no
// answer.
func (p elicitPrompter) askFor(ctx context.Context, question string, prop map[string]any) (string, error) {
	res, err := p.ss.Elicit(ctx, &sdk.ElicitParams{
		Message: policy.SanitizeTerminal(question),
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"answer": prop},
			"required":   []any{"answer"},
		},
	})
	if err != nil {
		return "", err
	}
	if res.Action != "accept" {
		return "", errors.New("the client declined to answer")
	}
	ans, ok := res.Content["answer"].(string)
	if !ok || strings.TrimSpace(ans) == "" {
		return "", errors.New("the client's answer is empty")
	}
	return ans, nil
}

// runPrompter is the runtime's prompter for tact_run and tact_exec: it
// asks the session the run's context names.
type runPrompter struct{}

func (runPrompter) Ask(ctx context.Context, summary string, options []string) (string, error) {
	ss, _ := ctx.Value(sessionKey{}).(*sdk.ServerSession)
	if !canElicit(ss) {
		return "", errNoElicitation
	}
	return elicitPrompter{ss}.Ask(ctx, summary, options)
}

func (runPrompter) AskChoice(ctx context.Context, question string, options []string) (string, error) {
	ss, _ := ctx.Value(sessionKey{}).(*sdk.ServerSession)
	if !canElicit(ss) {
		return "", errNoQuestion
	}
	return elicitPrompter{ss}.AskChoice(ctx, question, options)
}

func (runPrompter) AskText(ctx context.Context, question string) (string, error) {
	ss, _ := ctx.Value(sessionKey{}).(*sdk.ServerSession)
	if !canElicit(ss) {
		return "", errNoQuestion
	}
	return elicitPrompter{ss}.AskText(ctx, question)
}

// Prompter is the prompter to open the runtime with, so that the actions
// of tact_run and tact_exec are asked of the client that called them;
// nil with --no-input, which asks nobody.
func Prompter(noInput bool) policy.Prompter {
	if noInput {
		return nil
	}
	return runPrompter{}
}
