package cmdline

import (
	"bytes"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

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
