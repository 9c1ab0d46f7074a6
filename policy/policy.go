// Package policy decides whether a write or exec tool call may run: the
// policy file's allow and deny rules, --yes and --read-only, and interactive
// approval (the Gate).
package policy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agnivade/levenshtein"
	"github.com/kballard/go-shellquote"
	"github.com/tactcli/tact/internal/wspath"
	"github.com/tactcli/tact/policy/cmdline"
	"github.com/tactcli/tact/tools"
)

// Rule matches calls by tool, command prefix and path glob; every field that
// is set must match (they are ANDed).
type Rule struct {
	// Tool is a tool name or "*"; empty means any tool.
	Tool string `json:"tool,omitempty"`
	// Command matches run_command calls by the commands they run (see
	// AnalyzeCommand): a command matches when its program name is the
	// rule's first word and its arguments start with the rule's other whole
	// words ("git status" matches "git status -s", not "git statusx").
	Command string `json:"command,omitempty"`
	// Path is a glob on the workspace-relative path of write_file/edit_file
	// calls; "**" matches any number of directories.
	Path string `json:"path,omitempty"`
	// Exact (allow rules with a command) matches a command only when its
	// arguments are exactly the rule's words, none added: what an "always"
	// answer saves for a program whose effect depends on its arguments
	// (sed, find, tar, rm, ...), so it approves that call and no other.
	Exact   bool   `json:"exact,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// String renders the rule for prompts, reasons and traces.
func (r Rule) String() string {
	var parts []string
	if r.Tool != "" {
		parts = append(parts, "tool="+r.Tool)
	}
	if r.Command != "" {
		parts = append(parts, "command="+strconvQuote(r.Command))
	}
	if r.Path != "" {
		parts = append(parts, "path="+strconvQuote(r.Path))
	}
	if r.Exact {
		parts = append(parts, "exact")
	}
	if len(parts) == 0 {
		return "(empty rule)"
	}
	return strings.Join(parts, " ")
}

// Policy is the parsed policy file. A matching deny rule wins over any
// allow rule.
type Policy struct {
	Allow []Rule `json:"allow"`
	Deny  []Rule `json:"deny"`
}

// policyTools are the tools rules may name, with their classes.
var policyTools = sync.OnceValue(func() map[string]tools.Class {
	m := map[string]tools.Class{}
	for _, t := range tools.DefaultRegistry().List() {
		m[t.Name()] = t.Class()
	}
	return m
})

// pathTools are the gated tools whose declared path arguments
// (tools.Decl.Paths) path rules match, and commandTools those with a
// declared command that command rules match: each tool says which it is.
var pathTools, commandTools = declared(func(d tools.Decl) bool { return len(d.Paths) > 0 }),
	declared(func(d tools.Decl) bool { return d.Command != "" })

// declared lists the built-in write and exec tools (the ones rules may
// name) whose declaration has, in tools.Builtins' order.
func declared(has func(tools.Decl) bool) func() []string {
	return sync.OnceValue(func() []string {
		var names []string
		for _, t := range tools.Builtins() {
			if t.Class() != tools.ClassRead && has(tools.DeclOf(t)) {
				names = append(names, t.Name())
			}
		}
		return names
	})
}

// isOneOf reports whether the rule's tool (a name or a pattern) names one
// of names.
func isOneOf(pattern string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return toolMatches(pattern, n) })
}

// appliesOnlyTo is the end of an error about a rule field: "applies only
// to run_command" or "applies only to write_file and edit_file".
func appliesOnlyTo(names []string) string {
	switch len(names) {
	case 0:
		return "applies to no tool"
	case 1:
		return "applies only to " + names[0]
	}
	return "applies only to " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// validate reports why a rule cannot be used, or nil. A rule that could
// never match (a misspelt tool, a field its tool does not have, a read tool,
// which policy never sees) is an error rather than a silently dead rule.
func (r Rule) validate() error {
	if r.Tool == "" && r.Command == "" && r.Path == "" {
		return errors.New("empty rule: set tool, command or path")
	}
	if r.Exact && r.Command == "" {
		return errors.New("\"exact\" applies to a command: set command too")
	}
	if r.Command != "" && r.Path != "" {
		// No tool takes both, so such a rule would silently never match.
		return fmt.Errorf("command and path cannot both be set (command is for %s, path for %s)", strings.Join(commandTools(), "/"), strings.Join(pathTools(), "/"))
	}
	if r.Tool != "" && r.Tool != "*" && (tools.IsToolPattern(r.Tool) || strings.ContainsAny(r.Tool, `.?[\/`)) {
		// Patterns, MCP names, and what looks like a glob or a path: the
		// pattern check says exactly which character is wrong.
		if err := validateToolPattern(r); err != nil {
			return err
		}
	} else if r.Tool != "" && r.Tool != "*" {
		class, ok := policyTools()[r.Tool]
		switch {
		case !ok:
			return unknownToolError(r.Tool)
		case class == tools.ClassRead:
			return fmt.Errorf("tool %q is a read tool: read tools always run and are never checked against policy, so this rule would never apply", r.Tool)
		case r.Command != "" && !slices.Contains(commandTools(), r.Tool):
			return fmt.Errorf("\"command\" %s, not %s", appliesOnlyTo(commandTools()), r.Tool)
		case r.Path != "" && !slices.Contains(pathTools(), r.Tool):
			return fmt.Errorf("\"path\" %s, not %s", appliesOnlyTo(pathTools()), r.Tool)
		}
	}
	if r.Command != "" {
		words, err := shellquote.Split(r.Command)
		if err != nil {
			return fmt.Errorf("command %q: %v", r.Command, err)
		}
		if len(words) == 0 {
			return fmt.Errorf("command %q: no words", r.Command)
		}
		name := cmdline.CanonicalName(words[0])
		if name == "" {
			return fmt.Errorf("command %q: %q is not a program name", r.Command, words[0])
		}
		if rest := cmdline.GlobalOptions(name, words[1:]); rest > 0 {
			fixed := shellquote.Join(append([]string{words[0]}, words[1+rest:]...)...)
			return fmt.Errorf("command %q: %s's options before the subcommand are not matched (tact looks through them); write %q", r.Command, name, fixed)
		}
	}
	if r.Path != "" {
		if err := checkGlob(r.Path); err != nil {
			return fmt.Errorf("path %q: %v", r.Path, err)
		}
	}
	return nil
}

// mcpToolRE is an MCP tool's name, SERVER.TOOL (mcp.ValidServerName, then
// a name ValidMCPToolName accepts).
var mcpToolRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.[A-Za-z0-9_.-]{1,128}$`)

// validateToolPattern checks a rule naming a tool pattern ("github.*", see
// MatchToolPattern) or an MCP tool (SERVER.TOOL). MCP servers start after
// the policy is read, so such a name cannot be checked against their tools;
// command and path stay reserved to the built-in tools that have them.
func validateToolPattern(r Rule) error {
	if err := tools.CheckToolPattern(r.Tool); err != nil {
		return fmt.Errorf("tool %q: %v", r.Tool, err)
	}
	if tools.IsToolPattern(r.Tool) {
		if r.Command != "" && !isOneOf(r.Tool, commandTools()) {
			return fmt.Errorf("\"command\" %s, which tool %q does not match", appliesOnlyTo(commandTools()), r.Tool)
		}
		if r.Path != "" && !isOneOf(r.Tool, pathTools()) {
			return fmt.Errorf("\"path\" %s, which tool %q does not match", appliesOnlyTo(pathTools()), r.Tool)
		}
		return nil
	}
	if !mcpToolRE.MatchString(r.Tool) {
		return fmt.Errorf("tool %q: not a tool name (an MCP tool is SERVER.TOOL: the server's name, \".\", and 1 to %d of %s)", r.Tool, tools.MaxMCPToolName, tools.ToolNameAlphabet)
	}
	if r.Command != "" {
		return fmt.Errorf("\"command\" %s, not %s", appliesOnlyTo(commandTools()), r.Tool)
	}
	if r.Path != "" {
		return fmt.Errorf("\"path\" %s, not %s", appliesOnlyTo(pathTools()), r.Tool)
	}
	return nil
}

// toolMatches reports whether a rule's tool (a name or a pattern) names
// tool: the whole name, compared exactly except for "*".
func toolMatches(pattern, tool string) bool {
	if pattern == tool {
		return true
	}
	return tools.IsToolPattern(pattern) && tools.MatchToolPattern(pattern, tool)
}

// unknownToolError names the tools rules may use and the closest one to a
// typo.
func unknownToolError(name string) error {
	classes := policyTools()
	var gated []string
	for n, class := range classes {
		if class != tools.ClassRead {
			gated = append(gated, n)
		}
	}
	sort.Strings(gated)
	known := strings.Join(gated, ", ") + " or \"*\""
	norm := strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(name)))
	best, bestDist := "", -1
	for n := range classes {
		d := levenshtein.ComputeDistance(norm, n)
		if bestDist < 0 || d < bestDist || (d == bestDist && n < best) {
			best, bestDist = n, d
		}
	}
	if best != "" && bestDist <= max(2, len(best)/4) {
		return fmt.Errorf("unknown tool %q; did you mean %q? (rules name %s)", name, best, known)
	}
	return fmt.Errorf("unknown tool %q (rules name %s)", name, known)
}

// checkGlob accepts workspace-relative slash-separated globs; a leading "./"
// is tolerated because people write it.
func checkGlob(pattern string) error {
	p := strings.TrimPrefix(pattern, "./")
	if p == "" {
		return errors.New("empty glob")
	}
	if strings.HasPrefix(p, "/") {
		return errors.New("glob must be relative to the workspace")
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return errors.New("empty path segment (doubled or trailing \"/\")")
		case ".", "..":
			return fmt.Errorf("%q segments are not allowed", seg)
		case "**":
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return errors.New("bad glob syntax")
		}
	}
	return nil
}

// matchGlob matches a slash-separated relative path against a glob where a
// "**" segment matches zero or more segments. Dynamic programming keeps it
// linear in pattern×path length whatever the pattern (it is fuzzed).
func matchGlob(pattern, name string) bool {
	p := strings.Split(strings.TrimPrefix(pattern, "./"), "/")
	n := strings.Split(name, "/")
	// next[j] holds whether p[i+1:] matches n[j:]; cur is for p[i:].
	next := make([]bool, len(n)+1)
	cur := make([]bool, len(n)+1)
	next[len(n)] = true
	for i := len(p) - 1; i >= 0; i-- {
		for j := len(n); j >= 0; j-- {
			switch {
			case p[i] == "**":
				cur[j] = next[j] || (j < len(n) && cur[j+1])
			case j == len(n):
				cur[j] = false
			default:
				ok, err := path.Match(p[i], n[j])
				cur[j] = err == nil && ok && next[j+1]
			}
		}
		next, cur = cur, next
	}
	return next[0]
}

// callFacts are what rules look at in a call's arguments, found where
// the tool's declaration (tools.Decl) says they are.
type callFacts struct {
	tool string
	// declared: the tool declares its arguments (every built-in does); an
	// MCP tool's are read by their usual names, "command", "working_dir"
	// and "path", and its command is never analysed.
	declared bool
	isCmd    bool // the tool declares a command (run_command)
	decl     tools.Decl
	argv     []string // the split command; nil when absent or unparsable
	hasCmd   bool
	workdir  string
	hasPath  bool
	pathFact // the first path argument given
	// more are the other path arguments given, for tools that declare
	// several: rules match each of them too.
	more []pathFact
	// cmd is run_command's analysed command line; nil for other tools or
	// a command that cannot be split into words.
	cmd *cmdline.CommandAnalysis
}

// pathFact is one path argument.
type pathFact struct {
	path   string // cleaned, slash-separated, workspace-relative
	inside bool   // path stays inside the workspace (lexically)
	// real is path with symlinks resolved (as far as it exists), so a link
	// cannot carry a write from an allowed directory into a denied one.
	real       string
	realInside bool
}

// paths are every path argument the call gives.
func (f callFacts) paths() []pathFact {
	if !f.hasPath {
		return nil
	}
	return append([]pathFact{f.pathFact}, f.more...)
}

// undeclared is how the arguments of a tool that declares nothing are read.
var undeclared = tools.Decl{Paths: []string{"path"}, Command: "command", WorkDir: "working_dir"}

// declOf is t's declaration, or the built-in's for a stand-in under a
// built-in's name; ok is false when there is neither.
func declOf(t tools.Tool) (d tools.Decl, ok bool) {
	if t == nil {
		return undeclared, false
	}
	if _, ok := t.(tools.Declarer); ok {
		return tools.DeclOf(t), true
	}
	if d, ok := tools.BuiltinDecl(t.Name()); ok {
		return d, true
	}
	return undeclared, false
}

// isCommandTool reports whether t declares a command.
func isCommandTool(t tools.Tool) bool {
	d, ok := declOf(t)
	return ok && d.Command != ""
}

func factsOf(env *tools.Env, c tools.Call) callFacts {
	var f callFacts
	if c.Tool != nil {
		f.tool = c.Tool.Name()
	}
	f.decl, f.declared = declOf(c.Tool)
	f.isCmd = f.declared && f.decl.Command != ""
	var args map[string]json.RawMessage
	if json.Unmarshal(c.Args, &args) != nil {
		return f
	}
	if raw, ok := args[f.decl.Command]; ok && f.decl.Command != "" {
		f.hasCmd = true
		var s string
		var list []string
		switch {
		case json.Unmarshal(raw, &s) == nil:
			if words, err := shellquote.Split(s); err == nil {
				f.argv = words
			}
		case json.Unmarshal(raw, &list) == nil:
			f.argv = list
		}
	}
	if raw, ok := args[f.decl.WorkDir]; ok && f.decl.WorkDir != "" {
		_ = json.Unmarshal(raw, &f.workdir)
	}
	if f.isCmd && f.argv != nil {
		an := cmdline.AnalyzeCommand(f.argv, analyzeOptions(env, f.workdir))
		f.cmd = &an
	}
	for _, name := range f.decl.Paths {
		raw, ok := args[name]
		var p string
		if !ok || json.Unmarshal(raw, &p) != nil || p == "" {
			continue
		}
		var pf pathFact
		pf.path, pf.inside = workspaceRel(env, p)
		pf.real, pf.realInside = pf.path, pf.inside
		if pf.inside {
			pf.real, pf.realInside = resolvedRel(env, pf.path)
		}
		if !f.hasPath {
			f.hasPath, f.pathFact = true, pf
		} else {
			f.more = append(f.more, pf)
		}
	}
	return f
}

// analyzeOptions are the working directory and PATH run_command would use,
// so the analyser resolves program names as the command will.
func analyzeOptions(env *tools.Env, workdir string) cmdline.AnalyzeOptions {
	if env == nil || env.Workspace == "" {
		return cmdline.AnalyzeOptions{}
	}
	if workdir == "" {
		workdir = "."
	}
	dir, err := env.Resolve(workdir)
	if err != nil {
		dir = filepath.Join(env.Workspace, workdir)
	}
	return cmdline.AnalyzeOptions{Dir: dir, PATH: env.CommandPath(), Resolve: true}
}

// workspaceRel makes p workspace-relative and slash-separated; inside is
// false when it lexically leaves the workspace (the tool refuses those, and
// no allow rule may approve them).
func workspaceRel(env *tools.Env, p string) (rel string, inside bool) {
	if filepath.IsAbs(p) {
		if env == nil || env.Workspace == "" {
			return filepath.ToSlash(filepath.Clean(p)), false
		}
		r, err := filepath.Rel(env.Workspace, p)
		if err != nil {
			return filepath.ToSlash(filepath.Clean(p)), false
		}
		p = r
	}
	rel = filepath.ToSlash(filepath.Clean(p))
	inside = rel != ".." && !strings.HasPrefix(rel, "../") && !strings.HasPrefix(rel, "/")
	return rel, inside
}

// resolvedRel resolves symlinks along the workspace-relative rel, as far
// as the path exists, and makes it workspace-relative again; outside the
// workspace it is the absolute real path.
func resolvedRel(env *tools.Env, rel string) (string, bool) {
	if env == nil || env.Workspace == "" {
		return rel, true
	}
	return wspath.Rel(env.Workspace, filepath.FromSlash(rel))
}

// shown is the path approvers and prompts are given: the one the tool
// will reach (symlinks resolved), workspace-relative inside it; a path
// that lexically leaves the workspace as written.
func (f pathFact) shown() string {
	if f.inside {
		return f.real
	}
	return f.path
}

// appliesTo reports whether r's tool (and the fields it sets) fit the call.
func (r Rule) appliesTo(f callFacts) bool {
	if r.Tool != "" && r.Tool != "*" && !toolMatches(r.Tool, f.tool) {
		return false
	}
	if r.Command != "" && !f.isCmd {
		return false // only a command tool (run_command) has a command
	}
	return true
}

// matches reports whether r covers the call, for deny rules and for allow
// rules without a command (allowCommand decides those). forAllow makes
// paths that leave the workspace unmatchable, so an allow rule can never
// approve them.
func (r Rule) matches(f callFacts, forAllow bool) bool {
	if r.Tool == "" && r.Command == "" && r.Path == "" {
		return false // an empty rule (only possible from code) matches nothing
	}
	if !r.appliesTo(f) {
		return false
	}
	if r.Command != "" {
		if forAllow {
			return false
		}
		if !r.denyCommand(f) {
			return false
		}
	}
	if r.Path != "" {
		if !f.hasPath || checkGlob(r.Path) != nil {
			return false
		}
		// A deny rule matches when any path does, an allow rule when every
		// one does.
		any := false
		for _, p := range f.paths() {
			lexical, real := matchGlob(r.Path, p.path), matchGlob(r.Path, p.real)
			if forAllow {
				// Allow only what is inside the workspace both as written
				// and as resolved, and matched both ways.
				if !p.inside || !p.realInside || !lexical || !real {
					return false
				}
			}
			any = any || lexical || real
		}
		if !any {
			return false
		}
	}
	return true
}

// ruleWords splits a rule's command; nil when it does not split.
func ruleWords(command string) []string {
	words, err := shellquote.Split(command)
	if err != nil || len(words) == 0 {
		return nil
	}
	return words
}

// denyCommand: a command deny rule matches when any command the call runs,
// wrappers included, matches it (a word only known at run time matches any
// rule word), or when the call is not fully analysable and all the rule's
// words appear among the words of the call's text.
func (r Rule) denyCommand(f callFacts) bool {
	words := ruleWords(r.Command)
	if words == nil || f.argv == nil {
		return false
	}
	if hasPrefixWords(f.argv, words) {
		return true
	}
	if f.cmd == nil {
		return false
	}
	for _, c := range f.cmd.Commands {
		if commandMatches(c, words, false) {
			return true
		}
	}
	return !f.cmd.Complete && f.cmd.ContainsWords(words)
}

func hasPrefixWords(argv, words []string) bool {
	if len(argv) < len(words) {
		return false
	}
	for i, w := range words {
		if argv[i] != w {
			return false
		}
	}
	return true
}

// commandMatches matches one analysed command against a rule's words. For
// deny rules the program is compared by base name and symlink target, and a
// dynamic argument matches anything. For allow rules a bare program name
// must be the program PATH finds (not ./git), a name with a "/" must be the
// path as typed, and every compared argument must be known.
func commandMatches(c cmdline.Command, words []string, forAllow bool) bool {
	prog := words[0]
	switch {
	case !forAllow:
		n := cmdline.CanonicalName(prog)
		if n != c.Name && (c.Target == "" || n != c.Target) {
			return false
		}
	case strings.Contains(prog, "/"):
		if !strings.Contains(c.Typed, "/") || filepath.Clean(prog) != filepath.Clean(c.Typed) {
			return false
		}
	default:
		if prog != c.Name || !c.OnPath {
			return false
		}
	}
	for i, w := range words[1:] {
		if i >= len(c.Args) {
			return false
		}
		a := c.Args[i]
		if a.Dynamic {
			return !forAllow
		}
		if a.Text != w {
			return false
		}
	}
	return true
}

// allowCommand finds the allow rule that approves a run_command call by its
// commands: the call must be fully analysable, and every command it runs
// must be covered by an allow rule, except wrappers that only change how a
// command runs, harmless builtins and function calls; at least one rule
// must match. A rule spelling out the whole command line word for word
// approves that exact (analysable) call too. It returns the rule covering
// the first command.
func (p *Policy) allowCommand(f callFacts) *Rule {
	if f.cmd == nil || !f.cmd.Complete {
		return nil
	}
	var first *Rule
	for _, c := range f.cmd.Commands {
		var hit *Rule
		for i := range p.Allow {
			r := &p.Allow[i]
			if r.Command == "" || !r.appliesTo(f) {
				continue
			}
			if words := ruleWords(r.Command); words != nil && commandMatches(c, words, true) && (!r.Exact || len(words)-1 == len(c.Args)) {
				hit = r
				break
			}
		}
		switch {
		case hit != nil:
			if first == nil {
				first = hit
			}
		case (c.Kind == cmdline.KindWrapper || c.Kind == cmdline.KindBuiltin || c.Kind == cmdline.KindFunction) && c.OnPath:
			// Looked through; a wrapper typed as a path to some other file
			// (./env) is an unknown program and needs its own rule.
		default:
			return nil
		}
	}
	return first
}

// uncovered names the commands of a fully analysable run_command call that
// no allow rule covers (sort and head in `du -k . | sort -rn | head` under
// a policy allowing du), so a denial can say what is missing; nil when the
// policy has no command allow rules, the call is no command or cannot be
// analysed, or every command is covered.
func (p *Policy) uncovered(env *tools.Env, c tools.Call) []string {
	if p == nil || !isCommandTool(c.Tool) {
		return nil
	}
	hasRules := false
	for _, r := range p.Allow {
		hasRules = hasRules || r.Command != ""
	}
	if !hasRules {
		return nil
	}
	f := factsOf(env, c)
	if f.cmd == nil || !f.cmd.Complete {
		return nil
	}
	var names []string
	for _, cmd := range f.cmd.Commands {
		if (cmd.Kind == cmdline.KindWrapper || cmd.Kind == cmdline.KindBuiltin || cmd.Kind == cmdline.KindFunction) && cmd.OnPath {
			continue
		}
		covered := false
		for _, r := range p.Allow {
			if words := ruleWords(r.Command); r.Command != "" && r.appliesTo(f) && words != nil && commandMatches(cmd, words, true) {
				covered = true
				break
			}
		}
		if name := cmp.Or(cmd.Typed, cmd.Name); !covered && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// Match returns the first allow rule and the first deny rule that cover the
// call (either may be nil). Callers let deny win.
func (p *Policy) Match(env *tools.Env, c tools.Call) (allow, deny *Rule) {
	if p == nil {
		return nil, nil
	}
	f := factsOf(env, c)
	for i := range p.Deny {
		if p.Deny[i].matches(f, false) {
			deny = &p.Deny[i]
			break
		}
	}
	covering := p.allowCommand(f)
	for i := range p.Allow {
		r := &p.Allow[i]
		switch {
		case r.Command == "":
			if r.matches(f, true) {
				return r, deny
			}
		case r == covering:
			return r, deny
		case r.appliesTo(f) && f.cmd != nil && f.cmd.Complete && slices.Equal(ruleWords(r.Command), f.argv):
			// The whole command line, word for word.
			return r, deny
		}
	}
	return nil, deny
}

// unanalysable says why c's command cannot be fully analysed, or "".
func unanalysable(env *tools.Env, c tools.Call) string {
	if !isCommandTool(c.Tool) {
		return ""
	}
	f := factsOf(env, c)
	if f.cmd == nil || f.cmd.Complete {
		return ""
	}
	return strings.Join(f.cmd.Problems, "; ")
}

// denyNote explains a command deny rule that matched only because the call
// cannot be fully analysed and contains the rule's words.
func denyNote(env *tools.Env, c tools.Call, r *Rule) string {
	if r.Command == "" {
		return ""
	}
	f := factsOf(env, c)
	if f.cmd == nil || f.cmd.Complete {
		return ""
	}
	words := ruleWords(r.Command)
	if words == nil || hasPrefixWords(f.argv, words) {
		return ""
	}
	for _, cmd := range f.cmd.Commands {
		if commandMatches(cmd, words, false) {
			return ""
		}
	}
	return " (the command cannot be fully analysed (" + strings.Join(f.cmd.Problems, "; ") + ") and contains the rule's words)"
}
