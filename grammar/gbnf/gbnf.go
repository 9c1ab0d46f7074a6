// Package gbnf reads GBNF grammars (llama.cpp's grammar language) in
// Go: it parses a grammar as llama.cpp's parser does (the syntax package
// grammar writes), finds rules that can never end, tells whether a
// grammar produces a text, and draws random texts from it (the last two
// for tests). No cgo, no model.
package gbnf

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Grammar is a parsed grammar.
type Grammar struct {
	Rules  map[string]*Expr
	order  []string
	height map[string]int
}

// Expr is one expression: a literal, a character class, a rule
// reference, a sequence or a choice, repeated Min to Max times (Max -1:
// unbounded).
type Expr struct {
	Kind     Kind
	Lit      []rune
	Ranges   [][2]rune
	Negated  bool
	Ref      string
	Subs     []*Expr
	Min, Max int
}

// Kind is an expression's kind.
type Kind int

// The kinds.
const (
	Lit Kind = iota
	Class
	Ref
	Seq
	Alt
)

// Parse reads a grammar: one rule per line ("name ::= alternatives"),
// comments from '#'. Every rule referred to must be defined, and "root"
// must be.
func Parse(text string) (*Grammar, error) {
	g := &Grammar{Rules: map[string]*Expr{}}
	p := &parser{src: []rune(text)}
	for {
		p.skipSpace(true)
		if p.eof() {
			break
		}
		name := p.name()
		if name == "" {
			return nil, p.errorf("want a rule name")
		}
		p.skipSpace(false)
		if !p.consume("::=") {
			return nil, p.errorf("want ::= after %s", name)
		}
		e, err := p.alternatives(false)
		if err != nil {
			return nil, err
		}
		if _, dup := g.Rules[name]; dup {
			return nil, p.errorf("rule %s defined twice", name)
		}
		g.Rules[name] = e
		g.order = append(g.order, name)
	}
	if _, ok := g.Rules["root"]; !ok {
		return nil, errors.New("gbnf: no root rule")
	}
	var undefined error
	for _, name := range g.order {
		walk(g.Rules[name], func(e *Expr) {
			if e.Kind == Ref && g.Rules[e.Ref] == nil && undefined == nil {
				undefined = fmt.Errorf("gbnf: rule %s refers to undefined %s", name, e.Ref)
			}
		})
	}
	if undefined != nil {
		return nil, undefined
	}
	g.heights()
	return g, nil
}

func walk(e *Expr, f func(*Expr)) {
	f(e)
	for _, s := range e.Subs {
		walk(s, f)
	}
}

type parser struct {
	src []rune
	pos int
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

func (p *parser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(string(p.src[:min(p.pos, len(p.src))]), "\n")
	return fmt.Errorf("gbnf: line %d: %s", line, fmt.Sprintf(format, args...))
}

// skipSpace skips blanks and comments, newlines too when newlines is set.
func (p *parser) skipSpace(newlines bool) {
	for !p.eof() {
		c := p.src[p.pos]
		switch {
		case c == '#':
			for !p.eof() && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n'):
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) consume(s string) bool {
	r := []rune(s)
	if p.pos+len(r) <= len(p.src) && string(p.src[p.pos:p.pos+len(r)]) == s {
		p.pos += len(r)
		return true
	}
	return false
}

func (p *parser) name() string {
	start := p.pos
	for !p.eof() {
		c := p.src[p.pos]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			break
		}
		p.pos++
	}
	return string(p.src[start:p.pos])
}

// alternatives reads sequences separated by '|'; inside parentheses
// newlines are blanks.
func (p *parser) alternatives(nested bool) (*Expr, error) {
	alt := &Expr{Kind: Alt, Min: 1, Max: 1}
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alt.Subs = append(alt.Subs, seq)
		p.skipSpace(nested)
		if p.eof() || p.src[p.pos] != '|' {
			return alt, nil
		}
		p.pos++
	}
}

func (p *parser) sequence(nested bool) (*Expr, error) {
	seq := &Expr{Kind: Seq, Min: 1, Max: 1}
	for {
		p.skipSpace(nested)
		if p.eof() {
			return seq, nil
		}
		c := p.src[p.pos]
		var e *Expr
		var err error
		switch {
		case c == '"':
			p.pos++
			e = &Expr{Kind: Lit, Min: 1, Max: 1}
			for {
				if p.eof() {
					return nil, p.errorf("unterminated literal")
				}
				if p.src[p.pos] == '"' {
					p.pos++
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				e.Lit = append(e.Lit, r)
			}
		case c == '[':
			p.pos++
			e = &Expr{Kind: Class, Min: 1, Max: 1}
			if !p.eof() && p.src[p.pos] == '^' {
				e.Negated = true
				p.pos++
			}
			for {
				if p.eof() {
					return nil, p.errorf("unterminated class")
				}
				if p.src[p.pos] == ']' {
					p.pos++
					break
				}
				lo, err := p.char()
				if err != nil {
					return nil, err
				}
				hi := lo
				if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
					p.pos++
					if hi, err = p.char(); err != nil {
						return nil, err
					}
				}
				e.Ranges = append(e.Ranges, [2]rune{lo, hi})
			}
		case c == '(':
			p.pos++
			if e, err = p.alternatives(true); err != nil {
				return nil, err
			}
			p.skipSpace(true)
			if p.eof() || p.src[p.pos] != ')' {
				return nil, p.errorf("want )")
			}
			p.pos++
			e = &Expr{Kind: Seq, Subs: []*Expr{e}, Min: 1, Max: 1}
		case c == '.':
			p.pos++
			e = &Expr{Kind: Class, Negated: true, Min: 1, Max: 1}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-':
			start := p.pos
			name := p.name()
			p.skipSpace(nested)
			if p.consume("::=") { // the next rule begins: not part of this one
				p.pos = start
				return seq, nil
			}
			p.pos = start + len([]rune(name))
			e = &Expr{Kind: Ref, Ref: name, Min: 1, Max: 1}
		default:
			return seq, nil
		}
		if err := p.quantifier(e); err != nil {
			return nil, err
		}
		seq.Subs = append(seq.Subs, e)
	}
}

func (p *parser) quantifier(e *Expr) error {
	if p.eof() {
		return nil
	}
	switch p.src[p.pos] {
	case '*':
		e.Min, e.Max = 0, -1
	case '+':
		e.Min, e.Max = 1, -1
	case '?':
		e.Min, e.Max = 0, 1
	case '{':
		end := p.pos
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end == len(p.src) {
			return p.errorf("unterminated {")
		}
		spec := string(p.src[p.pos+1 : end])
		lo, hi, comma := strings.Cut(spec, ",")
		m, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || m < 0 {
			return p.errorf("bad repetition {%s}", spec)
		}
		n := m
		if comma {
			if strings.TrimSpace(hi) == "" {
				n = -1
			} else if n, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || n < m {
				return p.errorf("bad repetition {%s}", spec)
			}
		}
		if e.Min != 1 || e.Max != 1 {
			e2 := *e
			*e = Expr{Kind: Seq, Subs: []*Expr{&e2}}
		}
		e.Min, e.Max = m, n
		p.pos = end + 1
		return nil
	default:
		return nil
	}
	p.pos++
	return nil
}

// char reads one character of a literal or class, escapes decoded as
// llama.cpp's parser decodes them.
func (p *parser) char() (rune, error) {
	c := p.src[p.pos]
	p.pos++
	if c != '\\' {
		return c, nil
	}
	if p.eof() {
		return 0, p.errorf("escape at the end")
	}
	c = p.src[p.pos]
	p.pos++
	hex := 0
	switch c {
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'n':
		return '\n', nil
	case '\\', '"', '[', ']':
		return c, nil
	default:
		return 0, p.errorf("unknown escape \\%c", c)
	}
	if p.pos+hex > len(p.src) {
		return 0, p.errorf("short escape")
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+hex]), 16, 32)
	if err != nil {
		return 0, p.errorf("bad escape")
	}
	p.pos += hex
	return rune(v), nil
}

// heights: for each rule, the least nesting of rule references that ends
// (so a random walk past its depth can always finish).
func (g *Grammar) heights() {
	const inf = 1 << 30
	g.height = map[string]int{}
	for _, name := range g.order {
		g.height[name] = inf
	}
	for changed := true; changed; {
		changed = false
		for _, name := range g.order {
			if h := g.exprHeight(g.Rules[name]); h+1 < g.height[name] {
				g.height[name] = h + 1
				changed = true
			}
		}
	}
}

func (g *Grammar) exprHeight(e *Expr) int {
	const inf = 1 << 30
	if e.Min == 0 {
		return 0
	}
	switch e.Kind {
	case Ref:
		return g.height[e.Ref]
	case Seq:
		h := 0
		for _, s := range e.Subs {
			h = max(h, g.exprHeight(s))
		}
		return h
	case Alt:
		h := inf
		for _, s := range e.Subs {
			h = min(h, g.exprHeight(s))
		}
		return h
	}
	return 0
}

// Productive reports whether every rule can end (produce a finite text).
func (g *Grammar) Productive() error {
	if dead := g.Unproductive(); len(dead) > 0 {
		return fmt.Errorf("gbnf: rule %s never ends", dead[0])
	}
	return nil
}

// Unproductive lists the rules that can never end, in grammar order.
func (g *Grammar) Unproductive() []string {
	var out []string
	for _, name := range g.order {
		if g.height[name] >= 1<<30 {
			out = append(out, name)
		}
	}
	return out
}

// Generate draws a random text from the grammar; past depth nested rule
// references it takes the quickest way to an end.
func (g *Grammar) Generate(rng *rand.Rand, depth int) string {
	var sb strings.Builder
	g.gen(&sb, g.Rules["root"], rng, 0, depth)
	return sb.String()
}

// candidates are characters tried for a negated class.
var candidates = []rune(" abcXYZ019-_.:/@#éλ中😀\"\\\n\t{}[],")

func (g *Grammar) gen(sb *strings.Builder, e *Expr, rng *rand.Rand, d, depth int) {
	n := e.Min
	if d < depth {
		extra := 3
		if e.Max >= 0 {
			extra = min(extra, e.Max-e.Min)
		}
		if extra > 0 {
			n += rng.IntN(extra + 1)
		}
	}
	for range n {
		g.genOnce(sb, e, rng, d, depth)
	}
}

func (g *Grammar) genOnce(sb *strings.Builder, e *Expr, rng *rand.Rand, d, depth int) {
	switch e.Kind {
	case Lit:
		sb.WriteString(string(e.Lit))
	case Class:
		sb.WriteRune(pick(e, rng))
	case Ref:
		g.gen(sb, g.Rules[e.Ref], rng, d+1, depth)
	case Seq:
		for _, s := range e.Subs {
			g.gen(sb, s, rng, d, depth)
		}
	case Alt:
		choice := e.Subs[rng.IntN(len(e.Subs))]
		if d >= depth {
			best := 1 << 30
			for _, s := range e.Subs {
				if h := g.exprHeight(s); h < best {
					best, choice = h, s
				}
			}
		}
		g.gen(sb, choice, rng, d, depth)
	}
}

func inClass(e *Expr, r rune) bool {
	in := false
	for _, rg := range e.Ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
			break
		}
	}
	return in != e.Negated
}

func pick(e *Expr, rng *rand.Rand) rune {
	if !e.Negated && len(e.Ranges) > 0 {
		rg := e.Ranges[rng.IntN(len(e.Ranges))]
		span := int(rg[1] - rg[0])
		for range 8 {
			r := rg[0] + rune(rng.IntN(span+1))
			if utf8.ValidRune(r) {
				return r
			}
		}
		return rg[0]
	}
	for range 64 {
		r := candidates[rng.IntN(len(candidates))]
		if inClass(e, r) {
			return r
		}
	}
	for r := rune(0x20); r < 0x10000; r++ {
		if inClass(e, r) && utf8.ValidRune(r) {
			return r
		}
	}
	return 'a'
}

// Accepts reports whether the grammar produces text exactly.
func (g *Grammar) Accepts(text string) bool {
	m := &matcher{g: g, in: []rune(text), memo: map[memoKey][]int{}}
	for _, end := range m.rule("root", 0) {
		if end == len(m.in) {
			return true
		}
	}
	return false
}

type memoKey struct {
	rule string
	pos  int
}

type matcher struct {
	g    *Grammar
	in   []rune
	memo map[memoKey][]int
	busy map[memoKey]bool
}

// rule: the positions where rule name, begun at pos, may end.
func (m *matcher) rule(name string, pos int) []int {
	k := memoKey{name, pos}
	if ends, ok := m.memo[k]; ok {
		return ends
	}
	if m.busy == nil {
		m.busy = map[memoKey]bool{}
	}
	if m.busy[k] {
		return nil // left recursion: grammar writes none
	}
	m.busy[k] = true
	ends := m.expr(m.g.Rules[name], pos)
	delete(m.busy, k)
	m.memo[k] = ends
	return ends
}

func (m *matcher) expr(e *Expr, pos int) []int {
	cur := []int{pos}
	var out []int
	if e.Min == 0 {
		out = append(out, pos)
	}
	for i := 1; e.Max < 0 || i <= e.Max; i++ {
		next := set{}
		for _, p := range cur {
			for _, q := range m.once(e, p) {
				next[q] = true
			}
		}
		if e.Max < 0 && i > e.Min {
			// Unbounded: stop once no new position appears.
			for _, p := range cur {
				delete(next, p)
			}
		}
		if len(next) == 0 {
			break
		}
		cur = next.list()
		if i >= e.Min {
			out = append(out, cur...)
		}
		if i > len(m.in)+e.Min+1 {
			break
		}
	}
	return set{}.add(out).list()
}

func (m *matcher) once(e *Expr, pos int) []int {
	switch e.Kind {
	case Lit:
		if pos+len(e.Lit) <= len(m.in) && string(m.in[pos:pos+len(e.Lit)]) == string(e.Lit) {
			return []int{pos + len(e.Lit)}
		}
		return nil
	case Class:
		if pos < len(m.in) && inClass(e, m.in[pos]) {
			return []int{pos + 1}
		}
		return nil
	case Ref:
		return m.rule(e.Ref, pos)
	case Seq:
		cur := []int{pos}
		for _, s := range e.Subs {
			next := set{}
			for _, p := range cur {
				next.add(m.expr(s, p))
			}
			cur = next.list()
			if len(cur) == 0 {
				return nil
			}
		}
		return cur
	case Alt:
		out := set{}
		for _, s := range e.Subs {
			out.add(m.expr(s, pos))
		}
		return out.list()
	}
	return nil
}

type set map[int]bool

func (s set) add(list []int) set {
	for _, v := range list {
		s[v] = true
	}
	return s
}

func (s set) list() []int {
	out := make([]int, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	return out
}
