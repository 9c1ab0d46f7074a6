package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The JSON primitives every grammar may use, written once each, by name.
// Whitespace between tokens is bounded: a model cannot fill its budget
// with spaces.
var primitives = map[string]string{
	"ws":      `| " " | "\n" [ \t]{0,20}`,
	"char":    `[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`,
	"string":  `"\"" char* "\""`,
	"integer": `"-"? ("0" | [1-9] [0-9]{0,15})`,
	"number":  `"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?`,
	"boolean": `"true" | "false"`,
	"null":    `"null"`,
	"value":   `object | array | string | number | boolean | null`,
	"object":  `"{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}"`,
	"array":   `"[" ws ( value ( ws "," ws value )* ws )? "]"`,
	// Formats: the syntax of RFC 3339's full-date, full-time, date-time
	// and RFC 4122's uuid; the calendar (February 31st) is the validator's.
	"date":      `"\"" date-body "\""`,
	"date-body": `[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])`,
	"time":      `"\"" time-body "\""`,
	"time-body": `([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" ([0-5] [0-9] | "60") ("." [0-9]{1,9})? ([zZ] | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])`,
	"date-time": `"\"" date-body [tT] time-body "\""`,
	"uuid":      `"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\""`,
}

// primitiveDeps: what each primitive's body names.
var primitiveDeps = map[string][]string{
	"string": {"char"}, "value": {"object", "array", "string", "number", "boolean", "null"},
	"object": {"ws", "string", "value"}, "array": {"ws", "value"},
	"date": {"date-body"}, "time": {"time-body"}, "date-time": {"date-body", "time-body"},
}

// prim names a primitive rule, writing it (and what it uses) on first use.
func (b *builder) prim(name string) string {
	if _, ok := b.bodies[name]; !ok {
		b.define(name, primitives[name])
		for _, d := range primitiveDeps[name] {
			b.prim(d)
		}
	}
	return name
}

// value is the grammar expression of the values x allows; at is x's
// schema path, for rule names and errors.
func (b *builder) value(x *node, at string) (string, error) {
	switch {
	case x.ref != "":
		return b.defName(x.ref)
	case x.anyOf != nil:
		var alts []string
		for i, br := range x.anyOf {
			e, err := b.value(br, fmt.Sprintf("%s/anyOf/%d", at, i))
			if err != nil {
				return "", err
			}
			alts = append(alts, e)
		}
		if len(alts) == 0 {
			b.widen("anyOf")
			return b.prim("value"), nil
		}
		return b.alternatives(at, alts)
	case x.hasConst:
		return literalJSON(x.cnst)
	case x.hasEnum:
		var alts []string
		for _, v := range x.enum {
			lit, err := literalJSON(v)
			if err != nil {
				return "", err
			}
			alts = append(alts, lit)
		}
		if len(alts) == 0 {
			b.widen("false")
			return b.prim("value"), nil
		}
		return b.alternatives(at, alts)
	}
	types := x.types
	if types == nil {
		types = []string{"object", "array", "string", "number", "boolean", "null"}
	}
	if slices.Contains(types, "number") {
		types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "integer" })
	}
	var alts []string
	for _, t := range types {
		var e string
		var err error
		switch t {
		case "object":
			e, err = b.object(x, at)
		case "array":
			e, err = b.array(x, at)
		case "string":
			e, err = b.str(x, at)
		case "integer":
			e, err = b.integer(x, at)
		case "number", "boolean", "null":
			e = b.prim(t)
		default:
			continue
		}
		if err != nil {
			return "", err
		}
		alts = append(alts, e)
	}
	if len(alts) == 0 {
		b.widen("type")
		return b.prim("value"), nil
	}
	return b.alternatives(at, alts)
}

// alternatives is one expression for a choice of several: a rule of its
// own when there is more than one.
func (b *builder) alternatives(at string, alts []string) (string, error) {
	alts = uniq(alts)
	if len(alts) == 1 {
		return alts[0], nil
	}
	return b.rule(at, strings.Join(alts, " | "))
}

func uniq(list []string) []string {
	seen := map[string]bool{}
	out := list[:0:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// literalJSON is a GBNF literal of a JSON value as compact JSON.
func literalJSON(raw json.RawMessage) (string, error) {
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return "", err
	}
	return quote(c.String()), nil
}

// quote is a GBNF string literal of s.
func quote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			sb.WriteString(`\"`)
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, `\x%02X`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// jsonKey is the literal of an object key: the name as a JSON string.
func jsonKey(name string) string { return quote(jsonString(name)) }

// jsonString is s as a JSON string, quotes included, HTML characters as
// they are.
func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// object: the named properties, required ones first, each group in the
// schema's order (as llama.cpp writes them), then other keys where
// additionalProperties allows them.
func (b *builder) object(x *node, at string) (string, error) {
	ws := b.prim("ws")
	sep := ws + ` "," ` + ws
	named := map[string]bool{}
	for _, p := range x.props {
		named[p.name] = true
	}
	props := x.props
	for _, r := range x.required {
		if !named[r] {
			props = append(props, prop{r, newNode()})
			named[r] = true
		}
	}
	isReq := map[string]bool{}
	for _, r := range x.required {
		isReq[r] = true
	}
	kv := func(p prop) (string, error) {
		v, err := b.value(p.s, at+"/properties/"+p.name)
		if err != nil {
			return "", err
		}
		return b.rule(at+" "+p.name+" kv", jsonKey(p.name)+" "+ws+` ":" `+ws+" "+v)
	}
	var req, opt []string
	for _, p := range props {
		e, err := kv(p)
		if err != nil {
			return "", err
		}
		if isReq[p.name] {
			req = append(req, e)
		} else {
			opt = append(opt, e)
		}
	}
	// Other keys.
	var other string
	// Absent additionalProperties: an object of no named property is any
	// object; one with named properties has no other key (narrower than
	// the schema, as llama.cpp's converter is: Simplify writes true where
	// other keys must stay possible).
	switch {
	case x.addlFalse, !x.addlSet && len(props) > 0:
	default:
		v := b.prim("value")
		if x.addl != nil {
			var err error
			if v, err = b.value(x.addl, at+"/additionalProperties"); err != nil {
				return "", err
			}
		}
		key := b.prim("string")
		if len(props) > 0 {
			names := make([]string, len(props))
			for i, p := range props {
				names[i] = p.name
			}
			var err error
			if key, err = b.otherKey(at, names); err != nil {
				return "", err
			}
		}
		var err error
		if other, err = b.rule(at+" additional kv", key+" "+ws+` ":" `+ws+" "+v); err != nil {
			return "", err
		}
	}
	others := ""
	if other != "" {
		others = fmt.Sprintf(" (%s %s)*", sep, other)
	}
	var body string
	if len(req) > 0 {
		parts := []string{strings.Join(req, " "+sep+" ")}
		for _, o := range opt {
			parts = append(parts, fmt.Sprintf("(%s %s)?", sep, o))
		}
		body = strings.Join(parts, " ") + others
	} else {
		// No required key: the first key present has no comma before it.
		// start(i): the first key is optional i or a later one; tail(i):
		// after a key, optional i on may follow. One rule each: linear
		// in the optional properties.
		tail := ""
		if others != "" {
			tail = strings.TrimSpace(others)
		}
		tails := make([]string, len(opt)+1)
		tails[len(opt)] = tail
		for i := len(opt) - 1; i >= 0; i-- {
			e := fmt.Sprintf("(%s %s)? %s", sep, opt[i], tails[i+1])
			if i > 0 && len(opt) > 2 {
				name, err := b.rule(fmt.Sprintf("%s tail %d", at, i), strings.TrimSpace(e))
				if err != nil {
					return "", err
				}
				e = name
			}
			tails[i] = strings.TrimSpace(e)
		}
		first := ""
		if other != "" {
			first = fmt.Sprintf("%s%s", other, others)
		}
		for i := len(opt) - 1; i >= 0; i-- {
			alt := strings.TrimSpace(opt[i] + " " + tails[i+1])
			if first != "" {
				alt = alt + " | " + first
			}
			if i > 0 {
				name, err := b.rule(fmt.Sprintf("%s start %d", at, i), alt)
				if err != nil {
					return "", err
				}
				first = name
			} else {
				first = alt
			}
		}
		if first == "" {
			return b.rule(at+" object", `"{" `+ws+` "}"`)
		}
		body = "(" + first + ")?"
	}
	return b.rule(at+" object", `"{" `+ws+" "+body+" "+ws+` "}"`)
}

// array: prefixItems, then items, within minItems and maxItems.
func (b *builder) array(x *node, at string) (string, error) {
	ws := b.prim("ws")
	sep := ws + ` "," ` + ws
	var prefix []string
	for i, p := range x.prefix {
		e, err := b.value(p, fmt.Sprintf("%s/prefixItems/%d", at, i))
		if err != nil {
			return "", err
		}
		prefix = append(prefix, e)
	}
	rest := ""
	if !x.itemsFalse {
		rest = b.prim("value")
		if x.items != nil {
			var err error
			if rest, err = b.value(x.items, at+"/items"); err != nil {
				return "", err
			}
		}
	}
	lo, hi := max(x.minItems, 0), x.maxItems
	if rest == "" && (hi < 0 || hi > len(prefix)) {
		hi = len(prefix)
	}
	if lo > maxRepeat || hi > maxRepeat || !b.spendRepeats(max(lo, hi)) {
		b.widen("minItems/maxItems")
		lo, hi = 0, -1
		if rest == "" {
			hi = len(prefix)
		}
	}
	if hi >= 0 && lo > hi {
		b.widen("minItems/maxItems") // nothing valid: the validator says so
		lo = hi
	}
	// seq(i): items from index i on, i already written.
	var seq func(i int) string
	seq = func(i int) string {
		if hi >= 0 && i >= hi {
			return ""
		}
		lead := ""
		if i > 0 {
			lead = sep + " "
		}
		if i < len(prefix) {
			e := lead + prefix[i]
			if next := seq(i + 1); next != "" {
				e += " " + next
			}
			if i >= lo {
				return "(" + e + ")?"
			}
			return e
		}
		// Past the prefix: the rest's items, counted.
		need := max(lo-i, 0)
		var parts []string
		if i == 0 {
			if need > 0 {
				parts = append(parts, rest, repeat(sep+" "+rest, need-1, need-1))
			} else {
				more := "*"
				if hi >= 0 {
					more = fmt.Sprintf("{0,%d}", hi-1)
				}
				return fmt.Sprintf("(%s (%s %s)%s)?", rest, sep, rest, more)
			}
		} else if need > 0 {
			parts = append(parts, repeat(sep+" "+rest, need, need))
		}
		start := max(lo, i)
		if hi < 0 {
			parts = append(parts, fmt.Sprintf("(%s %s)*", sep, rest))
		} else if hi > start {
			parts = append(parts, repeat(sep+" "+rest, 0, hi-start))
		}
		return strings.TrimSpace(strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " "))
	}
	body := seq(0)
	return b.rule(at+" array", strings.TrimSpace(`"[" `+ws+" "+body+" "+ws+` "]"`))
}

// repeat is e repeated lo to hi times ("" for none).
func repeat(e string, lo, hi int) string {
	switch {
	case hi == 0:
		return ""
	case lo == 1 && hi == 1:
		return e
	case lo == hi:
		return fmt.Sprintf("(%s){%d}", e, lo)
	}
	return fmt.Sprintf("(%s){%d,%d}", e, lo, hi)
}

// spendRepeats counts n copies against the grammar's repetition budget.
func (b *builder) spendRepeats(n int) bool {
	if b.repeats+n > maxRepeatCost {
		return false
	}
	b.repeats += n
	return true
}

// str: a JSON string, with its format, pattern or length bounds.
func (b *builder) str(x *node, at string) (string, error) {
	if x.format != "" {
		switch x.format {
		case "date", "time", "date-time", "uuid":
			if x.pattern != "" || x.minLen >= 0 || x.maxLen >= 0 {
				b.widen("pattern/minLength/maxLength beside format")
			}
			if x.format != "uuid" {
				b.widen("format (the calendar)") // the syntax is held, not February 30th
			}
			return b.prim(x.format), nil
		}
		b.widen("format")
	}
	if x.pattern != "" {
		e, ok := b.pattern(x.pattern, at)
		if ok {
			if x.minLen >= 0 || x.maxLen >= 0 {
				b.widen("minLength/maxLength beside pattern")
			}
			return e, nil
		}
		b.widen("pattern")
	}
	lo, hi := x.minLen, x.maxLen
	if lo <= 0 && hi < 0 {
		return b.prim("string"), nil
	}
	lo = max(lo, 0)
	if lo > maxRepeat || hi > maxRepeat || !b.spendRepeats(max(lo, hi)) {
		b.widen("minLength/maxLength")
		return b.prim("string"), nil
	}
	char := b.prim("char")
	var count string
	switch {
	case hi < 0:
		count = fmt.Sprintf("{%d,}", lo)
	case lo == hi:
		count = fmt.Sprintf("{%d}", lo)
	default:
		count = fmt.Sprintf("{%d,%d}", lo, hi)
	}
	return b.rule(at+" string", `"\"" `+char+count+` "\""`)
}

// integer: an integer, within minimum and maximum.
func (b *builder) integer(x *node, at string) (string, error) {
	if x.min == nil && x.max == nil {
		return b.prim("integer"), nil
	}
	e, ok := intRange(x.min, x.max)
	if !ok {
		b.widen("minimum/maximum")
		return b.prim("integer"), nil
	}
	return b.rule(at+" integer", e)
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// otherKey is a JSON string that is none of names: a key beside the named
// properties, which must not repeat one of them (of two equal keys a JSON
// reader keeps the last). Written over the trie of the names' JSON
// spellings, a rule a node: linear in their length. A key spelled with
// escapes is let through (the validator has the last word).
func (b *builder) otherKey(at string, names []string) (string, error) {
	type trie struct {
		next     map[rune]*trie
		order    []rune
		terminal bool
	}
	root := &trie{next: map[rune]*trie{}}
	for _, name := range names {
		spelled := []rune(jsonString(name))
		n := root
		for _, r := range spelled[1 : len(spelled)-1] {
			c, ok := n.next[r]
			if !ok {
				c = &trie{next: map[rune]*trie{}}
				n.next[r] = c
				n.order = append(n.order, r)
			}
			n = c
		}
		n.terminal = true
	}
	char := b.prim("char")
	escape := `"\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) ` + char + "*"
	nodes := 0
	var write func(n *trie) (string, error)
	write = func(n *trie) (string, error) {
		nodes++
		var alts []string
		if !n.terminal {
			alts = append(alts, `""`)
		}
		// A character no name has here, then anything.
		other := `[^"\\\x7F\x00-\x1F`
		for _, r := range n.order {
			other += classChar(r)
		}
		alts = append(alts, other+"] "+char+"*", escape)
		for _, r := range n.order {
			if r == '\\' {
				continue // the escape alternative covers it
			}
			rest, err := write(n.next[r])
			if err != nil {
				return "", err
			}
			alts = append(alts, quote(string(r))+" "+rest)
		}
		return b.rule(fmt.Sprintf("%s other key %d", at, nodes), strings.Join(alts, " | "))
	}
	body, err := write(root)
	if err != nil {
		return "", err
	}
	return b.rule(at+" other key", `"\"" `+body+` "\""`)
}
