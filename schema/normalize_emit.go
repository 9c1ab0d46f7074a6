package schema

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Writing a normalized schema out in the subset llama.cpp's converter
// understands, loosening the rest.

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
	if x.rec != nil {
		o := newObject()
		o.set("$ref", "#/$defs/"+x.rec.name)
		return o
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
		if x.types != nil && !hasType(x.types, typeOf(x.cnst)) {
			n.loose("const (of a type the schema excludes)") // nothing valid
		}
		if x.hasEnum && !slices.ContainsFunc(x.enum, func(v any) bool { return sameJSON(v, x.cnst) }) {
			n.loose("const (not among enum)") // nothing valid
		}
		if n.full || safeValue(x.cnst) {
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
		if (safe || n.full) && len(vals) > 0 {
			o := newObject()
			o.set("enum", vals)
			return o
		}
		n.loose("enum")
	}
	o := newObject()
	has := func(t string) bool { return x.types == nil || hasType(x.types, t) }
	objectish := len(x.props) > 0 || len(x.required) > 0 || x.addlConstrains() || x.patternProps
	arrayish := (x.items != nil && !x.items.isAny()) || x.itemsFalse || x.minItems >= 0 || x.maxItems >= 0 || x.prefix != nil
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
		if x.minLen >= 0 || x.maxLen >= 0 || x.lo.set || x.hi.set || x.format != "" || x.pattern != "" {
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
		case x.types != nil && slices.Contains(x.types, "integer"):
			n.emitIntBounds(o, x)
			if slices.Contains(x.types, "number") {
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
	req := x.required
	for _, r := range req {
		if !named[r] {
			if x.addlFalse && !x.patternProps {
				n.loose("required (a property additionalProperties forbids)") // nothing valid
			}
			props = append(props, prop{r, anyNorm()})
		}
	}
	switch {
	case n.full && len(props) > maxProperties:
		generic("properties (over 1024)")
		return
	case n.full:
		// tact's grammar spells any name and costs one rule per optional
		// property: none of llama.cpp's limits below apply.
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
	if optional := len(props) - len(req); !n.full && (optional > maxOptional || n.optionalCost+optional*optional > maxOptionalCost) {
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
	if !n.full && (allowOther || other != nil) && len(props) > 0 && !grammarSafeNames(props) {
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
		if lo > 0 && x.prefix == nil {
			n.loose("minItems") // no item allowed, one wanted: nothing valid
		}
		lo, hi = -1, 0
	}
	lo, hi = n.repeatBounds(lo, hi, "minItems", "maxItems")
	items := x.items
	if items == nil {
		items = anyNorm()
	}
	if x.prefix != nil {
		list := make([]any, len(x.prefix))
		for i, p := range x.prefix {
			list[i] = n.emit(p)
		}
		o.set("prefixItems", list)
		if x.itemsFalse {
			o.set("items", false)
			lo, hi = x.minItems, x.maxItems
			lo, hi = n.repeatBounds(lo, hi, "minItems", "maxItems")
		} else if !items.isAny() {
			o.set("items", n.emit(items))
		}
	} else if !items.isAny() || lo >= 0 || hi >= 0 {
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
	if x.pattern != "" {
		o.set("pattern", x.pattern)
	}
	if x.format != "" && n.full {
		o.set("format", x.format) // the grammar says what it enforces
	} else if x.format != "" {
		// llama.cpp knows a few formats, and its date is not the
		// validator's (February 31st): validated either way.
		n.loose("format")
		switch x.format {
		case "date", "time", "date-time", "uuid":
			o.set("format", x.format)
		}
	}
}

// emitDefs writes Simplify's recursive definitions under the root's
// "$defs"; writing one may refer to others, written in turn.
func (n *normalizer) emitDefs(root *object) {
	defs := newObject()
	for progress := true; progress; {
		progress = false
		for _, d := range n.defList {
			if d.emitted || d.body == nil {
				continue
			}
			d.emitted, progress = true, true
			defs.set(d.name, n.emit(d.body))
		}
	}
	if len(defs.keys) > 0 {
		root.set("$defs", defs)
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
	kv := make(ordered, len(o.keys))
	for i, k := range o.keys {
		kv[i].k, kv[i].v = k, o.vals[k]
	}
	return kv.MarshalJSON()
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
