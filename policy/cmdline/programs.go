package cmdline

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

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
