package schema

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Merging schemas (allOf, keywords beside $ref or anyOf) while normalizing.

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
	if a.rec != nil || b.rec != nil {
		// A recursive definition merges through its body once that is
		// known; inside its own walk it is not, and is left out.
		if a.rec != nil && b.rec != nil && a.rec == b.rec {
			return a
		}
		var ok bool
		if a, ok = n.recBody(a); !ok {
			return b
		}
		if b, ok = n.recBody(b); !ok {
			return a
		}
		return n.merge(a, b)
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
	switch {
	case b.pattern == "" || b.pattern == x.pattern:
	case x.pattern == "":
		x.pattern = b.pattern
	default:
		n.loose("pattern") // both must match: the grammar holds the first
	}
	switch {
	case b.prefix == nil:
	case x.prefix == nil:
		x.prefix = b.prefix
	default:
		n.loose("prefixItems") // the first tuple's schemas stand
	}
	if x.desc == "" {
		x.desc = b.desc
	}
	return &x
}

// recBody is x, or the body of the definition x refers to; false while
// that body is still being walked (the reference is then loosened).
func (n *normalizer) recBody(x *norm) (*norm, bool) {
	if x.rec == nil {
		return x, true
	}
	if x.rec.body == nil {
		n.loose("$ref (recursive)")
		return nil, false
	}
	return x.rec.body, true
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

func intersectTypes(a, b []string) []string {
	out := []string{}
	for _, t := range a {
		switch {
		case slices.Contains(b, t):
			out = append(out, t)
		case t == "number" && slices.Contains(b, "integer"):
			out = append(out, "integer")
		case t == "integer" && slices.Contains(b, "number"):
			out = append(out, "integer")
		}
	}
	return out
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
