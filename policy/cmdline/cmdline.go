// Package cmdline analyses a run_command argv into every command it will
// run (through wrappers, shells and program options), so policy rules match
// what runs rather than how it was spelled.
package cmdline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kballard/go-shellquote"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/tactcli/tact/tools"
)

// The command analyser turns a run_command argv into every command it will
// run, so policy rules match what runs rather than how it was spelled:
// "/bin/rm x", "env rm x", "sh -c 'rm x'" and "nice rm x" all run rm. What it
// cannot know before the command runs (a command name held in a variable,
// eval, a script file, a wrapper option it does not know) marks the analysis
// incomplete; policy then lets no command allow rule approve the call.

// Word is one argument as far as tact can know it before the command runs.
type Word struct {
	Text string // the value; for a dynamic word, its shell source text
	// Dynamic is set when the value is only known at run time (a variable,
	// a command substitution, a glob, arguments xargs reads from its input).
	Dynamic bool
}

// CommandKind says what an analysed command does, which decides whether an
// allow rule must cover it.
type CommandKind int

const (
	// KindProgram is an ordinary program; allow rules must cover it.
	KindProgram CommandKind = iota
	// KindWrapper only changes how the next command runs (env, nice,
	// timeout, a shell running a script tact parsed); allow rules look
	// through it, deny rules still see it.
	KindWrapper
	// KindRunner runs the next command as another user or in another root
	// or namespace (sudo, doas, chroot, unshare); allow rules must cover it
	// as well as the command it runs.
	KindRunner
	// KindBuiltin is a shell builtin that runs nothing (cd, export, echo,
	// true), typed without a path; it needs no allow rule.
	KindBuiltin
	// KindFunction calls a function the script defines; its body's
	// commands are analysed where the function is defined.
	KindFunction
)

// Command is one command a call runs.
type Command struct {
	// Name is the canonical program name: the base name of what was typed
	// ("/usr/bin/rm" and "../bin/rm" are "rm"). It never contains "/".
	Name string
	// Typed is the program word as written.
	Typed string
	// Target is the base name of the file a symlinked program resolves to
	// (python3 -> python3.11), when it differs from Name.
	Target string
	// OnPath is set when the program is the one PATH lookup finds under
	// Name: typed without a path, or a path to that same file.
	OnPath bool
	// Args are the arguments; for programs with global options (git -C dir,
	// docker --context x, kubectl -n ns) those before the subcommand are
	// left out, so the subcommand comes first.
	Args []Word
	Kind CommandKind
}

// String renders the command as a shell-quoted line.
func (c Command) String() string {
	words := make([]string, 0, len(c.Args)+1)
	words = append(words, c.Typed)
	for _, a := range c.Args {
		if a.Dynamic {
			words = append(words, a.Text)
		} else {
			words = append(words, shellquote.Join(a.Text))
		}
	}
	return strings.Join(words, " ")
}

// CommandAnalysis is what AnalyzeCommand found.
type CommandAnalysis struct {
	// Commands lists every command found, wrappers before the commands
	// they run, in the order they appear.
	Commands []Command
	// Complete is false when some part of the call cannot be known before
	// it runs; Problems says what.
	Complete bool
	Problems []string
	// words are the literal words of the call's text, for the conservative
	// deny check on incomplete calls.
	words map[string]bool
}

// AnalyzeOptions tells the analyser where names are looked up. With a zero
// value nothing on disk is consulted: paths reduce to base names, and only
// programs typed without a path count as OnPath.
type AnalyzeOptions struct {
	Dir  string // working directory of the call (relative program paths)
	PATH string // the child's PATH
	// Resolve enables filesystem lookups (PATH search, symlink targets).
	Resolve bool
}

// Limits keep analysis bounded whatever the input (it is fuzzed).
const (
	maxAnalyzeDepth = 16  // wrappers and shells inside each other
	MaxCommands     = 512 // commands in one call
	maxProblems     = 8
)

// AnalyzeCommand analyses a run_command argv (run without a shell).
func AnalyzeCommand(argv []string, o AnalyzeOptions) CommandAnalysis {
	a := &analyzer{o: o, res: CommandAnalysis{Complete: true, words: map[string]bool{}}}
	words := make([]Word, len(argv))
	for i, s := range argv {
		words[i] = Word{Text: s}
		a.noteText(s)
	}
	a.command(words, 0, nil)
	return a.res
}

// ContainsWords reports whether every word occurs among the literal words
// of the call's text (the first, a program, by its base name): the
// conservative deny check for a call that is not fully analysable.
func (an CommandAnalysis) ContainsWords(words []string) bool {
	for i, w := range words {
		if i == 0 {
			w = CanonicalName(w)
		}
		for _, part := range wordSplitRE.Split(w, -1) {
			if part != "" && !an.words[part] {
				return false
			}
		}
	}
	return true
}

type analyzer struct {
	o   AnalyzeOptions
	res CommandAnalysis
}

// shellCtx is the script a command comes from; nil for a plain argv.
type shellCtx struct {
	lang  syntax.LangVariant
	funcs map[string]bool
}

func (a *analyzer) incomplete(format string, args ...any) {
	a.res.Complete = false
	if len(a.res.Problems) < maxProblems {
		p := fmt.Sprintf(format, args...)
		if !slices.Contains(a.res.Problems, p) {
			a.res.Problems = append(a.res.Problems, p)
		}
	}
}

// wordSplitRE separates the words the conservative deny check looks for.
var wordSplitRE = regexp.MustCompile(`[^A-Za-z0-9_.+/-]+`)

// noteText records the words of s (and their base names) for the
// conservative deny check.
func (a *analyzer) noteText(s string) {
	if len(a.res.words) > 4096 {
		return
	}
	for _, w := range wordSplitRE.Split(s, -1) {
		if w == "" {
			continue
		}
		a.res.words[w] = true
		if b := CanonicalName(w); b != "" {
			a.res.words[b] = true
		}
	}
}

// CanonicalName is the base name of a program word, or "" when it names no
// file ("", "/", ".", "..").
func CanonicalName(s string) string {
	s = strings.TrimRight(s, "/")
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if s == "." || s == ".." {
		return ""
	}
	return s
}

// command analyses one simple command.
func (a *analyzer) command(words []Word, depth int, sh *shellCtx) {
	if len(words) == 0 {
		return
	}
	if depth > maxAnalyzeDepth {
		a.incomplete("commands nested more than %d deep", maxAnalyzeDepth)
		return
	}
	if len(a.res.Commands) >= MaxCommands {
		a.incomplete("more than %d commands", MaxCommands)
		return
	}
	prog := words[0]
	if !prog.Dynamic && prog.Text == "." && len(words) > 1 {
		a.incomplete(". runs a script file")
		return
	}
	if prog.Dynamic {
		a.incomplete("the command name %s is only known when it runs", prog.Text)
		return
	}
	name := CanonicalName(prog.Text)
	if name == "" {
		a.incomplete("%q is not a program name", prog.Text)
		return
	}
	c := Command{Name: name, Typed: prog.Text, Args: words[1:]}
	hasPath := strings.Contains(prog.Text, "/")
	switch {
	case sh != nil && !hasPath && sh.funcs[name]:
		c.Kind = KindFunction
		c.OnPath = true
		a.add(c)
		return
	case !hasPath && harmlessBuiltins[name]:
		c.Kind = KindBuiltin
	}
	a.resolve(&c)
	idx := a.add(c)
	if h, ok := commandHandlers[name]; ok {
		h(a, idx, depth, sh)
		return
	}
	if IsInterpreter(name) {
		a.interpreter(idx)
	}
}

func (a *analyzer) add(c Command) int {
	a.res.Commands = append(a.res.Commands, c)
	return len(a.res.Commands) - 1
}

// resolve fills OnPath and Target from the filesystem.
func (a *analyzer) resolve(c *Command) {
	hasPath := strings.Contains(c.Typed, "/")
	c.OnPath = !hasPath
	if !a.o.Resolve {
		return
	}
	found, err := tools.LookCommand(c.Name, a.o.Dir, a.o.PATH)
	if hasPath {
		p := c.Typed
		if !filepath.IsAbs(p) {
			p = filepath.Join(a.o.Dir, p)
		}
		if err == nil {
			if fi, err1 := os.Stat(p); err1 == nil {
				if fj, err2 := os.Stat(found); err2 == nil && os.SameFile(fi, fj) {
					c.OnPath = true
				}
			}
		}
		found, err = p, nil
	}
	if err != nil {
		return
	}
	if real, err := filepath.EvalSymlinks(found); err == nil {
		if t := CanonicalName(real); t != "" && t != c.Name {
			c.Target = t
		}
	}
}

// inner analyses the command a wrapper at idx runs: words from its
// arguments, starting at from.
func (a *analyzer) inner(idx, from, depth int, sh *shellCtx, kind CommandKind) {
	c := &a.res.Commands[idx]
	if c.Kind != KindBuiltin {
		c.Kind = kind
	}
	args := c.Args
	if from < len(args) {
		a.command(slices.Clone(args[from:]), depth+1, sh)
	}
}

// harmlessBuiltins run nothing and change nothing outside the shell (or are
// the coreutils programs of the same name); they need no allow rule when
// typed without a path.
var harmlessBuiltins = setOf(
	":", "true", "false", "cd", "pushd", "popd", "dirs", "export", "local",
	"declare", "typeset", "readonly", "set", "shift", "unset", "test", "[",
	"echo", "printf", "pwd", "read", "exit", "return", "break", "continue",
	"wait", "umask", "shopt", "getopts", "let", "type", "times", "jobs",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// commandHandlers see inside wrappers, shells and programs with global
// options. Each gets the index of its command in the analysis.
var commandHandlers map[string]func(a *analyzer, idx, depth int, sh *shellCtx)

func init() {
	commandHandlers = map[string]func(a *analyzer, idx, depth int, sh *shellCtx){
		"env":     (*analyzer).env,
		"nice":    wrapperHandler(optSpec{values: "n", longValues: []string{"adjustment"}, numeric: true}, KindWrapper, 0, nil),
		"nohup":   wrapperHandler(optSpec{}, KindWrapper, 0, nil),
		"setsid":  wrapperHandler(optSpec{flags: "cfw", longFlags: []string{"ctty", "fork", "wait"}}, KindWrapper, 0, nil),
		"stdbuf":  wrapperHandler(optSpec{values: "ioe", longValues: []string{"input", "output", "error"}}, KindWrapper, 0, nil),
		"timeout": wrapperHandler(optSpec{flags: "v", values: "sk", longFlags: []string{"preserve-status", "foreground", "verbose"}, longValues: []string{"signal", "kill-after"}}, KindWrapper, 1, nil),
		"time":    wrapperHandler(optSpec{flags: "apqvV", values: "fo", longFlags: []string{"append", "portability", "quiet", "verbose"}, longValues: []string{"format", "output"}}, KindWrapper, 0, nil),
		"ionice":  wrapperHandler(optSpec{flags: "t", values: "cnpPu", longFlags: []string{"ignore"}, longValues: []string{"class", "classdata", "pid", "pgid", "uid"}}, KindWrapper, 0, []string{"p", "P", "u", "pid", "pgid", "uid"}),
		"chrt":    wrapperHandler(optSpec{flags: "bdfiorRav", values: "TPD", longFlags: []string{"batch", "deadline", "fifo", "idle", "other", "rr", "reset-on-fork", "all-tasks", "verbose"}, longValues: []string{"sched-runtime", "sched-period", "sched-deadline"}}, KindWrapper, 1, nil),
		"taskset": wrapperHandler(optSpec{flags: "ac", longFlags: []string{"all-tasks", "cpu-list"}}, KindWrapper, 1, nil),
		"command": wrapperHandler(optSpec{flags: "pvV"}, KindWrapper, 0, nil),
		"builtin": wrapperHandler(optSpec{}, KindWrapper, 0, nil),
		"exec":    wrapperHandler(optSpec{flags: "cl", values: "a"}, KindWrapper, 0, nil),
		"doas":    wrapperHandler(optSpec{flags: "nsL", values: "uC"}, KindRunner, 0, nil),
		"pkexec":  wrapperHandler(optSpec{longFlags: []string{"disable-internal-agent", "keep-cwd"}, longValues: []string{"user"}}, KindRunner, 0, nil),
		"chroot":  wrapperHandler(optSpec{longFlags: []string{"skip-chdir"}, longValues: []string{"userspec", "groups"}}, KindRunner, 1, nil),
		"unshare": wrapperHandler(optSpec{
			flags: "mupinUCTfrcl", values: "SGRw",
			longFlags:    []string{"fork", "map-root-user", "map-current-user", "map-auto", "keep-caps", "mount-proc", "kill-child"},
			longValues:   []string{"propagation", "setgroups", "setuid", "setgid", "root", "wd", "map-user", "map-group", "map-users", "map-groups", "monotonic", "boottime"},
			longOptional: []string{"mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "mount-proc", "kill-child"},
		}, KindRunner, 0, nil),
		"nsenter": wrapperHandler(optSpec{
			flags: "aFZ", values: "tSGe", optional: "muinpUCTrw",
			longFlags:    []string{"all", "no-fork", "preserve-credentials", "follow-context"},
			longValues:   []string{"target", "setuid", "setgid", "env"},
			longOptional: []string{"mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "root", "wd"},
		}, KindRunner, 0, nil),
		"strace": wrapperHandler(optSpec{flags: "cCdDfFhiknqrtTvVwxyzZ", values: "abeEIoOpPsSuUXA"}, KindRunner, 0, nil),
		"sudo":   (*analyzer).sudo,
		"su":     (*analyzer).su,
		"runuser": func(a *analyzer, idx, depth int, sh *shellCtx) {
			a.su(idx, depth, sh)
		},
		"xargs":   (*analyzer).xargs,
		"busybox": (*analyzer).busybox,
		"flock":   (*analyzer).flock,
		"watch":   (*analyzer).watch,
		"find":    (*analyzer).find,
		"eval":    (*analyzer).eval,
		"trap":    (*analyzer).trap,
		"source":  notAnalysable("runs a script file"),
		".":       notAnalysable("runs a script file"),
		"alias":   notAnalysable("defines an alias"),
		"hash":    notAnalysable("can remap a command name to another program"),
		"enable":  notAnalysable("can load builtins from a file"),
		"mapfile": notAnalysable("can run a callback"),
		// Runners whose syntax tact does not parse.
		"setpriv":        notAnalysable("runs a command tact does not parse"),
		"systemd-run":    notAnalysable("runs a command tact does not parse"),
		"systemd-nspawn": notAnalysable("runs a command tact does not parse"),
		"script":         notAnalysable("runs a command tact does not parse"),
		"parallel":       notAnalysable("runs commands tact does not parse"),
		"sg":             notAnalysable("runs a command tact does not parse"),
		"ssh-agent":      notAnalysable("runs a command tact does not parse"),
		"xvfb-run":       notAnalysable("runs a command tact does not parse"),
		"fish":           notAnalysable("runs a fish script, which tact does not parse"),
	}
	for name, g := range programGlobals {
		commandHandlers[name] = globalOptions(g)
	}
	for name, lang := range shellLangs {
		commandHandlers[name] = shellHandler(lang)
	}
	readarray := commandHandlers["mapfile"]
	commandHandlers["readarray"] = readarray
}

// shellLangs are the shells whose -c scripts tact parses, with their dialect.
var shellLangs = map[string]syntax.LangVariant{
	"sh": syntax.LangPOSIX, "dash": syntax.LangPOSIX, "ash": syntax.LangPOSIX,
	"posh": syntax.LangPOSIX, "yash": syntax.LangPOSIX,
	"bash": syntax.LangBash, "rbash": syntax.LangBash,
	"ksh": syntax.LangMirBSDKorn, "mksh": syntax.LangMirBSDKorn, "ksh93": syntax.LangMirBSDKorn,
	"pdksh": syntax.LangMirBSDKorn, "oksh": syntax.LangMirBSDKorn,
	"zsh": syntax.LangZsh,
}

func notAnalysable(why string) func(a *analyzer, idx, depth int, sh *shellCtx) {
	return func(a *analyzer, idx, _ int, _ *shellCtx) {
		a.incomplete("%s %s", a.res.Commands[idx].Name, why)
	}
}

// optSpec describes a wrapper's options, getopt style; options end at the
// first operand or "--".
type optSpec struct {
	flags        string   // short options without a value
	values       string   // short options with a value (attached or the next word)
	optional     string   // short options whose value can only be attached
	longFlags    []string // --name
	longValues   []string // --name=value or --name value
	longOptional []string // --name or --name=value
	numeric      bool     // "-10" is an option (nice)
}

type parsedOpt struct {
	name  string // short letter or long name
	value string
}

// parseOpts reads options from args; rest is the index of the first
// operand. problem is set for an unknown option or a word in option
// position that is only known at run time.
func parseOpts(args []Word, s optSpec) (opts []parsedOpt, rest int, problem string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Dynamic {
			return opts, i, fmt.Sprintf("option position holds %s, only known when it runs", w.Text)
		}
		t := w.Text
		switch {
		case t == "--":
			return opts, i + 1, ""
		case t == "-" || !strings.HasPrefix(t, "-"):
			return opts, i, ""
		case strings.HasPrefix(t, "--"):
			name, val, hasVal := strings.Cut(t[2:], "=")
			full, kind := matchLong(name, s)
			switch kind {
			case "":
				return opts, i, fmt.Sprintf("unknown option %s", t)
			case "ambiguous":
				return opts, i, fmt.Sprintf("ambiguous option %s", t)
			case "flag":
				if hasVal {
					return opts, i, fmt.Sprintf("option --%s takes no value", full)
				}
			case "value":
				if !hasVal {
					if i+1 >= len(args) {
						return opts, i, fmt.Sprintf("option --%s needs a value", full)
					}
					i++
					if args[i].Dynamic {
						val = ""
					} else {
						val = args[i].Text
					}
				}
			}
			opts = append(opts, parsedOpt{name: full, value: val})
		default:
			if s.numeric && len(t) > 1 && isDigits(t[1:]) {
				opts = append(opts, parsedOpt{name: "n", value: t[1:]})
				continue
			}
		cluster:
			for j := 1; j < len(t); j++ {
				ch := t[j]
				switch {
				case strings.IndexByte(s.flags, ch) >= 0:
					opts = append(opts, parsedOpt{name: string(ch)})
				case strings.IndexByte(s.values, ch) >= 0:
					val := t[j+1:]
					if val == "" {
						if i+1 >= len(args) {
							return opts, i, fmt.Sprintf("option -%c needs a value", ch)
						}
						i++
						if !args[i].Dynamic {
							val = args[i].Text
						}
					}
					opts = append(opts, parsedOpt{name: string(ch), value: val})
					break cluster
				case strings.IndexByte(s.optional, ch) >= 0:
					opts = append(opts, parsedOpt{name: string(ch), value: t[j+1:]})
					break cluster
				default:
					return opts, i, fmt.Sprintf("unknown option -%c in %s", ch, t)
				}
			}
		}
	}
	return opts, len(args), ""
}

// matchLong finds a long option by its name or an unambiguous prefix, as
// getopt_long does.
func matchLong(name string, s optSpec) (full, kind string) {
	groups := []struct {
		names []string
		kind  string
	}{{s.longFlags, "flag"}, {s.longValues, "value"}, {s.longOptional, "optional"}}
	var hits int
	for _, g := range groups {
		for _, n := range g.names {
			if n == name {
				return n, g.kind
			}
			if name != "" && strings.HasPrefix(n, name) {
				hits++
				full, kind = n, g.kind
			}
		}
	}
	switch hits {
	case 0:
		return "", ""
	case 1:
		return full, kind
	}
	return "", "ambiguous"
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func hasOpt(opts []parsedOpt, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}

// wrapperHandler sees through a wrapper: options, then skip operands (a
// duration, a priority, a new root), then the command. noCommand names
// options after which the wrapper runs no command (ionice -p PID).
func wrapperHandler(s optSpec, kind CommandKind, skip int, noCommand []string) func(a *analyzer, idx, depth int, sh *shellCtx) {
	return func(a *analyzer, idx, depth int, sh *shellCtx) {
		c := &a.res.Commands[idx]
		opts, rest, problem := parseOpts(c.Args, s)
		if c.Kind != KindBuiltin {
			c.Kind = kind
		}
		if problem != "" {
			a.incomplete("%s: %s", c.Name, problem)
			return
		}
		if hasOpt(opts, noCommand...) {
			return
		}
		if c.Name == "command" && hasOpt(opts, "v", "V") {
			return // command -v only looks a name up
		}
		for k := 0; k < skip && rest < len(c.Args); k++ {
			if c.Args[rest].Dynamic {
				a.incomplete("%s: operand %s is only known when it runs", c.Name, c.Args[rest].Text)
				return
			}
			rest++
		}
		a.inner(idx, rest, depth, sh, kind)
	}
}

// riskyEnvNames are variables that make programs load or run other code, so
// setting them (env X=..., X=... cmd, export X=...) makes a call not fully
// analysable.
var riskyEnvNames = setOf(
	"PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS",
	"PAGER", "EDITOR", "VISUAL", "MANPAGER", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS",
	"PERL5OPT", "PERL5LIB", "PERLLIB", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME",
	"NODE_OPTIONS", "NODE_PATH", "RUBYOPT", "RUBYLIB",
	"GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
	"GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_EXEC_PATH", "GIT_PROXY_COMMAND",
	"GIT_TEMPLATE_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
	"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_DIR", "GIT_WORK_TREE",
)

func riskyEnvName(name string) bool {
	return riskyEnvNames[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_") ||
		strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "GIT_CONFIG_")
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// assignments skips NAME=VALUE words from args[from:] and returns the index
// after them; risky names make the analysis incomplete.
func (a *analyzer) assignments(who string, args []Word, from int) (int, bool) {
	for from < len(args) {
		w := args[from]
		if w.Dynamic {
			a.incomplete("%s: %s is only known when it runs", who, w.Text)
			return from, false
		}
		name, _, ok := strings.Cut(w.Text, "=")
		if !ok {
			break
		}
		if riskyEnvName(name) || !envNameRE.MatchString(name) {
			a.incomplete("%s sets %s, which can make the command run other code", who, name)
			return from, false
		}
		from++
	}
	return from, true
}

var envOpts = optSpec{
	flags: "i0v", values: "uCS",
	longFlags:    []string{"ignore-environment", "null", "debug", "list-signal-handling"},
	longValues:   []string{"unset", "chdir", "split-string"},
	longOptional: []string{"block-signal", "default-signal", "ignore-signal"},
}

func (a *analyzer) env(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindWrapper
	args := c.Args
	// "-" alone is an old spelling of -i.
	if len(args) > 0 && !args[0].Dynamic && args[0].Text == "-" {
		args = args[1:]
	}
	opts, rest, problem := parseOpts(args, envOpts)
	if problem != "" {
		a.incomplete("env: %s", problem)
		return
	}
	var split []Word
	for _, o := range opts {
		if o.name == "S" || o.name == "split-string" {
			if strings.ContainsAny(o.value, `$\`) || o.value == "" {
				a.incomplete("env -S %q uses escapes or variables tact does not expand", o.value)
				return
			}
			words, err := shellquote.Split(o.value)
			if err != nil {
				a.incomplete("env -S %q: %v", o.value, err)
				return
			}
			for _, w := range words {
				split = append(split, Word{Text: w})
			}
		}
	}
	tail := append(split, args[rest:]...)
	from, ok := a.assignments("env", tail, 0)
	if !ok || from >= len(tail) {
		return
	}
	a.command(slices.Clone(tail[from:]), depth+1, sh)
}

var sudoOpts = optSpec{
	flags: "AbBEeHiKklnPSsVv", values: "CDgpRrTtUuc", optional: "h",
	longFlags: []string{"askpass", "background", "bell", "edit", "help", "login", "non-interactive",
		"preserve-groups", "remove-timestamp", "reset-timestamp", "shell", "stdin", "validate",
		"version", "list", "set-home"},
	longValues:   []string{"close-from", "chdir", "group", "prompt", "role", "type", "command-timeout", "other-user", "user", "chroot", "login-class"},
	longOptional: []string{"preserve-env", "host"},
}

func (a *analyzer) sudo(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindRunner
	opts, rest, problem := parseOpts(c.Args, sudoOpts)
	if problem != "" {
		a.incomplete("sudo: %s", problem)
		return
	}
	if hasOpt(opts, "e", "edit") {
		return // sudoedit: edits files, runs no command
	}
	if hasOpt(opts, "R", "chroot") {
		a.incomplete("sudo --chroot runs a program tact cannot resolve")
	}
	from, ok := a.assignments("sudo", c.Args, rest)
	if !ok || from >= len(c.Args) {
		return
	}
	a.command(slices.Clone(c.Args[from:]), depth+1, sh)
}

var suOpts = optSpec{
	flags: "lmpPf", values: "cgGswu",
	longFlags:  []string{"login", "preserve-environment", "pty", "fast"},
	longValues: []string{"command", "session-command", "group", "supp-group", "shell", "whitelist-environment", "user"},
}

// su and runuser: "su [opts] [-] [user [args]]" runs -c's script with the
// user's shell (options may follow the user); runuser -u USER runs an argv.
func (a *analyzer) su(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindRunner
	args := c.Args
	if c.Name == "runuser" {
		opts, rest, problem := parseOpts(args, suOpts)
		if problem == "" && hasOpt(opts, "u", "user") {
			if rest < len(args) {
				a.command(slices.Clone(args[rest:]), depth+1, sh)
			}
			return
		}
	}
	var opts []parsedOpt
	var operands []Word
	for i := 0; i < len(args); {
		w := args[i]
		if !w.Dynamic && w.Text == "-" {
			i++
			continue
		}
		if !w.Dynamic && strings.HasPrefix(w.Text, "-") && w.Text != "--" {
			more, n, problem := parseOpts(args[i:], suOpts)
			if problem != "" {
				a.incomplete("%s: %s", c.Name, problem)
				return
			}
			opts = append(opts, more...)
			i += max(n, 1)
			continue
		}
		if !w.Dynamic && w.Text == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		operands = append(operands, w)
		i++
	}
	script, hasScript := "", false
	for _, o := range opts {
		if o.name == "c" || o.name == "command" || o.name == "session-command" {
			script, hasScript = o.value, true
		}
	}
	switch {
	case len(operands) > 1:
		a.incomplete("%s passes arguments to a login shell (a script file tact cannot read)", c.Name)
	case hasScript && script == "":
		a.incomplete("%s -c: the script is only known when it runs", c.Name)
	case hasScript:
		a.script(script, syntax.LangPOSIX, depth+1)
	}
}

var xargsOpts = optSpec{
	flags: "0prtx", values: "adEILnPs", optional: "eil",
	longFlags:    []string{"null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits"},
	longValues:   []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"},
	longOptional: []string{"eof", "replace", "max-lines"},
}

// xargs runs its command (echo by default) with more arguments read from
// its input; those are dynamic.
func (a *analyzer) xargs(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindWrapper
	_, rest, problem := parseOpts(c.Args, xargsOpts)
	if problem != "" {
		a.incomplete("xargs: %s", problem)
		return
	}
	words := slices.Clone(c.Args[rest:])
	if len(words) == 0 {
		words = []Word{{Text: "echo"}}
	}
	words = append(words, Word{Text: "(arguments from input)", Dynamic: true})
	a.command(words, depth+1, sh)
}

// busybox APPLET args runs the applet; "busybox --list" and the like run
// nothing else.
func (a *analyzer) busybox(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindWrapper
	if len(c.Args) == 0 {
		return
	}
	if first := c.Args[0]; !first.Dynamic && strings.HasPrefix(first.Text, "-") {
		return
	}
	a.command(slices.Clone(c.Args), depth+1, sh)
}

var flockOpts = optSpec{
	flags: "sexunoFhV", values: "wEc",
	longFlags:  []string{"shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose", "help", "version"},
	longValues: []string{"timeout", "wait", "conflict-exit-code", "command"},
}

// flock [opts] FILE CMD ARGS | flock [opts] FILE -c SCRIPT | flock FD.
func (a *analyzer) flock(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindWrapper
	opts, rest, problem := parseOpts(c.Args, flockOpts)
	if problem != "" {
		a.incomplete("flock: %s", problem)
		return
	}
	rest++ // the lock file or descriptor
	// Options may also follow the file: flock FILE -c SCRIPT.
	if rest < len(c.Args) && !c.Args[rest].Dynamic && strings.HasPrefix(c.Args[rest].Text, "-") {
		more, r, problem := parseOpts(c.Args[rest:], flockOpts)
		if problem != "" {
			a.incomplete("flock: %s", problem)
			return
		}
		opts = append(opts, more...)
		rest += r
	}
	for _, o := range opts {
		if o.name == "c" || o.name == "command" {
			if o.value == "" {
				a.incomplete("flock -c: the script is only known when it runs")
				return
			}
			a.script(o.value, syntax.LangPOSIX, depth+1)
			return
		}
	}
	if rest < len(c.Args) {
		a.command(slices.Clone(c.Args[rest:]), depth+1, sh)
	}
}

var watchOpts = optSpec{
	flags: "bcCetgprwxhv", values: "nqs", optional: "d",
	longFlags:    []string{"beep", "color", "no-color", "errexit", "no-title", "chgexit", "precise", "no-rerun", "no-wrap", "exec", "help", "version"},
	longValues:   []string{"interval", "equexit", "shotsfile"},
	longOptional: []string{"differences"},
}

// watch runs its arguments joined into one "sh -c" script, or as an argv
// with -x.
func (a *analyzer) watch(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindWrapper
	opts, rest, problem := parseOpts(c.Args, watchOpts)
	if problem != "" {
		a.incomplete("watch: %s", problem)
		return
	}
	args := c.Args[rest:]
	if len(args) == 0 {
		return
	}
	if hasOpt(opts, "x", "exec") {
		a.command(slices.Clone(args), depth+1, sh)
		return
	}
	parts := make([]string, len(args))
	for i, w := range args {
		if w.Dynamic {
			a.incomplete("watch: %s is only known when it runs", w.Text)
			return
		}
		parts[i] = w.Text
	}
	a.script(strings.Join(parts, " "), syntax.LangPOSIX, depth+1)
}

// find runs the commands of -exec, -execdir, -ok and -okdir, up to ";" or
// "+"; "{}" stands for each file found.
func (a *analyzer) find(idx, depth int, sh *shellCtx) {
	args := a.res.Commands[idx].Args
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Dynamic {
			continue
		}
		switch w.Text {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		var words []Word
		end := -1
		for j := i + 1; j < len(args); j++ {
			t := args[j]
			if !t.Dynamic && (t.Text == ";" || (t.Text == "+" && j > i+1 && !args[j-1].Dynamic && args[j-1].Text == "{}")) {
				end = j
				break
			}
			if !t.Dynamic && strings.Contains(t.Text, "{}") {
				t = Word{Text: t.Text, Dynamic: true}
			}
			words = append(words, t)
		}
		if end < 0 {
			a.incomplete("find %s has no terminating \";\" or \"+\"", w.Text)
			return
		}
		a.command(words, depth+1, sh)
		i = end
	}
}

// eval with literal arguments runs them as a script; tact analyses that
// script but, as eval usually builds code at run time, never treats the
// call as fully analysable.
func (a *analyzer) eval(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindWrapper
	a.incomplete("eval runs code built when it runs")
	parts := make([]string, 0, len(c.Args))
	for _, w := range c.Args {
		if w.Dynamic {
			return
		}
		parts = append(parts, w.Text)
	}
	lang := syntax.LangPOSIX
	if sh != nil {
		lang = sh.lang
	}
	a.script(strings.Join(parts, " "), lang, depth+1)
}

// trap ACTION SIGNALS runs ACTION as a script when a signal comes.
func (a *analyzer) trap(idx, depth int, sh *shellCtx) {
	c := &a.res.Commands[idx]
	c.Kind = KindBuiltin
	args := c.Args
	if len(args) > 0 && !args[0].Dynamic && args[0].Text == "--" {
		args = args[1:]
	}
	if len(args) < 2 {
		return // trap, trap -p, trap -l, trap SIG
	}
	act := args[0]
	if act.Dynamic {
		a.incomplete("trap: the action %s is only known when it runs", act.Text)
		return
	}
	if act.Text == "-" || act.Text == "" {
		return
	}
	lang := syntax.LangPOSIX
	if sh != nil {
		lang = sh.lang
	}
	a.script(act.Text, lang, depth+1)
}

// shellHandler parses "sh [options] -c SCRIPT [name [args]]"; a script file
// or a script read from input cannot be analysed.
func shellHandler(lang syntax.LangVariant) func(a *analyzer, idx, depth int, sh *shellCtx) {
	return func(a *analyzer, idx, depth int, _ *shellCtx) {
		c := &a.res.Commands[idx]
		c.Kind = KindWrapper
		args := c.Args
		cmdMode := false
		i := 0
	options:
		for ; i < len(args); i++ {
			w := args[i]
			if w.Dynamic {
				a.incomplete("%s: option %s is only known when it runs", c.Name, w.Text)
				return
			}
			t := w.Text
			switch {
			case t == "--" || t == "-":
				i++
				break options
			case strings.HasPrefix(t, "--"):
				switch t {
				case "--login", "--norc", "--noprofile", "--posix", "--noediting", "--restricted",
					"--verbose", "--debugger", "--dump-strings", "--dump-po-strings", "--pretty-print":
				case "--rcfile", "--init-file":
					i++
				case "--version", "--help":
					return
				default:
					a.incomplete("%s: unknown option %s", c.Name, t)
					return
				}
			case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
				for _, ch := range t[1:] {
					switch ch {
					case 'c':
						cmdMode = true
					case 'o', 'O':
						i++ // the option name
					case 's':
						a.incomplete("%s -s reads its script from input", c.Name)
						return
					}
				}
			default:
				break options
			}
		}
		switch {
		case cmdMode && i < len(args):
			if args[i].Dynamic {
				a.incomplete("%s -c: the script %s is only known when it runs", c.Name, args[i].Text)
				return
			}
			a.script(args[i].Text, lang, depth+1)
		case cmdMode:
			a.incomplete("%s -c without a script", c.Name)
		case i < len(args):
			a.incomplete("%s runs the script file %s, which tact cannot analyse", c.Name, args[i].Text)
		default:
			a.incomplete("%s reads its script from input", c.Name)
		}
	}
}

// script parses src as a shell script and analyses every command in it,
// including those in pipelines, lists, subshells, functions and command
// substitutions.
func (a *analyzer) script(src string, lang syntax.LangVariant, depth int) {
	if depth > maxAnalyzeDepth {
		a.incomplete("commands nested more than %d deep", maxAnalyzeDepth)
		return
	}
	a.noteText(src)
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
	if err != nil {
		a.incomplete("cannot parse the shell script: %v", err)
		return
	}
	sh := &shellCtx{lang: lang, funcs: map[string]bool{}}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok {
			if fd.Name != nil {
				sh.funcs[fd.Name.Value] = true
			}
			for _, l := range fd.Names {
				sh.funcs[l.Value] = true
			}
		}
		return true
	})
	syntax.Walk(f, func(n syntax.Node) bool {
		if len(a.res.Commands) >= MaxCommands {
			a.incomplete("more than %d commands", MaxCommands)
			return false
		}
		switch x := n.(type) {
		case *syntax.CallExpr:
			a.assigns(x.Assigns)
			words := make([]Word, len(x.Args))
			for i, w := range x.Args {
				words[i] = a.word(w, lang)
			}
			a.command(words, depth, sh)
		case *syntax.DeclClause:
			a.assigns(x.Args)
		case *syntax.Redirect:
			a.redirect(x, lang)
		case *syntax.FuncDecl:
			if fd := x; fd.Name == nil && len(fd.Names) == 0 {
				a.incomplete("anonymous function")
			}
		}
		return true
	})
}

func (a *analyzer) assigns(as []*syntax.Assign) {
	for _, as := range as {
		if as.Name != nil && riskyEnvName(as.Name.Value) {
			a.incomplete("the script sets %s, which can make commands run other code", as.Name.Value)
		}
	}
}

// redirect: writing a file through a redirection is a write no rule can
// check, so it makes the call not fully analysable (the standard streams and
// /dev/null are fine).
func (a *analyzer) redirect(r *syntax.Redirect, lang syntax.LangVariant) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.DplOut:
	default:
		return
	}
	if r.Word == nil {
		return
	}
	w := a.word(r.Word, lang)
	if !w.Dynamic {
		t := w.Text
		if r.Op == syntax.DplOut && (t == "-" || isDigits(strings.TrimSuffix(t, "-"))) {
			return
		}
		switch t {
		case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
			return
		}
		if strings.HasPrefix(t, "/dev/fd/") && isDigits(t[len("/dev/fd/"):]) {
			return
		}
	}
	a.incomplete("the script writes %s through a redirection", w.Text)
}

// word evaluates a shell word when its value is fixed; anything expanded at
// run time makes it dynamic.
func (a *analyzer) word(w *syntax.Word, lang syntax.LangVariant) Word {
	if wordIsDynamic(w, lang) {
		var buf bytes.Buffer
		if err := syntax.NewPrinter().Print(&buf, w); err != nil {
			buf.Reset()
			buf.WriteString("(a word)")
		}
		return Word{Text: buf.String(), Dynamic: true}
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeLit(x.Value))
		case *syntax.SglQuoted:
			if !x.Dollar {
				b.WriteString(x.Value)
				continue
			}
			s, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{part}})
			if err != nil {
				return Word{Text: "(a word)", Dynamic: true}
			}
			b.WriteString(s)
		default: // "..." as the shell decodes it
			s, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{part}})
			if err != nil {
				return Word{Text: "(a word)", Dynamic: true}
			}
			b.WriteString(s)
		}
	}
	return Word{Text: b.String()}
}

// unescapeLit removes the backslashes of an unquoted literal as the shell
// does: "\x" is "x", a backslash-newline disappears.
func unescapeLit(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func wordIsDynamic(w *syntax.Word, lang syntax.LangVariant) bool {
	for i, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			if i == 0 && (strings.HasPrefix(x.Value, "~") || (lang == syntax.LangZsh && strings.HasPrefix(x.Value, "="))) {
				return true
			}
			if litHasGlob(x.Value) {
				return true
			}
			if lang != syntax.LangPOSIX && strings.Contains(x.Value, "{") &&
				(strings.Contains(x.Value, ",") || strings.Contains(x.Value, "..")) {
				return true // brace expansion
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return true
				}
			}
		default:
			return true
		}
	}
	return false
}

// litHasGlob reports an unescaped pathname-expansion character.
func litHasGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				return true
			}
		}
	}
	return false
}

// interpreters run inline code given with these options.
var interpreterCodeFlags = map[string]string{
	"python": "c", "pypy": "c", "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep",
	"deno": "", "bun": "e", "php": "rBRFE", "lua": "e", "luajit": "e", "Rscript": "e", "osascript": "e",
	"tclsh": "", "julia": "e", "pwsh": "cC",
}

// interpreterValueOpts take the next word as their value.
var interpreterValueOpts = setOf("python -W", "python -X", "pypy -W", "pypy -X",
	"node -r", "nodejs -r", "ruby -I", "ruby -r", "perl -I", "perl -M", "lua -l")

var interpreterRE = regexp.MustCompile(`^(python|pypy|perl|ruby|node|nodejs|php|lua|luajit)[0-9.]*$`)

func IsInterpreter(name string) bool {
	if _, ok := interpreterCodeFlags[name]; ok {
		return true
	}
	return interpreterRE.MatchString(name)
}

func interpreterBase(name string) string {
	if m := interpreterRE.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}

// interpreter marks inline code (python -c, perl -e, node --eval) as not
// analysable: it is a command line in another language.
func (a *analyzer) interpreter(idx int) {
	c := a.res.Commands[idx]
	base := interpreterBase(c.Name)
	flags := interpreterCodeFlags[base]
	for i := 0; i < len(c.Args); i++ {
		w := c.Args[i]
		if w.Dynamic {
			a.incomplete("%s: argument %s is only known when it runs", c.Name, w.Text)
			return
		}
		t := w.Text
		switch {
		case t == "--" || !strings.HasPrefix(t, "-") || t == "-":
			return // the script (or stdin): a program file, like make's Makefile
		case c.Name == "deno" && t == "eval", strings.HasPrefix(t, "--eval"), strings.HasPrefix(t, "--print"),
			strings.HasPrefix(t, "--command"), strings.HasPrefix(t, "--exec"):
			a.incomplete("%s runs inline code tact cannot analyse", c.Name)
			return
		case strings.HasPrefix(t, "--"):
			continue
		case interpreterValueOpts[base+" "+t]:
			i++ // the option's value
			continue
		}
		for _, ch := range t[1:] {
			if strings.ContainsRune(flags, ch) {
				a.incomplete("%s %s runs inline code tact cannot analyse", c.Name, t)
				return
			}
		}
		// Python's "-m module" ends its options like a script does.
		if strings.HasPrefix(interpreterBase(c.Name), "py") && strings.Contains(t, "m") {
			return
		}
	}
}

// globalOpts describes a program's options that may come before its
// subcommand.
type globalOpts struct {
	flags  []string // take no value
	values []string // take a value: "-C dir", "--git-dir=x" or "--git-dir x"
	// equalsOK: an unknown "--name=value" is skipped (kubectl, docker);
	// otherwise an unknown option makes the call not fully analysable.
	equalsOK bool
	// check looks at an option and its value (git -c KEY=VALUE) and may
	// make the call not fully analysable.
	check func(a *analyzer, name, opt, value string)
}

var gitGlobals = globalOpts{
	flags: []string{"-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects",
		"--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
		"--no-optional-locks", "--no-lazy-fetch", "--no-advice"},
	values: []string{"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env",
		"--exec-path", "--super-prefix", "--attr-source", "--list-cmds"},
	check: checkGitOption,
}

// gitSafeConfig are config keys (prefixes) "git -c" may set without making
// git run other programs; any other key (alias.*, core.pager, core.sshCommand,
// core.fsmonitor, diff.external, credential.helper, ...) could, so it makes
// the call not fully analysable.
var gitSafeConfig = []string{
	"color.", "user.name", "user.email", "advice.", "safe.directory", "init.defaultbranch",
	"core.quotepath", "core.autocrlf", "core.safecrlf", "core.longpaths", "core.abbrev",
	"log.", "format.pretty", "commit.gpgsign", "tag.gpgsign", "pull.rebase", "pull.ff",
	"merge.ff", "status.", "diff.renames", "diff.noprefix", "gc.auto", "fetch.prune",
	"push.default", "protocol.version", "i18n.", "column.ui", "maintenance.auto",
	"versionsort.suffix", "http.sslverify", "submodule.recurse", "rebase.autostash",
}

func checkGitOption(a *analyzer, name, opt, value string) {
	switch opt {
	case "-c", "--config-env":
		key, _, _ := strings.Cut(value, "=")
		key = strings.ToLower(key)
		for _, p := range gitSafeConfig {
			if key == p || (strings.HasSuffix(p, ".") && strings.HasPrefix(key, p)) {
				return
			}
		}
		a.incomplete("git %s %s can make git run other programs", opt, value)
	case "--exec-path":
		a.incomplete("git --exec-path makes git run programs from another directory")
	}
}

var dockerGlobals = globalOpts{
	flags:    []string{"-D", "--debug", "--tls", "--tlsverify", "--remote", "-r"},
	values:   []string{"--config", "-c", "--context", "-H", "--host", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey", "--connection", "--url", "--root", "--runroot", "--storage-driver", "--cgroup-manager", "--identity"},
	equalsOK: true,
}

var kubectlGlobals = globalOpts{
	flags: []string{"--insecure-skip-tls-verify", "--match-server-version", "--warnings-as-errors", "--disable-compression"},
	values: []string{"-n", "--namespace", "--context", "--kubeconfig", "-s", "--server", "--cluster", "--user",
		"--token", "--as", "--as-group", "--as-uid", "--cache-dir", "--certificate-authority",
		"--client-certificate", "--client-key", "--request-timeout", "-v", "--v", "--log-file",
		"--password", "--username", "--tls-server-name", "--profile", "--profile-output"},
	equalsOK: true,
}

var systemctlGlobals = globalOpts{
	flags: []string{"-a", "--all", "-l", "--full", "-q", "--quiet", "--user", "--system", "--global",
		"--no-block", "--now", "-f", "--force", "-i", "--no-pager", "--no-legend", "--no-ask-password",
		"--no-reload", "--no-wall", "--runtime", "--show-types", "--failed", "-r", "--recursive",
		"--dry-run", "--wait", "--firmware-setup", "--plain", "--reverse", "--after", "--before", "--value"},
	values: []string{"-t", "--type", "-p", "--property", "-P", "-s", "--signal", "-H", "--host",
		"-M", "--machine", "-n", "--lines", "-o", "--output", "--state", "--kill-whom", "--kill-value",
		"--root", "--job-mode", "--what", "--message", "--preset-mode", "--image", "--when", "--timestamp"},
	equalsOK: true,
}

var npmGlobals = globalOpts{
	flags:  []string{"-g", "--global", "-s", "--silent", "-q", "--quiet", "-d", "--verbose", "-y", "--yes", "--no-audit", "--no-fund", "--offline", "--prefer-offline", "--ignore-scripts"},
	values: []string{"--prefix", "-C", "--userconfig", "--cache", "--registry", "-w", "--workspace", "--loglevel"},
}

// programGlobals are the programs whose options before the subcommand are
// left out of Command.Args.
var programGlobals = map[string]globalOpts{
	"git": gitGlobals, "docker": dockerGlobals, "podman": dockerGlobals,
	"kubectl": kubectlGlobals, "systemctl": systemctlGlobals, "npm": npmGlobals,
}

// GlobalOptions counts the options args starts with that the program name
// takes before its subcommand (git -C dir, kubectl -n ns) and the analyser
// looks through; 0 for programs it knows no such options of.
func GlobalOptions(name string, args []string) int {
	g, ok := programGlobals[name]
	if !ok {
		return 0
	}
	words := make([]Word, len(args))
	for i, w := range args {
		words[i] = Word{Text: w}
	}
	rest, _ := skipGlobals(nil, name, words, g)
	return rest
}

// globalOptions leaves out a program's options before its subcommand, so
// "git -C dir push" matches rules on "git push".
func globalOptions(g globalOpts) func(a *analyzer, idx, depth int, sh *shellCtx) {
	return func(a *analyzer, idx, _ int, _ *shellCtx) {
		c := &a.res.Commands[idx]
		rest, problem := skipGlobals(a, c.Name, c.Args, g)
		if problem != "" {
			a.incomplete("%s: %s", c.Name, problem)
		}
		c.Args = c.Args[rest:]
	}
}

func skipGlobals(a *analyzer, name string, args []Word, g globalOpts) (rest int, problem string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Dynamic {
			return i, fmt.Sprintf("option position holds %s, only known when it runs", w.Text)
		}
		t := w.Text
		if t == "--" {
			return i + 1, ""
		}
		if !strings.HasPrefix(t, "-") || t == "-" {
			return i, ""
		}
		opt, val, hasVal := strings.Cut(t, "=")
		switch {
		case slices.Contains(g.flags, t):
		case slices.Contains(g.values, opt) && hasVal && strings.HasPrefix(opt, "--"):
			if g.check != nil && a != nil {
				g.check(a, name, opt, val)
			}
		case slices.Contains(g.values, t):
			if i+1 >= len(args) {
				return i, fmt.Sprintf("option %s needs a value", t)
			}
			i++
			if args[i].Dynamic {
				if g.check != nil && a != nil {
					g.check(a, name, t, args[i].Text)
				}
				continue
			}
			if g.check != nil && a != nil {
				g.check(a, name, t, args[i].Text)
			}
		case len(t) > 2 && t[1] != '-' && slices.Contains(g.values, t[:2]):
			// Attached short value: -Cdir, -nprod.
			if g.check != nil && a != nil {
				g.check(a, name, t[:2], t[2:])
			}
		case g.equalsOK && strings.HasPrefix(t, "--") && hasVal:
		default:
			return i, fmt.Sprintf("unknown option %s before the subcommand", t)
		}
	}
	return len(args), ""
}
