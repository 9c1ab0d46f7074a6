package schema

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Resolving local references ($ref, $anchor, $id) while normalizing.

// resource is a schema a $ref may land on, with the base URL in effect
// where it stands (its own $id, if any, applies inside it).
type resource struct {
	node   any
	parent *url.URL
}

// ownBase is the base URL inside node: its $id (draft-04's id in a
// draft-04 document) resolved against parent.
func (n *normalizer) ownBase(node any, parent *url.URL) *url.URL {
	o, ok := node.(*object)
	if !ok {
		return parent
	}
	id, ok := o.vals["$id"].(string)
	if !ok && n.draft4 {
		id, ok = o.vals["id"].(string)
	}
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

// index records the resources ($id) and anchors of a schema document.
func (n *normalizer) index(node any, parent *url.URL) {
	o, ok := node.(*object)
	if !ok {
		return
	}
	base := n.ownBase(o, parent)
	if _, ok := n.resources[base.String()]; !ok {
		n.resources[base.String()] = &resource{o, parent}
	}
	anchors := []string{}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if a, ok := o.vals[k].(string); ok && a != "" {
			anchors = append(anchors, a)
		}
	}
	id, _ := o.vals["$id"].(string)
	if id == "" && n.draft4 {
		id, _ = o.vals["id"].(string)
	}
	if strings.HasPrefix(id, "#") && len(id) > 1 {
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
		base := n.ownBase(node, parent)
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

// ref inlines a $ref's target, or loosens it to any value.
func (n *normalizer) ref(v any, base *url.URL, depth int) *norm {
	s, ok := v.(string)
	if !ok {
		return anyNorm()
	}
	u, err := base.Parse(s)
	if err == nil {
		if target, ok := n.resolve(u); ok {
			return n.inline(target, depth)
		}
	}
	if n.err == nil {
		n.err = fmt.Errorf("schema: $ref %q: no such schema in the document", s)
	}
	return anyNorm()
}

// inline walks a reference's target in its place, unless it recurses or
// nests too deep, or the expansion budget is spent: then "any value".
func (n *normalizer) inline(target *resource, depth int) *norm {
	if o, ok := target.node.(*object); ok {
		seen := 0
		for _, s := range n.stack {
			if s == o {
				seen++
			}
		}
		if n.full {
			if d := n.defs[o]; d != nil && d.body != nil {
				return recNorm(d) // walked before: refer to it
			}
			if seen > 0 {
				return recNorm(n.defFor(o))
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
		x := n.walk(target.node, target.parent, depth)
		n.stack = n.stack[:len(n.stack)-1]
		if d := n.defs[o]; d != nil && d.body == nil {
			d.body = x // it recurred while walked: its rule is x
			return recNorm(d)
		}
		return x
	}
	return n.walk(target.node, target.parent, depth)
}

// defFor is the recursive definition of target, made on first use.
func (n *normalizer) defFor(target *object) *recDef {
	d, ok := n.defs[target]
	if !ok {
		d = &recDef{name: fmt.Sprintf("r%d", len(n.defList))}
		n.defs[target] = d
		n.defList = append(n.defList, d)
	}
	return d
}

func recNorm(d *recDef) *norm {
	x := anyNorm()
	x.rec = d
	return x
}
