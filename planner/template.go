package planner

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/kballard/go-shellquote"
	"mvdan.cc/sh/v3/syntax"

	"github.com/tactcli/tact/internal/text"
)

// A parameter in run_command's command line (tact plan --param-name) is
// one word: its value must never be spliced into the line as text, where
// `my notes.txt` splits in two and `a.txt; touch PWNED` runs in a planned
// `sh -c`. The command is split as run_command splits it (go-shellquote);
// a word holding a placeholder is built from the value and quoted back
// into the line as one word (jq's @sh, which that split reads back
// exactly). In a shell's -c script the script is parsed (mvdan.cc/sh, as
// the command analyser parses it) and the value is quoted for where the
// placeholder stands: unquoted it becomes a single-quoted word, inside
// "..." its $ ` " \ are escaped, inside '...' its ' is closed and
// reopened; a script inside that script is handled the same way, inside
// out. A placeholder that no quoting can keep one word (in inline code
// for an interpreter, eval, ssh, a here-document, an arithmetic or
// parameter expansion, a comment) is an error: the plan is not written.

// quoting is how a value is escaped for one layer it sits in.
type quoting int

const (
	quoteWord quoting = iota // an unquoted shell word: '...' (jq @sh)
	quoteDbl                 // inside "...": \ before $ ` " \
	quoteSgl                 // inside '...': ' becomes '\''
)

// jq is the jq filter doing the escaping, on a string.
func (q quoting) jq() string {
	switch q {
	case quoteDbl:
		return `gsub("(?<c>[\"\\\\$` + "`" + `])"; "\\\(.c)")`
	case quoteSgl:
		return `gsub("'"; "'\\''")`
	}
	return "@sh"
}

// maxScriptDepth bounds shells inside shells' -c scripts.
const maxScriptDepth = 4

var (
	shellLangs = map[string]syntax.LangVariant{
		"sh": syntax.LangPOSIX, "dash": syntax.LangPOSIX, "ash": syntax.LangPOSIX, "posh": syntax.LangPOSIX, "yash": syntax.LangPOSIX,
		"bash": syntax.LangBash, "rbash": syntax.LangBash,
		"ksh": syntax.LangMirBSDKorn, "mksh": syntax.LangMirBSDKorn, "ksh93": syntax.LangMirBSDKorn, "pdksh": syntax.LangMirBSDKorn, "oksh": syntax.LangMirBSDKorn,
	}
	// codeTakers run a later argument as code or a command line of their
	// own that tact cannot quote for.
	codeTakers = map[string]bool{"eval": true, "source": true, ".": true, "ssh": true, "watch": true, "su": true, "runuser": true,
		"zsh": true, "fish": true, "csh": true, "tcsh": true, "xonsh": true, "nu": true, "pwsh": true, "osascript": true,
		"parallel": true, "script": true, "systemd-run": true}
	// inlineCode are interpreters' options whose value is code.
	inlineCode = regexp.MustCompile(`^(-[a-zA-Z]*[ceErpB][a-zA-Z]*|--(eval|print|command|exec)(=.*)?)$`)
	interp     = regexp.MustCompile(`^(python|pypy|perl|ruby|node|nodejs|deno|bun|php|lua|luajit|Rscript|julia|tclsh)[0-9.]*$`)
	shellC     = regexp.MustCompile(`^-[a-zA-Z]*c[a-zA-Z]*$`)
)

// wordKind says what the word at i of a command's words is: an argv
// element, a shell script (its dialect), or code tact cannot quote for
// (why).
func wordKind(words []string, i int) (script bool, lang syntax.LangVariant, why string) {
	for j := 0; j < i; j++ {
		if words[j] == "" {
			continue
		}
		name := path.Base(words[j])
		if codeTakers[name] {
			return false, 0, fmt.Sprintf("an argument of %s is run as code", name)
		}
		if l, ok := shellLangs[name]; ok && j < i-1 && shellC.MatchString(words[i-1]) && allOptions(words[j+1:i]) {
			return true, l, ""
		}
		if interp.MatchString(name) && j < i-1 && inlineCode.MatchString(words[i-1]) {
			return false, 0, fmt.Sprintf("it is inline code for %s", name)
		}
	}
	return false, 0, ""
}

// allOptions: every word is an option (starts with "-").
func allOptions(words []string) bool {
	for _, w := range words {
		if !strings.HasPrefix(w, "-") {
			return false
		}
	}
	return true
}

// templateCommand is run_command's command template text with declared
// placeholders, each value made one word; false: it has none.
func templateCommand(line string, declared map[string]bool) (json.RawMessage, bool, error) {
	if !hasDeclared(line, declared) {
		return nil, false, nil
	}
	words, err := shellquote.Split(line)
	if err != nil {
		return nil, false, fmt.Errorf("command %q: cannot split it into words: %v", line, err)
	}
	var parts []string
	for i, w := range words {
		if i > 0 {
			parts = append(parts, `" "`)
		}
		if !hasDeclared(w, declared) {
			lit, _ := text.JSON(shellquote.Join(w))
			parts = append(parts, string(lit))
			continue
		}
		script, lang, why := wordKind(words, i)
		if why != "" {
			return nil, false, fmt.Errorf("command %q: a parameter cannot stand in word %d (%s): tact cannot quote a value there", line, i+1, why)
		}
		var chains [][]quoting
		if script {
			if chains, err = scriptQuoting(w, lang, declared, 1); err != nil {
				return nil, false, fmt.Errorf("command %q: %v", line, err)
			}
		}
		parts = append(parts, "(("+wordExpr(w, declared, chains)+") | @sh)")
	}
	raw, _ := text.JSON(map[string]string{"$jq": strings.Join(parts, " + ")})
	return raw, true, nil
}

func hasDeclared(s string, declared map[string]bool) bool {
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		if declared[m[1]] {
			return true
		}
	}
	return false
}

// wordExpr is the jq expression of word w with each declared placeholder
// replaced by its value, escaped by chains[k] for the k-th (none: as is).
func wordExpr(w string, declared map[string]bool, chains [][]quoting) string {
	var parts []string
	last, k := 0, 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(w, -1) {
		name := w[m[2]:m[3]]
		if !declared[name] {
			continue
		}
		if m[0] > last {
			lit, _ := text.JSON(w[last:m[0]])
			parts = append(parts, string(lit))
		}
		v := "($params." + name + " | tostring"
		if k < len(chains) {
			for _, q := range chains[k] {
				v += " | " + q.jq()
			}
		}
		parts = append(parts, v+")")
		last, k = m[1], k+1
	}
	if last < len(w) || len(parts) == 0 {
		lit, _ := text.JSON(w[last:])
		parts = append(parts, string(lit))
	}
	return strings.Join(parts, " + ")
}

// scriptQuoting is the escaping, innermost layer first, of each declared
// placeholder of a shell script, in text order; an error for one no
// quoting keeps one word.
func scriptQuoting(script string, lang syntax.LangVariant, declared map[string]bool, depth int) ([][]quoting, error) {
	if depth > maxScriptDepth {
		return nil, fmt.Errorf("a parameter in shell scripts nested over %d deep", maxScriptDepth)
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, fmt.Errorf("a parameter in a shell script that does not parse (%v)", err)
	}
	var want []int // offsets of the declared placeholders
	for _, m := range placeholder.FindAllStringSubmatchIndex(script, -1) {
		if declared[script[m[2]:m[3]]] {
			want = append(want, m[0])
		}
	}
	found := map[int][]quoting{}
	var bad error
	at := func(off int, q []quoting) {
		if _, dup := found[off]; !dup {
			found[off] = q
		}
	}
	// lits records the placeholders in a literal's raw text at off.
	lits := func(value string, off int, q quoting) {
		for _, m := range placeholder.FindAllStringSubmatchIndex(value, -1) {
			if declared[value[m[2]:m[3]]] {
				at(off+m[0], []quoting{q})
			}
		}
	}
	inside := func(n syntax.Node) bool {
		for _, o := range want {
			if o >= int(n.Pos().Offset()) && o < int(n.End().Offset()) {
				return true
			}
		}
		return false
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if bad != nil || n == nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.ParamExp, *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.ExtGlob, *syntax.ProcSubst, *syntax.LetClause:
			if inside(n) {
				bad = fmt.Errorf("a parameter inside a shell expansion or arithmetic of the script %q", script)
			}
			return false
		case *syntax.CmdSubst:
			if n.Backquotes && inside(n) {
				bad = fmt.Errorf("a parameter inside `...` in the script %q (use $(...))", script)
				return false
			}
		case *syntax.Redirect:
			if n.Hdoc != nil && inside(n.Hdoc) {
				bad = fmt.Errorf("a parameter in a here-document of the script %q", script)
				return false
			}
		case *syntax.CallExpr:
			words := make([]string, len(n.Args))
			known := make([]bool, len(n.Args))
			for i, w := range n.Args {
				words[i], known[i] = wordValue(w)
			}
			for i, w := range n.Args {
				if !inside(w) {
					continue
				}
				if i > 0 && !known[0] {
					bad = fmt.Errorf("a parameter in the arguments of a command whose name is only known when it runs, in the script %q", script)
					return false
				}
				sub, sublang, why := wordKind(words, i)
				switch {
				case why != "":
					bad = fmt.Errorf("a parameter where %s, in the script %q", why, script)
					return false
				case sub:
					if err := innerScript(w, sublang, declared, depth, at); err != nil {
						bad = err
						return false
					}
				}
			}
		case *syntax.Word:
			for i, p := range n.Parts {
				if i > 0 && dollarQuote(n.Parts[i-1], p) && inside(p) {
					// $'...' or $"..." read as $ and a quote (POSIX), but
					// bash as sh gives them escapes of their own.
					bad = fmt.Errorf("a parameter inside $'...' or $\"...\" in the script %q", script)
					return false
				}
				switch p := p.(type) {
				case *syntax.Lit:
					lits(p.Value, int(p.ValuePos.Offset()), quoteWord)
				case *syntax.SglQuoted:
					if p.Dollar {
						if inside(p) {
							bad = fmt.Errorf("a parameter inside $'...' in the script %q", script)
						}
						continue
					}
					lits(p.Value, int(p.Left.Offset())+1, quoteSgl)
				case *syntax.DblQuoted:
					for _, q := range p.Parts {
						if l, ok := q.(*syntax.Lit); ok {
							lits(l.Value, int(l.ValuePos.Offset()), quoteDbl)
						}
					}
				}
			}
		}
		return true
	})
	if bad != nil {
		return nil, bad
	}
	chains := make([][]quoting, len(want))
	for i, o := range want {
		q, ok := found[o]
		if !ok {
			return nil, fmt.Errorf("a parameter at a place of the script %q where tact cannot quote it (a comment, a keyword, a name)", script)
		}
		chains[i] = q
	}
	return chains, nil
}

// wordValue is a script word's value when it holds no expansion.
func wordValue(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape("")(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape("$`\"\\\n")(l.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// dollarQuote: a quoted part right after a literal ending in $.
func dollarQuote(prev, p syntax.WordPart) bool {
	l, ok := prev.(*syntax.Lit)
	if !ok || !strings.HasSuffix(l.Value, "$") {
		return false
	}
	switch p.(type) {
	case *syntax.SglQuoted, *syntax.DblQuoted:
		return true
	}
	return false
}

// innerScript records the escaping of the placeholders of word w, a
// shell's -c script inside a script: the inner script's own quoting
// first, then the quoting w's part gives them in the outer script.
func innerScript(w *syntax.Word, lang syntax.LangVariant, declared map[string]bool, depth int, at func(int, []quoting)) error {
	type place struct {
		off int
		q   quoting
	}
	var value strings.Builder
	var outer []place
	add := func(raw string, off int, q quoting, unquote func(string) string) {
		for _, m := range placeholder.FindAllStringSubmatchIndex(raw, -1) {
			if declared[raw[m[2]:m[3]]] {
				outer = append(outer, place{off + m[0], q})
			}
		}
		value.WriteString(unquote(raw))
	}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			add(p.Value, int(p.ValuePos.Offset()), quoteWord, unescape(""))
		case *syntax.SglQuoted:
			if p.Dollar {
				return fmt.Errorf("a parameter in a $'...' script")
			}
			add(p.Value, int(p.Left.Offset())+1, quoteSgl, func(s string) string { return s })
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return fmt.Errorf("a parameter in a shell script built when it runs")
				}
				add(l.Value, int(l.ValuePos.Offset()), quoteDbl, unescape("$`\"\\\n"))
			}
		default:
			return fmt.Errorf("a parameter in a shell script built when it runs")
		}
	}
	inner, err := scriptQuoting(value.String(), lang, declared, depth+1)
	if err != nil {
		return err
	}
	if len(inner) != len(outer) {
		return fmt.Errorf("a parameter in a shell script whose quoting tact cannot follow")
	}
	sort.Slice(outer, func(i, j int) bool { return outer[i].off < outer[j].off })
	for k, o := range outer {
		at(o.off, append(append([]quoting{}, inner[k]...), o.q))
	}
	return nil
}

// unescape removes the backslashes the shell removes: before any
// character outside quotes (only: ""), or before one of only inside
// double quotes.
func unescape(only string) func(string) string {
	return func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) && (only == "" || strings.IndexByte(only, s[i+1]) >= 0) {
				i++
				if s[i] == '\n' {
					continue // a line continuation
				}
			}
			b.WriteByte(s[i])
		}
		return b.String()
	}
}
