package schema

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Grammars are built from a normalized copy of a schema, never from the
// schema itself: llama.cpp's converter fails on much that is valid JSON
// Schema (an untyped {"description": ...}, a "$ref" once the schema is
// embedded in an action schema, "minLength" over 2000, ...), and a
// failure there is a failed model call on every step. Normalize turns
// every schema the validator accepts into one the converter handles:
//
//   - local "$ref"s ("#/$defs/x", "#anchor", "$id"-relative) are inlined;
//     a $ref inside itself more than maxRecursion times, below
//     maxRefDepth levels of nesting, or past the expansion budget becomes
//     "any value" (loosened: the original schema still validates);
//   - allOf, and keywords beside a $ref or an anyOf/oneOf, are merged
//     into one schema (into each branch);
//   - a schema with no keyword the grammar uses (annotations only, true)
//     is any value, as a type list of every JSON type;
//   - what the grammar cannot express (pattern, not, if/then/else,
//     patternProperties, multipleOf, bounds over maxRepeat, bounds on
//     numbers that are not integers, ...) is left out, and named in
//     Loosened: whoever uses the grammar validates against the original.
//
// The result only ever allows more than the original (what it narrows is
// what llama.cpp narrows anyway: no properties beyond those named unless
// additionalProperties says so), so a value valid for the original is one
// the grammar can produce, and the validator has the last word.

// Normalized is a schema made fit for building a grammar.
type Normalized struct {
	// Schema is the grammar's schema: plain JSON Schema (the validator
	// accepts it too), properties in the original's order.
	Schema json.RawMessage
	// Loosened names what the original checks and Schema does not
	// (keywords, sorted): values must then be validated against the
	// original. Empty when Schema checks everything the original does.
	Loosened []string
	// Nodes is the number of subschemas in Schema.
	Nodes int
}

const (
	// maxNormalizeDepth bounds the JSON nesting Normalize reads (its
	// recursion); callers taking schemas from outside bound them far
	// lower first (CheckSize).
	maxNormalizeDepth = 512
	// maxRefDepth: a $ref below this many levels of schema nesting is not
	// inlined (any value).
	maxRefDepth = 16
	// maxRecursion is how many times one $ref is inlined within itself.
	maxRecursion = 3
	// maxExpansion is how many subschemas $ref inlining and merging may
	// add to those of the input.
	maxExpansion = 4096
	// maxRepeat is the largest length or item count bound kept:
	// llama.cpp's grammar parser refuses repetitions over 2000, and each
	// costs a rule per step.
	maxRepeat = 1000
	// maxRepeatTotal bounds the bounds kept in one schema, together.
	maxRepeatTotal = 20000
	// maxBranches bounds the anyOf branches a merge may produce.
	maxBranches = 64
	// maxMerges bounds the merges of one schema: merging branches
	// multiplies them, at every level.
	maxMerges = 4 * maxExpansion
	// maxPropertyName is the longest property name a grammar names:
	// llama.cpp builds rule names from property names with std::regex,
	// whose recursion grows with the name.
	maxPropertyName = 256
	// maxProperties is the most properties of one object a grammar
	// names.
	maxProperties = 1024
	// maxOptional is the most optional properties of one object a grammar
	// names, and maxOptionalCost bounds the sum of their squares over a
	// schema: llama.cpp's rule for an object costs about the cube of its
	// optional properties (128: 50 ms, 512: over a second).
	maxOptional     = 128
	maxOptionalCost = 8 * maxOptional * maxOptional
)

// Normalize makes a schema (one the validator accepts) fit for building a
// grammar; see Normalized.
func Normalize(raw json.RawMessage) (*Normalized, error) { return normalizeSchema(raw, false) }

// NormalizeArgs is Normalize for a tool's arguments schema: the result
// describes a JSON object whatever the original says at its top.
func NormalizeArgs(raw json.RawMessage) (*Normalized, error) { return normalizeSchema(raw, true) }

func normalizeSchema(raw json.RawMessage, args bool) (*Normalized, error) {
	doc, objects, err := decodeOrdered(raw, maxNormalizeDepth)
	if err != nil {
		return nil, err
	}
	root, _ := url.Parse(rootURL)
	n := &normalizer{
		resources: map[string]*resource{},
		anchors:   map[string]*resource{},
		loosened:  map[string]bool{},
		budget:    objects + maxExpansion,
		outCap:    objects + maxExpansion,
	}
	n.index(doc, root)
	if o, ok := doc.(*object); ok {
		n.stack = append(n.stack, o)
	}
	x := n.walk(doc, root, 0)
	if args {
		obj := anyNorm()
		obj.types = []string{"object"}
		x = n.merge(obj, x)
	}
	// An arguments schema is embedded in an action's, never a grammar's
	// root (and normalized again when it is: Fill's).
	n.atRoot = !args
	out := n.emit(x)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	res := &Normalized{Schema: b, Nodes: n.out}
	for k := range n.loosened {
		res.Loosened = append(res.Loosened, k)
	}
	sort.Strings(res.Loosened)
	return res, nil
}

// rootURL is the base of a schema's own references, as Compile names it.
const rootURL = "mem:///schema.json"

// object is a decoded JSON object that keeps its keys' order: llama.cpp
// emits properties in schema order, and a client orders them on purpose.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeOrdered decodes one JSON value (objects as *object, numbers as
// json.Number), refusing nesting deeper than maxDepth; objects counts the
// objects in it. A key given twice keeps its first place and last value,
// as encoding/json (and so the validator) reads it.
func decodeOrdered(data []byte, maxDepth int) (v any, objects int, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var read func(depth int) (any, error)
	read = func(depth int) (any, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return tok, nil
		}
		if depth >= maxDepth {
			return nil, fmt.Errorf("nests deeper than %d levels", maxDepth)
		}
		switch d {
		case '{':
			objects++
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := read(depth + 1)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := read(depth + 1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", d)
	}
	v, err = read(0)
	if err != nil {
		return nil, 0, fmt.Errorf("schema: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, 0, errors.New("schema: invalid JSON: trailing data after the first value")
	}
	return v, objects, nil
}

// norm is a normalized schema. With anyOf set, nothing else is: keywords
// beside an anyOf are merged into each branch.
type norm struct {
	types     []string // nil: every type
	props     []prop
	required  []string
	addlSet   bool  // additionalProperties given
	addlFalse bool  // additionalProperties: false
	addl      *norm // additionalProperties' schema (nil: true)
	// patternProps: patternProperties were left out, so other keys
	// must stay possible.
	patternProps bool
	items        *norm
	itemsFalse   bool
	hasEnum      bool
	enum         []any
	hasConst     bool
	cnst         any
	anyOf        []*norm
	minLen       int // -1: none
	maxLen       int
	minItems     int
	maxItems     int
	lo, hi       bound
	format       string
	// desc is the description, kept for prompts that show the schema
	// (an MCP tool's); the grammar ignores it.
	desc string
}

type prop struct {
	name string
	s    *norm
}

// bound is a numeric bound as given (exclusive or not).
type bound struct {
	set, excl bool
	v         float64
}

func anyNorm() *norm {
	return &norm{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
}

func anyOfNorm(branches []*norm) *norm {
	x := anyNorm()
	x.anyOf = branches
	return x
}

// isAny: the schema allows every value.
func (x *norm) isAny() bool {
	return x.types == nil && len(x.props) == 0 && len(x.required) == 0 && !x.addlConstrains() && !x.patternProps &&
		(x.items == nil || x.items.isAny()) && !x.itemsFalse && !x.hasEnum && !x.hasConst && x.anyOf == nil &&
		x.minLen < 0 && x.maxLen < 0 && x.minItems < 0 && x.maxItems < 0 && !x.lo.set && !x.hi.set && x.format == ""
}

func (x *norm) addlConstrains() bool {
	return x.addlSet && (x.addlFalse || (x.addl != nil && !x.addl.isAny()))
}

// resource is a schema a $ref may land on, with the base URL in effect
// where it stands (its own $id, if any, applies inside it).
type resource struct {
	node   any
	parent *url.URL
}

// ownBase is the base URL inside node: its $id resolved against parent.
func ownBase(node any, parent *url.URL) *url.URL {
	o, ok := node.(*object)
	if !ok {
		return parent
	}
	id, ok := o.vals["$id"].(string)
	if !ok || id == "" || strings.HasPrefix(id, "#") {
		return parent
	}
	u, err := parent.Parse(id)
	if err != nil {
		return parent
	}
	u.Fragment, u.RawFragment = "", ""
	return u
}

type normalizer struct {
	resources map[string]*resource // by $id (absolute, no fragment)
	anchors   map[string]*resource // by absolute URL#anchor
	loosened  map[string]bool
	stack     []*object // $ref targets being inlined
	nodes     int       // subschemas walked
	merges    int
	budget    int // nodes allowed
	out       int // subschemas emitted
	outCap    int
	repeats   int  // length and item bounds kept, summed
	atRoot    bool // the next schema emitted is the document's root
	// optionalCost sums the squares of objects' optional properties.
	optionalCost int
}

func (n *normalizer) loose(what string) { n.loosened[what] = true }

// Keywords whose value is one schema, an object of schemas or a list of
// schemas: where $id and $anchor are looked for.
var (
	schemaKeywords = map[string]bool{"additionalProperties": true, "items": true, "not": true, "if": true, "then": true,
		"else": true, "contains": true, "propertyNames": true, "unevaluatedItems": true, "unevaluatedProperties": true,
		"additionalItems": true, "contentSchema": true}
	schemaMapKeywords  = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true, "dependencies": true}
	schemaListKeywords = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true, "items": true}
	// unexpressed are the keywords that constrain values and that no
	// grammar here expresses: they are left out, and Loosened names them.
	unexpressed = map[string]bool{"pattern": true, "not": true, "if": true, "then": true, "else": true,
		"dependentRequired": true, "dependentSchemas": true, "dependencies": true, "propertyNames": true,
		"minProperties": true, "maxProperties": true, "unevaluatedItems": true, "unevaluatedProperties": true,
		"contains": true, "minContains": true, "maxContains": true, "prefixItems": true, "additionalItems": true,
		"uniqueItems": true, "multipleOf": true, "$dynamicRef": true, "$recursiveRef": true}
)

// index records the resources ($id) and anchors of a schema document.
func (n *normalizer) index(node any, parent *url.URL) {
	o, ok := node.(*object)
	if !ok {
		return
	}
	base := ownBase(o, parent)
	if _, ok := n.resources[base.String()]; !ok {
		n.resources[base.String()] = &resource{o, parent}
	}
	anchors := []string{}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if a, ok := o.vals[k].(string); ok && a != "" {
			anchors = append(anchors, a)
		}
	}
	if id, ok := o.vals["$id"].(string); ok && strings.HasPrefix(id, "#") && len(id) > 1 {
		anchors = append(anchors, id[1:]) // draft 6-7: "$id": "#name" is an anchor
	}
	for _, a := range anchors {
		if _, dup := n.anchors[base.String()+"#"+a]; !dup {
			n.anchors[base.String()+"#"+a] = &resource{o, parent}
		}
	}
	for _, k := range o.keys {
		v := o.vals[k]
		switch {
		case schemaMapKeywords[k]:
			if m, ok := v.(*object); ok {
				for _, mk := range m.keys {
					n.index(m.vals[mk], base)
				}
			}
		case schemaListKeywords[k] && isList(v):
			for _, s := range v.([]any) {
				n.index(s, base)
			}
		case schemaKeywords[k]:
			n.index(v, base)
		}
	}
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// resolve finds a $ref's target in the document.
func (n *normalizer) resolve(u *url.URL) (*resource, bool) {
	doc := *u
	doc.Fragment, doc.RawFragment = "", ""
	res, ok := n.resources[doc.String()]
	if !ok {
		return nil, false
	}
	frag := u.Fragment
	if frag == "" {
		return res, true
	}
	if !strings.HasPrefix(frag, "/") {
		a, ok := n.anchors[doc.String()+"#"+frag]
		return a, ok
	}
	node, parent := res.node, res.parent
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		base := ownBase(node, parent)
		switch t := node.(type) {
		case *object:
			v, ok := t.vals[tok]
			if !ok {
				return nil, false
			}
			node = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			node = t[i]
		default:
			return nil, false
		}
		parent = base
	}
	return &resource{node, parent}, true
}

// walk normalizes one schema at depth levels of nesting.
func (n *normalizer) walk(node any, base *url.URL, depth int) *norm {
	n.nodes++
	switch v := node.(type) {
	case bool:
		if !v {
			// Nothing is valid: no grammar says so; the validator does.
			n.loose("false")
		}
		return anyNorm()
	case *object:
		return n.walkObject(v, base, depth)
	}
	return anyNorm() // not a schema (the validator refused it already)
}

func (n *normalizer) walkObject(o *object, base *url.URL, depth int) *norm {
	base = ownBase(o, base)
	x := anyNorm()
	var parts []*norm // merged in: allOf's schemas, $ref's target, anyOf and oneOf
	for _, k := range o.keys {
		v := o.vals[k]
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				x.types = []string{t}
			case []any:
				x.types = nil
				for _, e := range t {
					if s, ok := e.(string); ok {
						x.types = append(x.types, s)
					}
				}
			}
		case "properties":
			p, ok := v.(*object)
			if !ok {
				continue
			}
			for _, name := range p.keys {
				sub := p.vals[name]
				if b, ok := sub.(bool); ok && !b {
					continue // a property that may not be present is not named
				}
				x.props = append(x.props, prop{name, n.walk(sub, base, depth+1)})
			}
		case "required":
			if list, ok := v.([]any); ok {
				for _, e := range list {
					if s, ok := e.(string); ok {
						x.required = append(x.required, s)
					}
				}
			}
		case "additionalProperties":
			x.addlSet = true
			if b, ok := v.(bool); ok {
				x.addlFalse = !b
			} else {
				x.addl = n.walk(v, base, depth+1)
			}
		case "patternProperties":
			n.loose(k)
			x.patternProps = true
		case "items":
			switch t := v.(type) {
			case []any:
				n.loose("items (tuple)")
			case bool:
				x.itemsFalse = !t
			default:
				x.items = n.walk(v, base, depth+1)
			}
		case "enum":
			if list, ok := v.([]any); ok {
				x.hasEnum, x.enum = true, list
			}
		case "const":
			x.hasConst, x.cnst = true, v
		case "anyOf", "oneOf":
			list, ok := v.([]any)
			if !ok {
				continue
			}
			var branches []*norm
			for _, s := range list {
				if b, ok := s.(bool); ok && !b {
					continue // a branch nothing matches
				}
				branches = append(branches, n.walk(s, base, depth+1))
			}
			if k == "oneOf" && len(branches) > 1 {
				n.loose("oneOf") // exactly one: the grammar allows any
			}
			switch len(branches) {
			case 0:
				n.loose(k)
			case 1:
				parts = append(parts, branches[0])
			default:
				parts = append(parts, anyOfNorm(branches))
			}
		case "allOf":
			if list, ok := v.([]any); ok {
				for _, s := range list {
					parts = append(parts, n.walk(s, base, depth+1))
				}
			}
		case "$ref":
			parts = append(parts, n.ref(v, base, depth))
		case "minLength", "maxLength", "minItems", "maxItems":
			i, ok := intOf(v)
			if !ok || i < 0 || i > math.MaxInt32 {
				n.loose(k)
				continue
			}
			switch k {
			case "minLength":
				x.minLen = int(i)
			case "maxLength":
				x.maxLen = int(i)
			case "minItems":
				x.minItems = int(i)
			case "maxItems":
				x.maxItems = int(i)
			}
		case "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum":
			f, ok := floatOf(v)
			if !ok {
				n.loose(k) // draft-04's boolean exclusiveMinimum, or out of range
				continue
			}
			b := bound{set: true, excl: strings.HasPrefix(k, "exclusive"), v: f}
			if strings.HasSuffix(k, "inimum") {
				x.lo = tighter(x.lo, b, true)
			} else {
				x.hi = tighter(x.hi, b, false)
			}
		case "format":
			if s, ok := v.(string); ok {
				x.format = s
			}
		case "description":
			if s, ok := v.(string); ok {
				x.desc = s
			}
		case "$dynamicRef", "$recursiveRef":
			// Their targets depend on the path taken: any value.
			n.loose(k)
		default:
			if unexpressed[k] {
				n.loose(k)
			}
		}
	}
	for _, p := range parts {
		x = n.merge(x, p)
	}
	return x
}

// ref inlines a $ref's target, or loosens it to any value.
func (n *normalizer) ref(v any, base *url.URL, depth int) *norm {
	s, ok := v.(string)
	if !ok {
		return anyNorm()
	}
	u, err := base.Parse(s)
	if err != nil {
		n.loose("$ref")
		return anyNorm()
	}
	target, ok := n.resolve(u)
	if !ok {
		n.loose("$ref")
		return anyNorm()
	}
	if o, ok := target.node.(*object); ok {
		seen := 0
		for _, s := range n.stack {
			if s == o {
				seen++
			}
		}
		switch {
		case seen >= maxRecursion:
			n.loose("$ref (recursive)")
			return anyNorm()
		case depth >= maxRefDepth:
			n.loose("$ref (nested too deep)")
			return anyNorm()
		case n.nodes >= n.budget:
			n.loose("$ref (expansion limit)")
			return anyNorm()
		}
		n.stack = append(n.stack, o)
		defer func() { n.stack = n.stack[:len(n.stack)-1] }()
	}
	return n.walk(target.node, target.parent, depth)
}

// merge is the schema of values valid for both a and b (allOf), as far as
// the grammar goes: what cannot be merged is loosened.
func (n *normalizer) merge(a, b *norm) *norm {
	if b.isAny() || a.isAny() {
		x, other := a, b
		if a.isAny() {
			x, other = b, a
		}
		if x.desc == "" && other.desc != "" {
			c := *x
			c.desc = other.desc
			return &c
		}
		return x
	}
	n.merges++
	if a.anyOf != nil || b.anyOf != nil {
		return n.mergeBranches(a, b)
	}
	x := *a
	x.props = append([]prop(nil), a.props...)
	x.required = append([]string(nil), a.required...)
	if b.types != nil {
		if a.types == nil {
			x.types = b.types
		} else if t := intersectTypes(a.types, b.types); len(t) > 0 {
			x.types = t
		} else {
			n.loose("allOf (types that exclude each other)")
		}
	}
	at := make(map[string]int, len(x.props))
	for i, p := range x.props {
		at[p.name] = i
	}
	for _, p := range b.props {
		i, found := at[p.name]
		switch {
		case !found:
			at[p.name] = len(x.props)
			x.props = append(x.props, p)
		case n.merges < maxMerges:
			x.props[i].s = n.merge(x.props[i].s, p.s)
		default:
			n.loose("allOf (expansion limit)") // the first schema of the property stays
		}
	}
	x.required = union(x.required, b.required)
	if b.addlSet {
		switch {
		case !x.addlSet:
			x.addlSet, x.addlFalse, x.addl = true, b.addlFalse, b.addl
		case x.addlFalse || b.addlFalse:
			x.addlFalse, x.addl = true, nil
		case x.addl == nil:
			x.addl = b.addl
		case b.addl != nil:
			x.addl = n.merge(x.addl, b.addl)
		}
	}
	x.patternProps = x.patternProps || b.patternProps
	switch {
	case b.items == nil:
	case x.items == nil:
		x.items = b.items
	default:
		x.items = n.merge(x.items, b.items)
	}
	x.itemsFalse = x.itemsFalse || b.itemsFalse
	if b.hasConst {
		if x.hasConst && !sameJSON(x.cnst, b.cnst) {
			n.loose("allOf (consts that differ)")
		} else {
			x.hasConst, x.cnst = true, b.cnst
		}
	}
	if b.hasEnum {
		if x.hasEnum {
			var both []any
			for _, v := range x.enum {
				for _, w := range b.enum {
					if sameJSON(v, w) {
						both = append(both, v)
						break
					}
				}
			}
			x.enum = both
		} else {
			x.hasEnum, x.enum = true, b.enum
		}
	}
	x.minLen, x.maxLen = maxSet(x.minLen, b.minLen), minSet(x.maxLen, b.maxLen)
	x.minItems, x.maxItems = maxSet(x.minItems, b.minItems), minSet(x.maxItems, b.maxItems)
	x.lo, x.hi = tighter(x.lo, b.lo, true), tighter(x.hi, b.hi, false)
	if x.format == "" {
		x.format = b.format
	}
	if x.desc == "" {
		x.desc = b.desc
	}
	return &x
}

// mergeBranches merges where either side is an anyOf: every pair of
// branches, unless that makes too many.
func (n *normalizer) mergeBranches(a, b *norm) *norm {
	as, bs := a.anyOf, b.anyOf
	if as == nil {
		as = []*norm{a}
	}
	if bs == nil {
		bs = []*norm{b}
	}
	if len(as)*len(bs) > maxBranches || n.merges >= maxMerges {
		n.loose("anyOf (too many branches to merge)")
		if b.anyOf != nil {
			return b
		}
		return a
	}
	var out []*norm
	for _, x := range as {
		for _, y := range bs {
			out = append(out, n.merge(x, y))
		}
	}
	return anyOfNorm(out)
}

// every JSON type, for "any value": llama.cpp reads {} as any object.
var anyTypes = []any{"string", "number", "boolean", "object", "array", "null"}

func anyObject() *object {
	o := newObject()
	o.set("type", anyTypes)
	return o
}

// emit writes a normalized schema as JSON Schema the grammar converter
// handles: every schema has a type, a const, an enum, an anyOf, or
// properties or items (llama.cpp fails on any other).
func (n *normalizer) emit(x *norm) *object {
	o := n.emitNode(x)
	if x.desc != "" {
		if _, ok := o.vals["description"]; !ok {
			o.set("description", x.desc)
		}
	}
	return o
}

func (n *normalizer) emitNode(x *norm) *object {
	root := n.atRoot
	n.atRoot = false
	n.out++
	if n.out > n.outCap {
		n.loose("(expansion limit)")
		return anyObject()
	}
	if x.anyOf != nil {
		if len(x.anyOf) == 1 {
			n.atRoot = root
			return n.emit(x.anyOf[0])
		}
		var list []any
		for _, b := range x.anyOf {
			list = append(list, n.emit(b))
		}
		o := newObject()
		o.set("anyOf", list)
		return o
	}
	if x.hasConst {
		if safeValue(x.cnst) {
			o := newObject()
			o.set("const", x.cnst)
			return o
		}
		n.loose("const")
	}
	if x.hasEnum {
		var vals []any
		safe := true
		for _, v := range x.enum {
			safe = safe && safeValue(v)
			if x.types == nil || hasType(x.types, typeOf(v)) { // values of other types are invalid anyway
				vals = append(vals, v)
			}
		}
		if safe && len(vals) > 0 {
			o := newObject()
			o.set("enum", vals)
			return o
		}
		n.loose("enum")
	}
	o := newObject()
	has := func(t string) bool { return x.types == nil || hasType(x.types, t) }
	objectish := len(x.props) > 0 || len(x.required) > 0 || x.addlConstrains() || x.patternProps
	arrayish := (x.items != nil && !x.items.isAny()) || x.itemsFalse || x.minItems >= 0 || x.maxItems >= 0
	switch {
	case x.types != nil:
		if len(x.types) == 1 {
			o.set("type", x.types[0])
		} else {
			list := make([]any, len(x.types))
			for i, t := range x.types {
				list[i] = t
			}
			o.set("type", list)
		}
	case objectish:
		// Untyped with properties: llama.cpp builds an object.
	case arrayish:
		// Untyped with items: an array.
	default:
		if x.minLen >= 0 || x.maxLen >= 0 || x.lo.set || x.hi.set || x.format != "" {
			n.loose("keywords of a type the schema does not name")
		}
		return anyObject()
	}
	if has("object") && objectish {
		n.emitObject(o, x, root)
	}
	if has("array") && arrayish {
		if x.types == nil && objectish {
			n.loose("items") // untyped with properties and items: llama.cpp builds the object
		} else {
			n.emitArray(o, x)
		}
	}
	if has("string") {
		n.emitString(o, x)
	}
	if x.lo.set || x.hi.set {
		switch {
		case x.types != nil && contains(x.types, "integer"):
			n.emitIntBounds(o, x)
			if contains(x.types, "number") {
				n.loose("minimum/maximum")
			}
		case has("number"):
			n.loose("minimum/maximum") // llama.cpp bounds integers only
		}
	}
	if !grammarKnown(o) {
		// Untyped, and nothing left that llama.cpp builds from (say
		// "additionalProperties": true alone): any value.
		o.set("type", anyTypes)
	}
	return o
}

// grammarKnown: llama.cpp's converter builds a rule from o (it fails on
// a schema with none of these).
func grammarKnown(o *object) bool {
	for _, k := range []string{"type", "const", "enum", "anyOf", "properties", "items"} {
		if _, ok := o.vals[k]; ok {
			return true
		}
	}
	a, ok := o.vals["additionalProperties"]
	return ok && a != true
}

func (n *normalizer) emitObject(o *object, x *norm, root bool) {
	// generic leaves the properties out: any object (any value if the
	// schema names no type).
	generic := func(why string) {
		n.loose(why)
		if _, typed := o.vals["type"]; !typed {
			o.set("type", anyTypes)
		}
	}
	props := x.props
	named := make(map[string]bool, len(props))
	for _, p := range props {
		named[p.name] = true
	}
	req := union(nil, x.required)
	for _, r := range req {
		if !named[r] {
			props = append(props, prop{r, anyNorm()})
		}
	}
	switch {
	case slices.ContainsFunc(props, func(p prop) bool { return len(p.name) > maxPropertyName }):
		generic("properties (a name over 256 bytes)")
		return
	case root && slices.ContainsFunc(props, func(p prop) bool { return p.name == "" }):
		// llama.cpp names a top-level property's rule after it, and the
		// empty name's rule would be the grammar's root.
		generic("properties (an empty name)")
		return
	case len(props) > maxProperties:
		generic("properties (over 1024)")
		return
	}
	// Other keys: llama.cpp allows none unless additionalProperties says so.
	var allowOther, forbidOther bool
	var other *norm // their schema
	switch {
	case x.patternProps:
		allowOther = true
	case !x.addlSet:
	case x.addlFalse:
		forbidOther = true
	case x.addl == nil || x.addl.isAny():
		allowOther = true
	default:
		other = x.addl
	}
	// llama.cpp's rule for an object costs about the cube of its optional
	// properties: past a bound only the required ones are named, and
	// other keys are allowed.
	needOther := false
	if optional := len(props) - len(req); optional > maxOptional || n.optionalCost+optional*optional > maxOptionalCost {
		n.loose("properties (too many optional)")
		inReq := make(map[string]bool, len(req))
		for _, r := range req {
			inReq[r] = true
		}
		props = slices.DeleteFunc(slices.Clone(props), func(p prop) bool { return !inReq[p.name] })
		allowOther, forbidOther, other, needOther = true, false, nil, true
	} else {
		n.optionalCost += optional * optional
	}
	if (allowOther || other != nil) && len(props) > 0 && !grammarSafeNames(props) {
		// llama.cpp writes the other keys' rule as character classes of
		// the named ones, which such names break.
		if needOther {
			generic("properties (names a grammar cannot exclude)")
			return
		}
		allowOther, other = false, nil // narrower: no other key
	}
	if len(props) > 0 {
		ps := newObject()
		for _, p := range props {
			ps.set(p.name, n.emit(p.s))
		}
		o.set("properties", ps)
	}
	if len(req) > 0 {
		list := make([]any, len(req))
		for i, r := range req {
			list[i] = r
		}
		o.set("required", list)
	}
	switch {
	case forbidOther:
		o.set("additionalProperties", false)
	case other != nil:
		o.set("additionalProperties", n.emit(other))
	case allowOther:
		o.set("additionalProperties", true)
	}
}

func (n *normalizer) emitArray(o *object, x *norm) {
	lo, hi := x.minItems, x.maxItems
	if x.itemsFalse {
		lo, hi = -1, 0
	}
	lo, hi = n.repeatBounds(lo, hi, "minItems", "maxItems")
	items := x.items
	if items == nil {
		items = anyNorm()
	}
	if !items.isAny() || lo >= 0 || hi >= 0 {
		o.set("items", n.emit(items))
	}
	if lo >= 0 {
		o.set("minItems", lo)
	}
	if hi >= 0 {
		o.set("maxItems", hi)
	}
}

func (n *normalizer) emitString(o *object, x *norm) {
	lo, hi := n.repeatBounds(x.minLen, x.maxLen, "minLength", "maxLength")
	if lo >= 0 {
		o.set("minLength", lo)
	}
	if hi >= 0 {
		o.set("maxLength", hi)
	}
	if x.format != "" {
		// llama.cpp knows a few formats, and its date is not the
		// validator's (February 31st): validated either way.
		n.loose("format")
		switch x.format {
		case "date", "time", "date-time", "uuid":
			o.set("format", x.format)
		}
	}
}

// repeatBounds keeps the length or item bounds a grammar can hold.
func (n *normalizer) repeatBounds(lo, hi int, loName, hiName string) (int, int) {
	if lo >= 0 && hi >= 0 && lo > hi {
		n.loose(loName + "/" + hiName) // nothing valid: the validator says so
		return -1, -1
	}
	if lo > maxRepeat || (lo > 0 && n.repeats+lo > maxRepeatTotal) {
		n.loose(loName)
		lo = -1
	} else if lo > 0 {
		n.repeats += lo
	}
	if hi > maxRepeat || (hi > 0 && n.repeats+hi > maxRepeatTotal) {
		n.loose(hiName)
		hi = -1
	} else if hi > 0 {
		n.repeats += hi
	}
	return lo, hi
}

// emitIntBounds writes an integer's bounds as the inclusive integers
// llama.cpp reads.
func (n *normalizer) emitIntBounds(o *object, x *norm) {
	const limit = 1 << 53 // exact in a float64, and far from int64's overflow
	var lo, hi int64
	hasLo, hasHi := false, false
	if b := x.lo; b.set {
		v := math.Ceil(b.v)
		if b.excl {
			v = math.Floor(b.v) + 1
		}
		if math.Abs(v) <= limit {
			lo, hasLo = int64(v), true
		}
	}
	if b := x.hi; b.set {
		v := math.Floor(b.v)
		if b.excl {
			v = math.Ceil(b.v) - 1
		}
		if math.Abs(v) <= limit {
			hi, hasHi = int64(v), true
		}
	}
	if (x.lo.set && !hasLo) || (x.hi.set && !hasHi) || (hasLo && hasHi && lo > hi) {
		n.loose("minimum/maximum")
		return
	}
	if hasLo {
		o.set("minimum", lo)
	}
	if hasHi {
		o.set("maximum", hi)
	}
}

// grammarSafeNames: property names llama.cpp can put in a character class.
func grammarSafeNames(props []prop) bool {
	for _, p := range props {
		for i := 0; i < len(p.name); i++ {
			c := p.name[i]
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == ']' || c == '^' {
				return false
			}
		}
	}
	return true
}

// safeValue: a const or enum value llama.cpp writes back as the same JSON
// (its parser turns integers past 2^53 into floats, huge floats into inf).
func safeValue(v any) bool {
	switch t := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) {
			return false
		}
		if !strings.ContainsAny(string(t), ".eE") {
			return math.Abs(f) <= 1<<53
		}
		return true
	case []any:
		for _, e := range t {
			if !safeValue(e) {
				return false
			}
		}
	case *object:
		for _, k := range t.keys {
			if !safeValue(t.vals[k]) {
				return false
			}
		}
	}
	return true
}

func typeOf(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := strconv.ParseFloat(string(t), 64); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// hasType: types allow t ("number" allows integers).
func hasType(types []string, t string) bool {
	for _, x := range types {
		if x == t || (t == "integer" && x == "number") {
			return true
		}
	}
	return false
}

func intersectTypes(a, b []string) []string {
	out := []string{}
	for _, t := range a {
		switch {
		case contains(b, t):
			out = append(out, t)
		case t == "number" && contains(b, "integer"):
			out = append(out, "integer")
		case t == "integer" && contains(b, "number"):
			out = append(out, "integer")
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// union is a's strings then b's not in a, each once.
func union(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func maxSet(a, b int) int {
	if a < 0 {
		return b
	}
	return max(a, b)
}

func minSet(a, b int) int {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

// tighter is the stricter of two lower (lower) or upper bounds.
func tighter(a, b bound, lower bool) bound {
	switch {
	case !a.set:
		return b
	case !b.set:
		return a
	case a.v == b.v:
		if b.excl {
			return b
		}
		return a
	case (b.v > a.v) == lower:
		return b
	}
	return a
}

func intOf(v any) (int64, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := num.Int64(); err == nil {
		return i, true
	}
	f, err := num.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

func floatOf(v any) (float64, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := num.Float64()
	return f, err == nil && !math.IsInf(f, 0)
}

// normCache keeps the normalized arguments schemas of recent tools: action
// and plan schemas are built for every step from the same tools.
var (
	normMu    sync.Mutex
	normCache = map[string]*list.Element{} // schema text -> element holding a normEntry
	normLRU   = list.New()
)

type normEntry struct {
	key string
	n   *Normalized
	err error
}

// NormalizeArgsCached is NormalizeArgs, remembered for the cacheSize
// schemas used last.
func NormalizeArgsCached(raw json.RawMessage) (*Normalized, error) {
	key := string(raw)
	normMu.Lock()
	if el, ok := normCache[key]; ok {
		normLRU.MoveToFront(el)
		e := el.Value.(normEntry)
		normMu.Unlock()
		return e.n, e.err
	}
	normMu.Unlock()
	n, err := NormalizeArgs(raw)
	normMu.Lock()
	defer normMu.Unlock()
	if _, ok := normCache[key]; !ok {
		normCache[key] = normLRU.PushFront(normEntry{key, n, err})
		if normLRU.Len() > cacheSize {
			oldest := normLRU.Back()
			normLRU.Remove(oldest)
			delete(normCache, oldest.Value.(normEntry).key)
		}
	}
	return n, err
}
