package policy

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tactcli/tact/tools"
)

// ApproveAlways approves c as an "always" answer at the prompt would: the
// narrowed allow rule is added (and written to the policy file). A deny
// rule still wins; a call no rule can cover is approved once.
func (g *policyGate) ApproveAlways(env *tools.Env, c tools.Call) tools.Verdict {
	g.mu.Lock()
	_, deny := g.pol.Match(env, c)
	g.mu.Unlock()
	if deny != nil || g.o.ReadOnly {
		v, _ := g.decide(env, c)
		return v
	}
	rule, err := g.alwaysRule(env, c)
	if err != nil {
		return tools.Verdict{Allowed: true, Decision: DecisionApproved, Reason: "approved by tact answer (no \"always\": " + err.Error() + ")"}
	}
	g.addRule(rule, "added by tact answer --always")
	return tools.Verdict{Allowed: true, Decision: DecisionApprovedAlways, Reason: "approved by tact answer; added allow rule " + rule.String()}
}

// AskText writes question and reads one line of free text: ask_user's
// answer at a terminal.
func (p *LinePrompter) AskText(ctx context.Context, question string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.out, sanitizeTerminal(question)+"\n> "); err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	line, err := p.readLine(ctx)
	if err != nil {
		_, _ = io.WriteString(p.out, "\n")
		return "", err
	}
	return strings.TrimSpace(line), nil
}
