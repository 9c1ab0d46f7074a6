// Package grammar turns a JSON Schema into a GBNF grammar (llama.cpp's
// grammar language) whose every sentence is a JSON value, so a model
// sampled under it writes JSON of the schema's shape. It is tact's own
// converter: pure Go, its semantics written down here and in
// docs/inference.md, its limits checked before work grows with the input.
//
// The schema is first simplified (schema.Simplify: local $refs resolved,
// allOf merged, recursion turned into named definitions, keywords no
// grammar holds left out and named); this package writes the simplified
// form as rules. What a grammar cannot express is widened to the nearest
// superset and named in Grammar.Widened: whoever samples under the
// grammar validates the value against the original schema, so an answer
// is valid or refused, never wrong.
package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tactcli/tact/grammar/gbnf"
	"github.com/tactcli/tact/schema"
)

// Grammar is a schema's GBNF grammar.
type Grammar struct {
	// GBNF is the grammar text; its start rule is "root".
	GBNF string
	// Widened names what the grammar does not hold of the schema
	// (keywords, sorted): the value must be validated after sampling.
	// Empty when the grammar holds everything the schema says.
	Widened []string
	// Rules is the number of rules in GBNF.
	Rules int
}

// Limits on what one schema may cost: a schema from outside (an MCP
// server, a serve client) must not make a grammar that llama.cpp's
// parser takes seconds or gigabytes to read.
const (
	// MaxBytes bounds the grammar's text.
	MaxBytes = 16 << 20
	// MaxRules bounds its rules.
	MaxRules = 1 << 16
	// maxNesting bounds the simplified schema's nesting this package
	// walks (its recursion): Simplify's output of a schema within
	// schema's limits nests far less.
	maxNesting = 1024
	// maxRepeatCost bounds, over one grammar, the copies llama.cpp makes
	// of repeated items: it writes x{m,n} out as n rules.
	maxRepeatCost = 1 << 15
	// maxRepeat is the largest count of one repetition written.
	maxRepeat = 1000
)

// ErrTooBig is returned (wrapped, with the schema path) for a schema
// whose grammar would exceed MaxBytes or MaxRules.
var ErrTooBig = errors.New("the grammar is too big")

// FromSchema converts a JSON Schema (one the validator accepts) to a
// grammar of the JSON values it allows, widened where it must be.
func FromSchema(raw json.RawMessage) (*Grammar, error) {
	s, err := schema.Simplify(raw)
	if err != nil {
		return nil, err
	}
	root, defs, err := decode(s.Schema)
	if err != nil {
		return nil, fmt.Errorf("grammar: %w", err)
	}
	b := newBuilder(defs)
	for _, w := range s.Loosened {
		b.widen(w)
	}
	body, err := b.value(root, "#")
	if err != nil {
		return nil, err
	}
	b.define("root", body)
	for b.pendingDefs() {
		if err := b.writeDefs(); err != nil {
			return nil, err
		}
	}
	g, err := b.finish()
	if err != nil || len(b.defRule) == 0 {
		return g, err
	}
	return b.endless(g)
}

// endless: a recursive definition no finite value satisfies ({"type":
// "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})
// would leave the model no way to finish. Such definitions become any
// value; the validator refuses whatever is written, as it must.
func (b *builder) endless(g *Grammar) (*Grammar, error) {
	pg, err := gbnf.Parse(g.GBNF)
	if err != nil {
		return nil, fmt.Errorf("grammar: %w", err)
	}
	dead := map[string]bool{}
	for _, name := range pg.Unproductive() {
		dead[name] = true
	}
	if len(dead) == 0 {
		return g, nil
	}
	for _, name := range b.defRule {
		if dead[name] {
			b.bodies[name] = b.prim("value")
			b.widen("$ref (no finite value)")
		}
	}
	return b.finish()
}

// builder collects rules.
type builder struct {
	names   map[string]bool   // rule names taken
	byBody  map[string]string // body -> rule name, to share equal rules
	order   []string
	bodies  map[string]string
	size    int
	widened map[string]bool
	repeats int
	defs    map[string]*node // "#/$defs/rN" targets
	defRule map[string]string
	defDone map[string]bool
}

func newBuilder(defs map[string]*node) *builder {
	return &builder{names: map[string]bool{}, byBody: map[string]string{}, bodies: map[string]string{},
		widened: map[string]bool{}, defs: defs, defRule: map[string]string{}, defDone: map[string]bool{}}
}

func (b *builder) widen(what string) { b.widened[what] = true }

// define adds the rule name ::= body under exactly that name.
func (b *builder) define(name, body string) {
	b.names[name] = true
	b.order = append(b.order, name)
	b.bodies[name] = body
	b.size += len(name) + len(body) + 6
}

// rule adds body as a rule named after hint (made unique) and returns
// its name; an equal body already written is shared.
func (b *builder) rule(hint, body string) (string, error) {
	if name, ok := b.byBody[body]; ok {
		return name, nil
	}
	name := ruleName(hint)
	if b.names[name] {
		for i := 1; ; i++ {
			if n := fmt.Sprintf("%s-%d", name, i); !b.names[n] {
				name = n
				break
			}
		}
	}
	b.define(name, body)
	b.byBody[body] = name
	if err := b.check(hint); err != nil {
		return "", err
	}
	return name, nil
}

func (b *builder) check(at string) error {
	switch {
	case len(b.order) > MaxRules:
		return fmt.Errorf("grammar: at %s: over %d rules: %w", at, MaxRules, ErrTooBig)
	case b.size > MaxBytes:
		return fmt.Errorf("grammar: at %s: over %d MiB of grammar: %w", at, MaxBytes>>20, ErrTooBig)
	}
	return nil
}

// ruleName makes a hint (a schema path or a word) into a rule name:
// letters, digits and '-' only.
func ruleName(hint string) string {
	var sb strings.Builder
	dash := false
	for _, r := range hint {
		ok := r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		if ok {
			sb.WriteRune(r)
			dash = false
		} else if !dash && sb.Len() > 0 {
			sb.WriteByte('-')
			dash = true
		}
		if sb.Len() >= 40 {
			break
		}
	}
	name := strings.Trim(sb.String(), "-")
	if name == "" || name == "root" {
		name = "r"
	}
	return name
}

// defName is the rule of a recursive definition, made on first use and
// written by writeDefs.
func (b *builder) defName(ref string) (string, error) {
	if name, ok := b.defRule[ref]; ok {
		return name, nil
	}
	if _, ok := b.defs[ref]; !ok {
		return "", fmt.Errorf("grammar: no definition %s", ref)
	}
	name := ruleName("def " + strings.TrimPrefix(ref, "#/$defs/"))
	for i := 1; b.names[name]; i++ {
		name = fmt.Sprintf("%s-%d", ruleName("def "+strings.TrimPrefix(ref, "#/$defs/")), i)
	}
	b.names[name] = true // reserved; defined in writeDefs
	b.defRule[ref] = name
	return name, nil
}

func (b *builder) pendingDefs() bool {
	for ref := range b.defRule {
		if !b.defDone[ref] {
			return true
		}
	}
	return false
}

func (b *builder) writeDefs() error {
	refs := make([]string, 0, len(b.defRule))
	for ref := range b.defRule {
		if !b.defDone[ref] {
			refs = append(refs, ref)
		}
	}
	sort.Strings(refs)
	for _, ref := range refs {
		b.defDone[ref] = true
		body, err := b.value(b.defs[ref], ref)
		if err != nil {
			return err
		}
		b.define(b.defRule[ref], body)
		if err := b.check(ref); err != nil {
			return err
		}
	}
	return nil
}

// finish writes the grammar out: root first, then the rules as made, then
// the shared primitives in a fixed order.
func (b *builder) finish() (*Grammar, error) {
	var sb strings.Builder
	sb.Grow(b.size)
	write := func(name string) {
		sb.WriteString(name)
		sb.WriteString(" ::= ")
		sb.WriteString(b.bodies[name])
		sb.WriteByte('\n')
	}
	write("root")
	for _, name := range b.order {
		if name != "root" {
			write(name)
		}
	}
	g := &Grammar{GBNF: sb.String(), Rules: len(b.order)}
	for w := range b.widened {
		g.Widened = append(g.Widened, w)
	}
	sort.Strings(g.Widened)
	return g, b.check("#")
}
