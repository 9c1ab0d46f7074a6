package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// node is one subschema of schema.Simplify's output: the few keywords it
// writes, nothing else.
type node struct {
	ref      string // "#/$defs/rN": this schema is that definition
	types    []string
	anyOf    []*node
	hasConst bool
	cnst     json.RawMessage
	hasEnum  bool
	enum     []json.RawMessage
	props    []prop
	required []string
	// additionalProperties: addlSet false means absent (see object).
	addlSet, addlFalse bool
	addl               *node
	items              *node
	itemsFalse         bool
	prefix             []*node
	hasPrefix          bool
	minItems, maxItems int
	minLen, maxLen     int
	min, max           *int64
	format, pattern    string
}

type prop struct {
	name string
	s    *node
}

// decode reads Simplify's output: the root schema and the definitions
// under its "$defs", by reference ("#/$defs/rN").
func decode(raw []byte) (*node, map[string]*node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	defs := map[string]*node{}
	root, err := readSchema(dec, 0, defs, true)
	if err != nil {
		return nil, nil, err
	}
	return root, defs, nil
}

func newNode() *node {
	return &node{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
}

func expect(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %v, got %v", want, tok)
	}
	return nil
}

func readSchema(dec *json.Decoder, depth int, defs map[string]*node, root bool) (*node, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("the simplified schema nests over %d levels", maxNesting)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	x := newNode()
	if b, ok := tok.(bool); ok {
		if !b {
			x.hasEnum = true // nothing valid: the validator says so
		}
		return x, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("a schema is an object, got %v", tok)
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		if err := readKeyword(dec, x, k, depth, defs, root); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return x, expect(dec, '}')
}

func readKeyword(dec *json.Decoder, x *node, k string, depth int, defs map[string]*node, root bool) error {
	sub := func() (*node, error) { return readSchema(dec, depth+1, defs, false) }
	list := func() ([]*node, error) {
		if err := expect(dec, '['); err != nil {
			return nil, err
		}
		out := []*node{}
		for dec.More() {
			s, err := sub()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, expect(dec, ']')
	}
	// schemaMap reads an object of schemas by name, in order.
	schemaMap := func(add func(name string, s *node)) error {
		if err := expect(dec, '{'); err != nil {
			return err
		}
		for dec.More() {
			nt, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := nt.(string)
			s, err := sub()
			if err != nil {
				return err
			}
			add(name, s)
		}
		return expect(dec, '}')
	}
	var err error
	switch k {
	case "$ref":
		err = dec.Decode(&x.ref)
	case "$defs":
		if !root {
			return fmt.Errorf("$defs below the root")
		}
		return schemaMap(func(name string, s *node) { defs["#/$defs/"+name] = s })
	case "type":
		var v any
		if err = dec.Decode(&v); err == nil {
			switch t := v.(type) {
			case string:
				x.types = []string{t}
			case []any:
				x.types = []string{}
				for _, e := range t {
					if s, ok := e.(string); ok {
						x.types = append(x.types, s)
					}
				}
			}
		}
	case "anyOf":
		x.anyOf, err = list()
	case "prefixItems":
		x.prefix, err = list()
		x.hasPrefix = true
	case "const":
		x.hasConst = true
		err = dec.Decode(&x.cnst)
	case "enum":
		x.hasEnum = true
		err = dec.Decode(&x.enum)
	case "properties":
		return schemaMap(func(name string, s *node) { x.props = append(x.props, prop{name, s}) })
	case "required":
		err = dec.Decode(&x.required)
	case "additionalProperties", "items":
		var s *node
		if s, err = sub(); err != nil {
			return err
		}
		isFalse := s.hasEnum && len(s.enum) == 0 && !s.hasConst
		if k == "items" {
			x.items, x.itemsFalse = s, isFalse
		} else {
			x.addlSet, x.addl, x.addlFalse = true, s, isFalse
		}
	case "minItems", "maxItems", "minLength", "maxLength":
		var n int
		if err = dec.Decode(&n); err == nil {
			switch k {
			case "minItems":
				x.minItems = n
			case "maxItems":
				x.maxItems = n
			case "minLength":
				x.minLen = n
			case "maxLength":
				x.maxLen = n
			}
		}
	case "minimum", "maximum":
		var num json.Number
		if err = dec.Decode(&num); err == nil {
			v, ok := exactInt(num)
			if !ok {
				return fmt.Errorf("not an integer bound: %s", num)
			}
			if k == "minimum" {
				x.min = &v
			} else {
				x.max = &v
			}
		}
	case "format":
		err = dec.Decode(&x.format)
	case "pattern":
		err = dec.Decode(&x.pattern)
	default: // descriptions and such: read past
		var skip json.RawMessage
		err = dec.Decode(&skip)
	}
	return err
}

func exactInt(n json.Number) (int64, bool) {
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
