// Package cmdline is the command analyser: it turns a run_command argv into
// every command it will run, so policy rules match what runs rather than how
// it was spelled: "/bin/rm x", "env rm x", "sh -c 'rm x'" and "nice rm x" all
// run rm. What it cannot know before the command runs (a command name held in
// a variable, eval, a script file, a wrapper option it does not know) marks
// the analysis incomplete; policy then lets no command allow rule approve the
// call.
//
// The walker (analyzer.go) dispatches each command to a handler: wrappers
// (wrappers.go) and shells (shell.go) analyse the command they run, with the
// option grammar of options.go; programs.go knows program-specific options
// (find -exec, interpreters' inline code, git's and others' global options).
package cmdline

import (
	"strings"

	"github.com/kballard/go-shellquote"
)

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
