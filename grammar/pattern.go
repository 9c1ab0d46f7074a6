package grammar

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// A "pattern" is an ECMA-262 regular expression over the string's
// characters, unanchored unless it says ^ or $. What a grammar can hold
// of it: literals, classes, ".", groups, alternation and the quantifiers
// (bounded ones up to maxRepeat), anchors at a branch's ends. Parsed with
// Go's regexp/syntax after the ECMAScript escapes it lacks (\uXXXX,
// \u{...}) are rewritten; whatever it refuses (lookaround,
// backreferences, \c, [^]) or the grammar cannot say (\b, ^ or $ inside)
// leaves the string unconstrained and the validator checks the pattern.
//
// The grammar writes the characters of the JSON string: a quote,
// backslash or newline the pattern allows is written escaped (\", \\,
// \n, \t, \r); other control characters are not written at all, which
// only narrows what the model may say.

// rawChar is a character written as itself inside a JSON string.
const rawChar = `[^"\\\x7F\x00-\x1F]`

// pattern is the grammar expression of a JSON string matching p, and
// whether p could be held.
func (b *builder) pattern(p, at string) (string, bool) {
	re, err := syntax.Parse(ecmaToRE2(p), syntax.Perl)
	if err != nil {
		return "", false
	}
	branches := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		branches = re.Sub
	}
	char := b.prim("char")
	var alts []string
	c := &rxConv{b: b}
	for _, br := range branches {
		subs := []*syntax.Regexp{br}
		if br.Op == syntax.OpConcat {
			subs = br.Sub
		}
		anchoredStart := len(subs) > 0 && subs[0].Op == syntax.OpBeginText
		if anchoredStart {
			subs = subs[1:]
		}
		anchoredEnd := len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText
		if anchoredEnd {
			subs = subs[:len(subs)-1]
		}
		var parts []string
		if !anchoredStart {
			parts = append(parts, char+"*")
		}
		for _, s := range subs {
			e, ok := c.conv(s, 1)
			if !ok {
				return "", false
			}
			if e != "" {
				parts = append(parts, e)
			}
		}
		if !anchoredEnd {
			parts = append(parts, char+"*")
		}
		if len(parts) == 0 {
			parts = []string{`""`}
		}
		alts = append(alts, strings.Join(parts, " "))
	}
	name, err := b.rule(at+" pattern", `"\"" (`+strings.Join(alts, " | ")+`) "\""`)
	return name, err == nil
}

// ecmaToRE2 rewrites ECMAScript's \uXXXX and \u{X...} as RE2's \x{...};
// everything else is passed as written.
func ecmaToRE2(p string) string {
	var sb strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 >= len(p) {
			sb.WriteByte(p[i])
			continue
		}
		if p[i+1] == 'u' {
			if i+5 < len(p)+0 && i+6 <= len(p) && isHex(p[i+2:i+6]) {
				fmt.Fprintf(&sb, `\x{%s}`, p[i+2:i+6])
				i += 5
				continue
			}
			if i+2 < len(p) && p[i+2] == '{' {
				if end := strings.IndexByte(p[i+3:], '}'); end > 0 && isHex(p[i+3:i+3+end]) {
					fmt.Fprintf(&sb, `\x{%s}`, p[i+3:i+3+end])
					i += 3 + end
					continue
				}
			}
		}
		sb.WriteString(p[i : i+2])
		i++
	}
	return sb.String()
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

type rxConv struct{ b *builder }

// conv is the grammar of one parsed regular expression; mult is how many
// times the enclosing repetitions copy it (llama.cpp writes x{m,n} out).
func (c *rxConv) conv(re *syntax.Regexp, mult int) (string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return "", true
	case syntax.OpLiteral:
		var parts []string
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r {
				var pairs []rune
				for f := r; ; {
					pairs = append(pairs, f, f)
					if f = unicode.SimpleFold(f); f == r {
						break
					}
				}
				e, ok := charClass(pairs)
				if !ok {
					return "", false
				}
				parts = append(parts, e)
				continue
			}
			parts = append(parts, jsonChar(r))
		}
		return strings.Join(parts, " "), true
	case syntax.OpCharClass:
		return charClass(re.Rune)
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return rawChar, true
	case syntax.OpCapture:
		e, ok := c.conv(re.Sub[0], mult)
		return "(" + e + ")", ok
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		e, ok := c.conv(re.Sub[0], mult)
		if !ok || e == "" {
			return "", ok
		}
		return "(" + e + ")" + map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[re.Op], true
	case syntax.OpRepeat:
		n := max(re.Min, re.Max)
		if re.Min > maxRepeat || re.Max > maxRepeat || !c.b.spendRepeats(n*mult) {
			return "", false
		}
		e, ok := c.conv(re.Sub[0], mult*max(n, 1))
		if !ok || e == "" {
			return "", ok
		}
		switch {
		case re.Max < 0:
			return fmt.Sprintf("(%s){%d,}", e, re.Min), true
		case re.Min == re.Max:
			return fmt.Sprintf("(%s){%d}", e, re.Min), true
		}
		return fmt.Sprintf("(%s){%d,%d}", e, re.Min, re.Max), true
	case syntax.OpConcat:
		var parts []string
		for _, s := range re.Sub {
			e, ok := c.conv(s, mult)
			if !ok {
				return "", false
			}
			if e != "" {
				parts = append(parts, e)
			}
		}
		return strings.Join(parts, " "), true
	case syntax.OpAlternate:
		var alts []string
		for _, s := range re.Sub {
			e, ok := c.conv(s, mult)
			if !ok {
				return "", false
			}
			if e == "" {
				e = `""`
			}
			alts = append(alts, e)
		}
		return "(" + strings.Join(alts, " | ") + ")", true
	}
	// Anchors inside, word boundaries, no match: not a grammar's.
	return "", false
}

// jsonChar is the grammar of one character as a JSON string writes it.
func jsonChar(r rune) string {
	switch r {
	case '"':
		return `"\\\""`
	case '\\':
		return `"\\\\"`
	case '\n':
		return `"\\n"`
	case '\t':
		return `"\\t"`
	case '\r':
		return `"\\r"`
	}
	if r < 0x20 || r == 0x7f {
		return fmt.Sprintf(`"\\u%04x"`, r)
	}
	return quote(string(r))
}

// charClass is the grammar of a class given as rune ranges (lo, hi
// pairs): a GBNF class of the characters written raw, and the escaped
// quote, backslash, newline, tab and carriage return where the class has
// them; false when nothing of it can be written.
func charClass(ranges []rune) (string, bool) {
	var raw []string
	var escaped []string
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range []rune{'"', '\\', '\n', '\t', '\r'} {
		if in(r) {
			escaped = append(escaped, jsonChar(r))
		}
	}
	// The ranges minus what is never written raw: 0x00-0x1F, '"', '\\', 0x7F.
	cut := []rune{0x00, 0x1f, '"', '"', '\\', '\\', 0x7f, 0x7f}
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for j := 0; j+1 < len(cut) && lo <= hi; j += 2 {
			clo, chi := cut[j], cut[j+1]
			if chi < lo || clo > hi {
				continue
			}
			if clo > lo {
				raw = append(raw, classRange(lo, clo-1))
			}
			lo = chi + 1
		}
		if lo <= hi {
			raw = append(raw, classRange(lo, hi))
		}
	}
	var alts []string
	if len(raw) > 0 {
		alts = append(alts, "["+strings.Join(raw, "")+"]")
	}
	alts = append(alts, escaped...)
	switch len(alts) {
	case 0:
		return "", false
	case 1:
		return alts[0], true
	}
	return "(" + strings.Join(alts, " | ") + ")", true
}

func classRange(lo, hi rune) string {
	if lo == hi {
		return classChar(lo)
	}
	return classChar(lo) + "-" + classChar(hi)
}

// classChar writes a character inside a GBNF class: letters and digits
// as they are, anything else escaped.
func classChar(r rune) string {
	switch {
	case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
		return string(r)
	case r <= 0xff:
		return fmt.Sprintf(`\x%02X`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04X`, r)
	}
	return fmt.Sprintf(`\U%08X`, r)
}
