package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/tools"
)

// Verdict decisions, as recorded in traces.
const (
	DecisionAllow          = "allow"            // policy rule or --yes (dry run: would run)
	DecisionDeny           = "deny"             // read-only, deny rule, or unattended without approval
	DecisionAsk            = "ask"              // dry run only: would prompt
	DecisionApproved       = "approved"         // the user said yes
	DecisionRejected       = "rejected"         // the user said no, or gave no answer
	DecisionApprovedAlways = "approved_always"  // the user said yes and added an allow rule
	DecisionHookApproved   = "approved_by_hook" // a PreToolUse hook said yes where a person would be asked
)

// ReasonUnattended is the observation the model gets when a write/exec
// action is denied because nobody can approve it.
const ReasonUnattended = "denied by policy: write/exec actions need --yes or an allow rule when running unattended"

// GateOptions configures NewGate.
type GateOptions struct {
	Policy     *Policy // nil: no rules
	PolicyPath string  // where "always" answers append rules; empty: this run only
	Yes        bool    // approve whatever no deny rule forbids
	ReadOnly   bool    // deny every write/exec action
	DryRun     bool    // decide but never run or prompt: every write/exec verdict has Allowed=false
	Prompter   Prompter
	// Approver, when set, decides what the gate would otherwise ask the
	// Prompter about or deny as unattended; it wins over the Prompter.
	Approver Approver
	// Redactor, when set, hides secrets in what the prompt and the
	// approver are shown.
	Redactor *redact.Redactor
	Log      *slog.Logger
	// PauseUnattended: a call that would be denied as unattended gets
	// tools.DecisionNeedsInput instead, and the run pauses for an answer
	// (--on-approval pause).
	PauseUnattended bool
}

type policyGate struct {
	o   GateOptions
	log *slog.Logger

	// mu guards pol only: it is never held while a person or an approver
	// answers, so one run waiting for an answer does not hold up the
	// others sharing the gate (tact batch --parallel).
	mu  sync.Mutex
	pol Policy // the loaded rules plus those added by "always" answers this run
	// askMu is held for the whole interactive phase of one Check, so the
	// questions of two runs never interleave on one terminal.
	askMu sync.Mutex
}

// NewGate returns the Gate that applies --read-only, the policy file, --yes
// and approval (the Approver, else the Prompter), in that order. With
// neither it never blocks: what is not allowed is denied.
func NewGate(o GateOptions) tools.Gate {
	g := &policyGate{o: o, log: o.Log}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Policy != nil {
		g.pol.Allow = append([]Rule(nil), o.Policy.Allow...)
		g.pol.Deny = append([]Rule(nil), o.Policy.Deny...)
	}
	return g
}

// Check decides every call of a step. Calls that need a person are collected
// first, shown together, then asked one by one (or put to the Approver one
// by one); no verdict is returned before all answers are in.
func (g *policyGate) Check(ctx context.Context, env *tools.Env, calls []tools.Call) []tools.Verdict {
	verdicts := make([]tools.Verdict, len(calls))
	var pending []int
	g.mu.Lock()
	for i, c := range calls {
		v, ask := g.decide(env, c)
		switch {
		case !ask:
			verdicts[i] = v
		case g.o.DryRun:
			verdicts[i] = tools.Verdict{Decision: DecisionAsk, Reason: "dry run: not run; would ask for approval"}
		default:
			pending = append(pending, i)
		}
	}
	g.mu.Unlock()
	switch {
	case len(pending) == 0:
	case g.o.Approver != nil:
		g.approve(ctx, env, calls, pending, verdicts)
	default:
		g.askMu.Lock()
		g.ask(ctx, env, calls, pending, verdicts)
		g.askMu.Unlock()
	}
	for i, c := range calls {
		g.log.Debug("approval", "tool", toolName(c), "decision", verdicts[i].Decision, "allowed", verdicts[i].Allowed, "reason", verdicts[i].Reason)
	}
	return verdicts
}

func toolName(c tools.Call) string {
	if c.Tool == nil {
		return ""
	}
	return c.Tool.Name()
}

// decide applies everything but the prompt; ask is true when only a person
// can decide.
func (g *policyGate) decide(env *tools.Env, c tools.Call) (v tools.Verdict, ask bool) {
	if c.Tool == nil {
		return tools.Verdict{Decision: DecisionDeny, Reason: "denied by policy: unknown tool"}, false
	}
	class := c.Tool.Class()
	if class == tools.ClassRead {
		// Read tools never ask, in every mode; dry runs run them too.
		return tools.Verdict{Allowed: true, Decision: DecisionAllow, Reason: "read tool"}, false
	}
	dry := func(v tools.Verdict) tools.Verdict {
		if !g.o.DryRun {
			return v
		}
		what := "would be allowed"
		if v.Decision == DecisionDeny {
			what = "would be denied"
		}
		return tools.Verdict{Decision: v.Decision, Reason: "dry run: not run; " + what + " (" + v.Reason + ")"}
	}
	if g.o.ReadOnly {
		return dry(tools.Verdict{Decision: DecisionDeny, Reason: fmt.Sprintf("denied by policy: read-only mode allows read tools only (%s is a %s tool)", c.Tool.Name(), class)}), false
	}
	allow, deny := g.pol.Match(env, c)
	if deny != nil {
		return dry(tools.Verdict{Decision: DecisionDeny, Reason: "denied by policy: deny rule " + deny.String() + denyNote(env, c, deny)}), false
	}
	if allow != nil {
		return dry(tools.Verdict{Allowed: true, Decision: DecisionAllow, Reason: "allowed by rule " + allow.String()}), false
	}
	if g.o.Yes {
		return dry(tools.Verdict{Allowed: true, Decision: DecisionAllow, Reason: "allowed by --yes"}), false
	}
	if c.HookApproved != "" {
		// A PreToolUse hook said yes where a person would be asked.
		return dry(tools.Verdict{Allowed: true, Decision: DecisionHookApproved, Reason: "approved by hook: " + c.HookApproved}), false
	}
	if g.o.Prompter != nil || g.o.Approver != nil {
		return tools.Verdict{}, true
	}
	if g.o.PauseUnattended && !g.o.DryRun {
		return tools.Verdict{Decision: tools.DecisionNeedsInput, Reason: g.o.Redactor.Redact(DescribeCall(env, c)) + "Run this?"}, false
	}
	reason := ReasonUnattended
	if why := unanalysable(env, c); why != "" {
		// Say why, so the model can write the command in a form allow
		// rules can approve.
		reason += " (tact cannot fully analyse this command, so no allow rule can approve it: " + why + ")"
	} else if missing := g.pol.uncovered(env, c); len(missing) > 0 {
		// Name what the rules leave out (sort and head of du | sort | head).
		reason += " (no allow rule covers " + strings.Join(missing, ", ") + ")"
	}
	return dry(tools.Verdict{Decision: DecisionDeny, Reason: reason}), false
}

// ask runs the interactive phase for the calls at pending.
func (g *policyGate) ask(ctx context.Context, env *tools.Env, calls []tools.Call, pending []int, verdicts []tools.Verdict) {
	redact := g.o.Redactor.Redact
	var overview string
	if len(pending) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "This step has %d actions that need your approval:\n", len(pending))
		for k, i := range pending {
			fmt.Fprintf(&b, "\n[%d/%d] %s", k+1, len(pending), DescribeCall(env, calls[i]))
		}
		overview = redact(strings.TrimRight(b.String(), "\n"))
		if d, ok := g.o.Prompter.(Displayer); ok {
			if err := d.Display(overview); err == nil {
				overview = ""
			}
		}
	}
	var stop error // once nobody answers, stop asking
	for k, i := range pending {
		c := calls[i]
		// An "always" answer earlier in this step (or another run's since
		// decide) may already cover this call.
		if v, ok := g.allowedNow(env, c); ok {
			verdicts[i] = v
			continue
		}
		if stop != nil {
			verdicts[i] = tools.Verdict{Decision: DecisionRejected, Reason: "denied by user: no answer at the approval prompt (" + stop.Error() + ")"}
			continue
		}
		rule, noRule := g.alwaysRule(env, c)
		var summary string
		if len(pending) > 1 {
			summary = fmt.Sprintf("\n[%d/%d] %s\n", k+1, len(pending), shortCall(env, c))
			if k == 0 && overview != "" {
				summary = overview + "\n" + summary
			}
		} else {
			summary = DescribeCall(env, c)
		}
		options := []string{"yes", "always (don't ask again for " + redact(rule.String()) + ")", "no"}
		if noRule != nil {
			summary += "  (no \"always\": " + noRule.Error() + ")\n"
			options = []string{"yes", "no"}
		}
		summary = redact(summary) + "Run this?"
		ans, err := g.o.Prompter.Ask(ctx, summary, options)
		switch {
		case err != nil:
			stop = err
			verdicts[i] = tools.Verdict{Decision: DecisionRejected, Reason: "denied by user: no answer at the approval prompt (" + err.Error() + ")"}
		case ans == "yes":
			verdicts[i] = tools.Verdict{Allowed: true, Decision: DecisionApproved, Reason: "approved at the prompt"}
		case ans == "always":
			verdicts[i] = tools.Verdict{Allowed: true, Decision: DecisionApprovedAlways, Reason: "approved at the prompt; added allow rule " + rule.String()}
			g.addRule(rule, "added at the approval prompt")
		default:
			verdicts[i] = tools.Verdict{Decision: DecisionRejected, Reason: "denied by user: rejected at the approval prompt"}
		}
	}
}

// approve asks the Approver about the calls at pending, one by one.
func (g *policyGate) approve(ctx context.Context, env *tools.Env, calls []tools.Call, pending []int, verdicts []tools.Verdict) {
	redact := g.o.Redactor.Redact
	for _, i := range pending {
		c := calls[i]
		if v, ok := g.allowedNow(env, c); ok {
			verdicts[i] = v
			continue
		}
		rule, noRule := g.alwaysRule(env, c)
		var ans string
		err := ctx.Err()
		if err == nil {
			ans, err = g.o.Approver.Approve(ctx, g.request(ctx, env, c, rule, noRule))
		}
		switch {
		case err != nil:
			verdicts[i] = tools.Verdict{Decision: DecisionRejected, Reason: "denied by --approve-cmd: " + redact(err.Error())}
		case ans == AnswerYes:
			verdicts[i] = tools.Verdict{Allowed: true, Decision: DecisionApproved, Reason: "approved by --approve-cmd"}
		case ans == AnswerAlways && noRule != nil:
			verdicts[i] = tools.Verdict{Allowed: true, Decision: DecisionApproved, Reason: "approved by --approve-cmd; \"always\" added no rule: " + redact(noRule.Error())}
		case ans == AnswerAlways:
			verdicts[i] = tools.Verdict{Allowed: true, Decision: DecisionApprovedAlways, Reason: "approved by --approve-cmd; added allow rule " + rule.String()}
			g.addRule(rule, "added by --approve-cmd")
		case ans == AnswerNo:
			verdicts[i] = tools.Verdict{Decision: DecisionRejected, Reason: "denied by --approve-cmd: the approver said no"}
		default:
			verdicts[i] = tools.Verdict{Decision: DecisionRejected, Reason: fmt.Sprintf("denied by --approve-cmd: unknown answer %q", redact(text.Clip(ans, 100)))}
		}
	}
}

// allowedNow is the allow verdict for c when a rule covers it now.
func (g *policyGate) allowedNow(env *tools.Env, c tools.Call) (tools.Verdict, bool) {
	g.mu.Lock()
	allow, _ := g.pol.Match(env, c)
	g.mu.Unlock()
	if allow == nil {
		return tools.Verdict{}, false
	}
	return tools.Verdict{Allowed: true, Decision: DecisionAllow, Reason: "allowed by rule " + allow.String()}, true
}

// addRule remembers rule for the rest of the run and appends it to the policy
// file, with a comment saying where it came from (how) and when. A failure
// to save does not undo the approval already given.
func (g *policyGate) addRule(rule Rule, how string) {
	rule.Comment = how + " " + time.Now().UTC().Format(time.RFC3339)
	g.mu.Lock()
	g.pol.Allow = append(g.pol.Allow, rule)
	g.mu.Unlock()
	if g.o.PolicyPath == "" {
		return
	}
	if err := AppendRule(g.o.PolicyPath, rule); err != nil {
		g.log.Warn("could not save approval rule; it applies to this run only", "rule", rule.String(), "err", err)
	}
}

// alwaysRule is the rule an "always" answer saves for c, or why none is
// offered. A rule is never saved with a secret in it (the policy file is
// plain text on disk): one that would hold a secret is narrowed to the words
// (or directories) before it when that still covers the call, and the
// prompt shows the narrowed rule; otherwise "always" is not offered.
func (g *policyGate) alwaysRule(env *tools.Env, c tools.Call) (Rule, error) {
	rule, err := AlwaysRule(env, c)
	if err != nil {
		return Rule{}, err
	}
	red := g.o.Redactor
	if !ruleHasSecret(red, rule) {
		return rule, nil
	}
	if n, ok := narrowRule(env, c, rule, red); ok {
		return n, nil
	}
	return Rule{}, errors.New("a rule for it would contain a secret, and tact never writes secrets to the policy file")
}

func ruleHasSecret(red *redact.Redactor, r Rule) bool {
	return red.Redact(r.Command) != r.Command || red.Redact(r.Path) != r.Path
}

// narrowRule shortens a rule holding a secret to its longest prefix (whole
// words of a command, whole directories of a path) that holds none and still
// covers the call; a command keeps at least its program, a path at least one
// directory.
func narrowRule(env *tools.Env, c tools.Call, r Rule, red *redact.Redactor) (Rule, bool) {
	covers := func(cand Rule) bool {
		if ruleHasSecret(red, cand) || cand.validate() != nil {
			return false
		}
		allow, _ := (&Policy{Allow: []Rule{cand}}).Match(env, c)
		return allow != nil
	}
	switch {
	case r.Command != "":
		words := ruleWords(r.Command)
		for k := len(words) - 1; k >= 1; k-- {
			// An exact rule cut short covers nothing: no such rule.
			cand := Rule{Tool: r.Tool, Command: shellquote.Join(words[:k]...), Exact: r.Exact}
			if covers(cand) {
				return cand, true
			}
		}
	case r.Path != "":
		segs := strings.Split(strings.TrimSuffix(r.Path, "/**"), "/")
		for k := len(segs) - 1; k >= 1; k-- {
			cand := Rule{Tool: r.Tool, Path: strings.Join(segs[:k], "/") + "/**"}
			if covers(cand) {
				return cand, true
			}
		}
	}
	return Rule{}, false
}

// escapeGlob quotes glob metacharacters so a literal name matches itself.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxShownString is how much of a long argument string a prompt shows.
const maxShownString = 200

// DescribeCall is the multi-line description an approval prompt (or a dry
// run) shows: tool and class, what it will do (the tool's Describer, or the
// argv, working directory and path), and the arguments as indented JSON
// with long strings shortened.
func DescribeCall(env *tools.Env, c tools.Call) string {
	var b strings.Builder
	if c.Tool == nil {
		b.WriteString("unknown tool\n")
	} else {
		fmt.Fprintf(&b, "%s (%s)\n", c.Tool.Name(), c.Tool.Class())
	}
	if d, ok := c.Tool.(tools.Describer); ok {
		if s := strings.TrimRight(d.Describe(env, c.Args), "\n"); s != "" {
			b.WriteString(indent(s, "  ") + "\n")
		}
	} else {
		f := factsOf(env, c)
		if f.hasCmd {
			if f.argv != nil {
				argv, _ := json.Marshal(f.argv)
				fmt.Fprintf(&b, "  argv: %s\n", argv)
			}
			fmt.Fprintf(&b, "  working directory: %s\n", callDir(env, f))
		}
		if f.hasPath {
			fmt.Fprintf(&b, "  path: %s\n", f.path)
		}
	}
	b.WriteString("  arguments: " + strings.TrimPrefix(indent(shownArgs(redactArgs(env, c.Args)), "  "), "  ") + "\n")
	return b.String()
}

// callDir is the directory a command call runs in: absolute inside the
// workspace when there is one.
func callDir(env *tools.Env, f callFacts) string {
	dir := "."
	if f.workdir != "" {
		dir = f.workdir
	}
	if env != nil && env.Workspace != "" {
		dir, _ = workspaceRel(env, dir)
		dir = path.Join(env.Workspace, dir)
	}
	return dir
}

// shortCall is the one-line recap asked after the overview.
func shortCall(env *tools.Env, c tools.Call) string {
	name := toolName(c)
	f := factsOf(env, c)
	switch {
	case f.argv != nil:
		return name + ": " + shellquote.Join(f.argv...)
	case f.hasPath:
		return name + ": " + f.path
	}
	return name
}

// shownArgs pretty-prints arguments, cutting long strings to a prefix and
// their size so a whole file's content does not flood the terminal.
func shownArgs(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	short, err := redact.RewriteJSONStrings(args, func(s string) string {
		if len(s) <= maxShownString {
			return s
		}
		cut := maxShownString
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
	})
	if err != nil {
		s := string(args)
		if len(s) > maxShownString {
			s = s[:maxShownString] + "…"
		}
		return fmt.Sprintf("%q (not valid JSON)", s)
	}
	var out bytes.Buffer
	if json.Indent(&out, short, "", "  ") != nil {
		return string(short)
	}
	return out.String()
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func indent(s, prefix string) string { return text.Indent(s, prefix) }

// redactArgs hides secrets in a call's arguments before a prompt shortens
// long strings: shortening first could cut a secret into a part that
// redaction no longer recognises.
func redactArgs(env *tools.Env, args json.RawMessage) json.RawMessage {
	if env == nil {
		return args
	}
	return env.Redactor.RedactJSON(args)
}
