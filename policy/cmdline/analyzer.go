package cmdline

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/tactcli/tact/tools"
)

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
