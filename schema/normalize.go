package schema

import (
	"bytes"
	"container/list"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
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
func Normalize(raw json.RawMessage) (*Normalized, error) { return normalizeSchema(raw, false, false) }

// NormalizeArgs is Normalize for a tool's arguments schema: the result
// describes a JSON object whatever the original says at its top.
func NormalizeArgs(raw json.RawMessage) (*Normalized, error) {
	return normalizeSchema(raw, true, false)
}

// Simplify is Normalize for tact's own grammar converter (package
// grammar), which expresses more than llama.cpp's: the result keeps
// "pattern", "prefixItems", every "format", enum and const values as
// written and property names of any spelling, and a recursive $ref
// becomes a reference into the result's own "$defs" ("#/$defs/rN": the
// result is never embedded in another schema) instead of "any value" past
// a few levels. Loosened names only what the result leaves out.
func Simplify(raw json.RawMessage) (*Normalized, error) { return normalizeSchema(raw, false, true) }

func normalizeSchema(raw json.RawMessage, args, full bool) (*Normalized, error) {
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
		full:      full,
		defs:      map[*object]*recDef{},
	}
	// A draft-04 document, or one embedding a draft-04 resource (Embed
	// keeps an answer schema's "$schema" and "id"): "id" sets bases. In a
	// later dialect's part "id" is then read too; a base it sets wrongly
	// makes a $ref this walk cannot resolve, which is loosened, never
	// narrowed.
	n.draft4 = bytes.Contains(raw, []byte("json-schema.org/draft-04/")) || bytes.Contains(raw, []byte("json-schema.org/draft-03/"))
	n.index(doc, root)
	if o, ok := doc.(*object); ok {
		n.stack = append(n.stack, o)
	}
	x := n.walk(doc, root, 0)
	if o, ok := doc.(*object); ok {
		if d := n.defs[o]; d != nil && d.body == nil {
			d.body = x // the root recurs ({"$ref": "#"})
			x = recNorm(d)
		}
	}
	if n.err != nil {
		// A reference the validator resolves but this walk does not is
		// loosened (every schema the validator takes yields a grammar);
		// one that leads nowhere makes the schema bad.
		if _, cerr := Compile(raw); cerr != nil {
			return nil, n.err
		}
		n.loose("$ref")
	}
	if args {
		obj := anyNorm()
		obj.types = []string{"object"}
		x = n.merge(obj, x)
	}
	// An arguments schema is embedded in an action's, never a grammar's
	// root (and normalized again when it is: Fill's).
	n.atRoot = !args
	out := n.emit(x)
	n.emitDefs(out)
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
	// pattern is kept only by Simplify (full): "" otherwise.
	pattern string
	// prefix are prefixItems (or draft-07's array form of items): the
	// first items' schemas, items then being the rest's. Simplify only.
	prefix []*norm
	// rec, when set, makes this schema a reference to a recursive
	// definition and nothing else (Simplify only).
	rec *recDef
	// desc is the description, kept for prompts that show the schema
	// (an MCP tool's); the grammar ignores it.
	desc string
}

type prop struct {
	name string
	s    *norm
}

// recDef is a $ref target that refers to itself, as Simplify writes it:
// once, under "$defs", referred to from where it recurs.
type recDef struct {
	name    string
	body    *norm // nil while its target is still being walked
	emitted bool
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
		x.minLen < 0 && x.maxLen < 0 && x.minItems < 0 && x.maxItems < 0 && !x.lo.set && !x.hi.set && x.format == "" &&
		x.pattern == "" && x.prefix == nil && x.rec == nil
}

func (x *norm) addlConstrains() bool {
	return x.addlSet && (x.addlFalse || (x.addl != nil && !x.addl.isAny()))
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
	// full: Simplify's result (see there).
	full bool
	// draft4: the document says it is draft-04 (or older): "id", not
	// "$id", sets a base.
	draft4 bool
	// defs are the recursive $ref targets Simplify refers to, by target.
	defs    map[*object]*recDef
	defList []*recDef
	// err is a reference that leads nowhere: the validator refuses such a
	// schema, so it is not a schema to build a grammar from either.
	err error
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

func (n *normalizer) walkList(list []any, base *url.URL, depth int) []*norm {
	var out []*norm
	for _, s := range list {
		out = append(out, n.walk(s, base, depth+1))
	}
	return out
}

func (n *normalizer) walkObject(o *object, base *url.URL, depth int) *norm {
	base = n.ownBase(o, base)
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
					if s, ok := e.(string); ok && !slices.Contains(x.required, s) {
						x.required = append(x.required, s) // each once: merge and emit rely on it
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
		case "prefixItems":
			if list, ok := v.([]any); ok && n.full {
				x.prefix = n.walkList(list, base, depth)
				if x.prefix == nil {
					x.prefix = []*norm{}
				}
			} else {
				n.loose(k)
			}
		case "additionalItems":
			// Draft 2019-09 and before: the schema of items past a tuple.
			if _, tuple := o.vals["items"].([]any); tuple && n.full {
				if b, ok := v.(bool); ok {
					x.itemsFalse = !b
				} else {
					x.items = n.walk(v, base, depth+1)
				}
			} else if _, tuple := o.vals["items"].([]any); tuple {
				n.loose(k)
			}
		case "pattern":
			if p, ok := v.(string); ok && n.full {
				x.pattern = p
			} else {
				n.loose(k)
			}
		case "items":
			switch t := v.(type) {
			case []any:
				if n.full {
					x.prefix = n.walkList(t, base, depth)
					if x.prefix == nil {
						x.prefix = []*norm{}
					}
					continue
				}
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
