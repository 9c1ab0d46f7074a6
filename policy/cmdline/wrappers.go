package cmdline

import (
	"regexp"
	"slices"
	"strings"

	"github.com/kballard/go-shellquote"
	"mvdan.cc/sh/v3/syntax"
)

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
