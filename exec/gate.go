package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/kballard/go-shellquote"
)

// Verdict decisions, as recorded in traces.
const (
	DecisionAllow          = "allow"           // policy rule or --yes (dry run: would run)
	DecisionDeny           = "deny"            // read-only, deny rule, or unattended without approval
	DecisionAsk            = "ask"             // dry run only: would prompt
	DecisionApproved       = "approved"        // the user said yes
	DecisionRejected       = "rejected"        // the user said no, or gave no answer
	DecisionApprovedAlways = "approved_always" // the user said yes and added an allow rule
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
	// Redactor, when set, hides secrets in what the prompt shows.
	Redactor *Redactor
	Log      *slog.Logger
}

type policyGate struct {
	o   GateOptions
	log *slog.Logger

	mu  sync.Mutex
	pol Policy // the loaded rules plus those added by "always" answers this run
}

// NewGate returns the Gate that applies --read-only, the policy file, --yes
// and interactive approval, in that order. With a nil Prompter it never
// blocks: what is not allowed is denied.
func NewGate(o GateOptions) Gate {
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
// first, shown together, then asked one by one; no verdict is returned
// before all answers are in.
func (g *policyGate) Check(ctx context.Context, env *Env, calls []Call) []Verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	verdicts := make([]Verdict, len(calls))
	var pending []int
	for i, c := range calls {
		v, ask := g.decide(env, c)
		switch {
		case !ask:
			verdicts[i] = v
		case g.o.DryRun:
			verdicts[i] = Verdict{Decision: DecisionAsk, Reason: "dry run: not run; would ask for approval"}
		default:
			pending = append(pending, i)
		}
	}
	if len(pending) > 0 {
		g.ask(ctx, env, calls, pending, verdicts)
	}
	for i, c := range calls {
		g.log.Debug("approval", "tool", toolName(c), "decision", verdicts[i].Decision, "allowed", verdicts[i].Allowed, "reason", verdicts[i].Reason)
	}
	return verdicts
}

func toolName(c Call) string {
	if c.Tool == nil {
		return ""
	}
	return c.Tool.Name()
}

// decide applies everything but the prompt; ask is true when only a person
// can decide.
func (g *policyGate) decide(env *Env, c Call) (v Verdict, ask bool) {
	if c.Tool == nil {
		return Verdict{Decision: DecisionDeny, Reason: "denied by policy: unknown tool"}, false
	}
	class := c.Tool.Class()
	if class == ClassRead {
		// Read tools never ask, in every mode; dry runs run them too.
		return Verdict{Allowed: true, Decision: DecisionAllow, Reason: "read tool"}, false
	}
	dry := func(v Verdict) Verdict {
		if !g.o.DryRun {
			return v
		}
		what := "would be allowed"
		if v.Decision == DecisionDeny {
			what = "would be denied"
		}
		return Verdict{Decision: v.Decision, Reason: "dry run: not run; " + what + " (" + v.Reason + ")"}
	}
	if g.o.ReadOnly {
		return dry(Verdict{Decision: DecisionDeny, Reason: fmt.Sprintf("denied by policy: read-only mode allows read tools only (%s is a %s tool)", c.Tool.Name(), class)}), false
	}
	allow, deny := g.pol.Match(env, c)
	if deny != nil {
		return dry(Verdict{Decision: DecisionDeny, Reason: "denied by policy: deny rule " + deny.String()}), false
	}
	if allow != nil {
		return dry(Verdict{Allowed: true, Decision: DecisionAllow, Reason: "allowed by rule " + allow.String()}), false
	}
	if g.o.Yes {
		return dry(Verdict{Allowed: true, Decision: DecisionAllow, Reason: "allowed by --yes"}), false
	}
	if g.o.Prompter != nil {
		return Verdict{}, true
	}
	return dry(Verdict{Decision: DecisionDeny, Reason: ReasonUnattended}), false
}

// ask runs the interactive phase for the calls at pending.
func (g *policyGate) ask(ctx context.Context, env *Env, calls []Call, pending []int, verdicts []Verdict) {
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
		// An "always" answer earlier in this step may already cover this call.
		if allow, _ := g.pol.Match(env, c); allow != nil {
			verdicts[i] = Verdict{Allowed: true, Decision: DecisionAllow, Reason: "allowed by rule " + allow.String()}
			continue
		}
		if stop != nil {
			verdicts[i] = Verdict{Decision: DecisionRejected, Reason: "denied by user: no answer at the approval prompt (" + stop.Error() + ")"}
			continue
		}
		rule := AlwaysRule(env, c)
		var summary string
		if len(pending) > 1 {
			summary = fmt.Sprintf("\n[%d/%d] %s\n", k+1, len(pending), shortCall(env, c))
			if k == 0 && overview != "" {
				summary = overview + "\n" + summary
			}
		} else {
			summary = DescribeCall(env, c)
		}
		summary = redact(summary) + "Run this?"
		options := []string{"yes", "always (don't ask again for " + redact(rule.String()) + ")", "no"}
		ans, err := g.o.Prompter.Ask(ctx, summary, options)
		switch {
		case err != nil:
			stop = err
			verdicts[i] = Verdict{Decision: DecisionRejected, Reason: "denied by user: no answer at the approval prompt (" + err.Error() + ")"}
		case ans == "yes":
			verdicts[i] = Verdict{Allowed: true, Decision: DecisionApproved, Reason: "approved at the prompt"}
		case ans == "always":
			verdicts[i] = Verdict{Allowed: true, Decision: DecisionApprovedAlways, Reason: "approved at the prompt; added allow rule " + rule.String()}
			g.addRule(rule)
		default:
			verdicts[i] = Verdict{Decision: DecisionRejected, Reason: "denied by user: rejected at the approval prompt"}
		}
	}
}

// addRule remembers rule for the rest of the run and appends it to the policy
// file. A failure to save does not undo the approval already given.
func (g *policyGate) addRule(rule Rule) {
	rule.Comment = "added at the approval prompt " + time.Now().UTC().Format(time.RFC3339)
	g.pol.Allow = append(g.pol.Allow, rule)
	if g.o.PolicyPath == "" {
		return
	}
	if err := AppendRule(g.o.PolicyPath, rule); err != nil {
		g.log.Warn("could not save approval rule; it applies to this run only", "rule", rule.String(), "err", err)
	}
}

// AlwaysRule is the rule a "don't ask again" answer adds for c: for a call
// with a command, tool + its first word (and the second when it looks like a
// subcommand: "git status"; the whole command line for shells, interpreters
// and wrappers such as sh, env, sudo, xargs, python); for a call with a path, tool + the path's
// directory plus "/**" (the file itself at the top level); else the tool.
func AlwaysRule(env *Env, c Call) Rule {
	f := factsOf(env, c)
	r := Rule{Tool: f.tool}
	switch {
	case len(f.argv) > 0:
		words := f.argv[:1]
		switch {
		case wrapperCommands[path.Base(f.argv[0])]:
			// "sh" or "env" alone would approve any program; approve
			// exactly this command line instead.
			words = f.argv
		case len(f.argv) > 1 && f.argv[1] != "" && !strings.HasPrefix(f.argv[1], "-"):
			words = f.argv[:2]
		}
		r.Command = shellquote.Join(words...)
	case f.hasPath && f.inside && f.path != ".":
		if dir := path.Dir(f.path); dir != "." {
			r.Path = escapeGlob(dir) + "/**"
		} else {
			r.Path = escapeGlob(f.path)
		}
	}
	if r.Tool == "" && r.Command == "" && r.Path == "" {
		r.Tool = "*"
	}
	return r
}

// wrapperCommands run whatever their arguments name, so a "don't ask again"
// rule on their first word would be a blank cheque.
var wrapperCommands = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true,
	"env": true, "sudo": true, "doas": true, "su": true, "xargs": true, "exec": true,
	"eval": true, "command": true, "nice": true, "nohup": true, "timeout": true,
	"time": true, "watch": true, "find": true,
	"python": true, "python3": true, "node": true, "perl": true, "ruby": true,
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
func DescribeCall(env *Env, c Call) string {
	var b strings.Builder
	if c.Tool == nil {
		b.WriteString("unknown tool\n")
	} else {
		fmt.Fprintf(&b, "%s (%s)\n", c.Tool.Name(), c.Tool.Class())
	}
	if d, ok := c.Tool.(Describer); ok {
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
			dir := "."
			if f.workdir != "" {
				dir = f.workdir
			}
			if env != nil && env.Workspace != "" {
				dir, _ = workspaceRel(env, dir)
				dir = path.Join(env.Workspace, dir)
			}
			fmt.Fprintf(&b, "  working directory: %s\n", dir)
		}
		if f.hasPath {
			fmt.Fprintf(&b, "  path: %s\n", f.path)
		}
	}
	b.WriteString("  arguments: " + strings.TrimPrefix(indent(shownArgs(c.Args), "  "), "  ") + "\n")
	return b.String()
}

// shortCall is the one-line recap asked after the overview.
func shortCall(env *Env, c Call) string {
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
	short, err := rewriteJSONStrings(args, func(s string) string {
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

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
