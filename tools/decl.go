package tools

import "sync"

// Decl is what a tool says about its arguments beyond their schema, so
// that the code around the tools (policy's rules and its approval
// requests, the hooks' tool_input and matcher names, the MCP server's
// annotations) reads it from the tool instead of keeping its own list of
// tool names. A new tool that fills it in is path-checked, described and
// matched like the others without a change outside tools/.
type Decl struct {
	// Paths are the arguments that name a path in the workspace, resolved
	// with Env.Resolve: policy's path rules match them (a deny rule any
	// of them, an allow rule all of them, and never one leading out),
	// hooks see them resolved, and approval requests show the first.
	Paths []string
	// FilePath gives a hook's tool_input the first path made absolute as
	// file_path too, the field Claude Code's Read, Write and Edit hooks
	// read.
	FilePath bool
	// Command is the argument holding a command line (a string, split
	// with POSIX shell quoting, or a list of words) that policy's command
	// rules match and the command analyser reads; WorkDir is the argument
	// naming the directory it runs in (a hook's cwd).
	Command, WorkDir string
	// Content is the argument whose text replaces the whole file at the
	// first path; Old and New are the arguments whose texts replace one
	// another in it. An approval request shows the change as a diff.
	Content, Old, New string
	// HookNames are Claude Code's names for the tool, so that a hook
	// matcher written for Claude Code ("Bash", "Edit|Write") matches.
	HookNames []string
	// Idempotent says a second identical call leaves what the first did
	// (MCP's idempotentHint); read tools are idempotent whatever it says.
	Idempotent bool
}

// Declarer is a tool that declares its arguments (every built-in tool).
type Declarer interface {
	Declare() Decl
}

// DeclOf is t's declaration; a tool without one (an MCP server's) declares
// nothing.
func DeclOf(t Tool) Decl {
	if d, ok := t.(Declarer); ok {
		return d.Declare()
	}
	return Decl{}
}

// IsPath reports whether arg is one of d's path arguments.
func (d Decl) IsPath(arg string) bool {
	for _, p := range d.Paths {
		if p == arg {
			return true
		}
	}
	return false
}

var builtinDecls = sync.OnceValue(func() map[string]Decl {
	m := map[string]Decl{}
	for _, t := range Builtins() {
		m[t.Name()] = DeclOf(t)
	}
	return m
})

// BuiltinDecl is the declaration of the built-in tool called name, for
// code that is given only a tool's name (a hook's input); ok is false for
// any other name (an MCP tool's SERVER.TOOL).
func BuiltinDecl(name string) (d Decl, ok bool) {
	d, ok = builtinDecls()[name]
	return d, ok
}
