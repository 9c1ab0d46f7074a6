package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/policy/cmdline"
	"github.com/tactcli/tact/tools"
)

// AlwaysRule is the rule a "don't ask again" answer adds for c, built from
// what the command analyser finds so that it covers c and no more than it
// must:
//   - a command that runs one program (after looking through wrappers such
//     as env, nice, timeout and sh -c) that only reads whatever its
//     arguments (readOnlyPrograms: ls, cat, grep, ...): that program (by
//     name when it is the one PATH finds, else as typed) and its first
//     argument when it looks like a subcommand; for git, docker, kubectl
//     and the like, a read-only subcommand (readOnlySubcommands: "git
//     status");
//   - any other program, whose effect depends on its arguments (sed 1e,
//     find -delete, tar --to-command, rm, make VAR=..., a script's
//     interpreter): an exact rule, the program and every argument seen,
//     which approves that call and nothing more (no extra argument);
//   - a command that runs several programs, or one through a runner such as
//     sudo: the whole command line, exact, which matches only that line;
//   - a command tact cannot fully analyse: no rule (an error saying why), as
//     no allow rule can cover it;
//   - a file tool: tool plus the path's directory and "/**" (the file itself
//     at the top level).
func AlwaysRule(env *tools.Env, c tools.Call) (Rule, error) {
	f := factsOf(env, c)
	r := Rule{Tool: f.tool}
	switch {
	case f.isCmd && f.cmd == nil:
		return Rule{}, errors.New("the command cannot be split into words")
	case f.cmd != nil:
		if !f.cmd.Complete {
			return Rule{}, fmt.Errorf("tact cannot fully analyse this command (%s), so no allow rule can cover it", strings.Join(f.cmd.Problems, "; "))
		}
		r.Command, r.Exact = alwaysCommand(f)
	case len(f.more) > 0:
		// One glob for paths in different places would cover more than
		// this call.
		return Rule{}, errors.New("the call names several paths, and one rule's path would cover more than this call")
	case f.hasPath && f.inside && f.path != "." && f.declared:
		if dir := path.Dir(f.path); dir != "." {
			r.Path = escapeGlob(dir) + "/**"
		} else {
			r.Path = escapeGlob(f.path)
		}
	}
	if r.Tool == "" && r.Command == "" && r.Path == "" {
		r.Tool = "*"
	}
	if err := r.validate(); err != nil {
		return Rule{}, fmt.Errorf("no rule fits this call: %v", err)
	}
	if allow, _ := (&Policy{Allow: []Rule{r}}).Match(env, c); allow == nil {
		return Rule{}, errors.New("no rule would cover exactly this call")
	}
	return r, nil
}

// readOnlyPrograms only read, whatever their options and operands: none
// runs another program, writes, or deletes a file. An "always" rule for
// one covers the program (and its first word when it looks like a
// subcommand). Left out on purpose though they mostly read: sort -o, uniq
// OUT, tree -o, file -C, xxd -r (write); rg --pre, fd -x, less !cmd (run);
// date -s, hostname NAME (change the system).
var readOnlyPrograms = setOf("ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "stat", "du", "df",
	"pwd", "uname", "whoami", "id", "which", "basename", "dirname", "realpath", "readlink", "nproc", "cut",
	"tr", "cmp", "diff", "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum", "jq", "column",
	"nl", "rev", "fold", "paste", "join", "comm", "od", "hexdump", "strings", "seq", "expr", "printenv",
	"echo", "printf", "true", "false", "test", "[")

// readOnlySubcommands are the subcommands of programs that do all kinds of
// things whose every option only reads: "git status" gets a subcommand
// rule, "git clean -n" an exact one (git clean -fdx deletes), as does
// "git log --oneline" (git log --output=FILE writes).
var readOnlySubcommands = map[string]map[string]bool{
	"git":       setOf("status", "rev-parse", "ls-files", "ls-tree", "describe", "blame", "shortlog", "show-ref", "rev-list", "merge-base", "count-objects", "version"),
	"docker":    setOf("ps", "images", "version", "info", "inspect", "logs"),
	"podman":    setOf("ps", "images", "version", "info", "inspect", "logs"),
	"kubectl":   setOf("get", "describe", "logs", "version", "explain", "api-resources", "top"),
	"systemctl": setOf("status", "is-active", "is-enabled", "is-failed", "list-units", "list-unit-files", "show", "cat"),
	"npm":       setOf("ls", "view", "outdated"),
	"cargo":     setOf("metadata", "tree", "version"),
	"go":        setOf("version"),
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// alwaysCommand picks the command words of an "always" rule, and whether
// the rule is exact (see AlwaysRule).
func alwaysCommand(f callFacts) (command string, exact bool) {
	var needed []cmdline.Command
	for _, c := range f.cmd.Commands {
		if c.Kind != cmdline.KindWrapper && c.Kind != cmdline.KindBuiltin && c.Kind != cmdline.KindFunction {
			needed = append(needed, c)
		}
	}
	if len(needed) == 0 && len(f.cmd.Commands) > 0 {
		needed = f.cmd.Commands[:1]
	}
	if len(needed) != 1 || needed[0].Kind == cmdline.KindRunner || needed[0].Kind == cmdline.KindFunction {
		return shellquote.Join(f.argv...), true
	}
	c := needed[0]
	prog := c.Name
	if !c.OnPath {
		prog = c.Typed
	}
	words := []string{prog}
	sub := ""
	if len(c.Args) > 0 && !c.Args[0].Dynamic && c.Args[0].Text != "" && !strings.HasPrefix(c.Args[0].Text, "-") {
		sub = c.Args[0].Text
	}
	switch {
	case c.OnPath && readOnlyPrograms[c.Name]:
		if sub != "" {
			words = append(words, sub)
		}
		return shellquote.Join(words...), false
	case c.OnPath && sub != "" && readOnlySubcommands[c.Name][sub]:
		return shellquote.Join(prog, sub), false
	}
	for _, a := range c.Args {
		if a.Dynamic {
			// Only known when it runs: the whole line, matched as typed.
			return shellquote.Join(f.argv...), true
		}
		words = append(words, a.Text)
	}
	return shellquote.Join(words...), true
}
