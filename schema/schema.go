// Package schema builds the JSON Schemas tact expects model replies and plan
// arguments to satisfy, and validates JSON against them with a real JSON
// Schema implementation (santhosh-tekuri/jsonschema: full draft 2020-12,
// no cgo, good error locations).
package schema

import (
	"bytes"
	"container/list"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// Validator is a compiled schema.
type Validator struct {
	raw json.RawMessage
	s   *jsonschema.Schema
}

// cacheSize bounds the compiled schemas kept: tools' and replies' schemas
// are few, but MCP servers bring their own and a long-running server sees
// many; the least recently used one goes first.
const cacheSize = 512

var (
	cacheMu  sync.Mutex
	cache    = map[string]*list.Element{} // schema text -> element of cacheLRU holding its *Validator
	cacheLRU = list.New()                 // most recently used first
)

// Compile compiles raw; identical schemas are compiled once while they
// stay among the cacheSize most recently used. A schema may refer only to
// itself: schemas come from MCP servers and tact serve's clients, and a
// "$ref" to a file or URL is refused, never loaded.
func Compile(raw json.RawMessage) (*Validator, error) {
	key := string(raw)
	cacheMu.Lock()
	if el, ok := cache[key]; ok {
		cacheLRU.MoveToFront(el)
		cacheMu.Unlock()
		return el.Value.(*Validator), nil
	}
	cacheMu.Unlock()
	// Compiled without the lock: one slow schema does not hold up others.
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(CompilePattern)
	const url = "mem:///schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	v := &Validator{raw: raw, s: s}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if el, ok := cache[key]; ok { // compiled meanwhile by another caller
		cacheLRU.MoveToFront(el)
		return el.Value.(*Validator), nil
	}
	cache[key] = cacheLRU.PushFront(v)
	if cacheLRU.Len() > cacheSize {
		oldest := cacheLRU.Back()
		cacheLRU.Remove(oldest)
		delete(cache, string(oldest.Value.(*Validator).raw))
	}
	return v, nil
}

// noLoader refuses every external reference (the compiler's default loads
// file:// URLs: a schema could read the host's files).
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed: a schema may refer only to itself", url)
}

// MustCompile is Compile for schemas built by tact itself.
func MustCompile(raw json.RawMessage) *Validator {
	v, err := Compile(raw)
	if err != nil {
		panic(err)
	}
	return v
}

// Raw returns the schema text.
func (v *Validator) Raw() json.RawMessage { return v.raw }

// ValidateJSON parses data (exactly one JSON value) and validates it. The
// error is one line, naming the failing location.
func (v *Validator) ValidateJSON(data []byte) (any, error) { return v.validateJSONAt(data, nil) }

// validateJSONAt is ValidateJSON for a value that sits at the pointer
// tokens at of a larger one: error locations start with them.
func (v *Validator) validateJSONAt(data []byte, at []string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var inst any
	if err := dec.Decode(&inst); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid JSON: trailing data after the first value")
	}
	if err := v.validateAt(inst, at); err != nil {
		return nil, err
	}
	return inst, nil
}

// Validate checks an already decoded value (from encoding/json with UseNumber, or plain).
func (v *Validator) Validate(inst any) error { return v.validateAt(inst, nil) }

func (v *Validator) validateAt(inst any, at []string) error {
	err := v.s.Validate(normalize(inst))
	if err == nil {
		return nil
	}
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		return fmt.Errorf("%s", oneLineAt(ve, at))
	}
	return err
}

// normalize converts float64 numbers into json.Number-compatible values the
// validator accepts (it wants json.Number or float64; both are fine) and
// leaves everything else alone. It exists so callers may pass maps built in Go.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = normalize(x)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalize(x)
		}
		return out
	case int:
		return json.Number(fmt.Sprint(t))
	case json.RawMessage:
		var x any
		d := json.NewDecoder(bytes.NewReader(t))
		d.UseNumber()
		if d.Decode(&x) == nil {
			return x
		}
		return t
	default:
		return v
	}
}

// OneLine flattens a validation error tree into one line: the deepest causes,
// each as "at /json/pointer: message", joined with "; ". Under a oneOf whose
// branches are told apart by a const (the action schema's "tool"), only the
// branches whose const matched are reported, so the line names the real
// problem instead of every other tool's arguments.
func OneLine(ve *jsonschema.ValidationError) string { return oneLineAt(ve, nil) }

func oneLineAt(ve *jsonschema.ValidationError, at []string) string {
	leaves := collect(ve, at)
	sort.Strings(leaves)
	leaves = dedupe(leaves)
	const max = 4
	if len(leaves) > max {
		leaves = append(leaves[:max], fmt.Sprintf("and %d more", len(leaves)-max))
	}
	return strings.Join(leaves, "; ")
}

func collect(e *jsonschema.ValidationError, at []string) []string {
	if len(e.Causes) == 0 {
		loc := "/" + strings.Join(append(append([]string(nil), at...), e.InstanceLocation...), "/")
		return []string{fmt.Sprintf("at %s: %s", loc, strings.ReplaceAll(e.ErrorKind.LocalizedString(printer), "\n", " "))}
	}
	causes := e.Causes
	if _, isOneOf := e.ErrorKind.(*kind.OneOf); isOneOf {
		var matching, consts []*jsonschema.ValidationError
		var want []string
		for _, c := range causes {
			if ce := branchConst(c); ce != nil {
				consts = append(consts, ce)
				want = append(want, fmt.Sprint(ce.ErrorKind.(*kind.Const).Want))
				continue
			}
			matching = append(matching, c)
		}
		switch {
		case len(matching) > 0 && len(consts) > 0:
			causes = matching
		case len(matching) == 0 && len(consts) > 0:
			// No branch's const matched: say which values are allowed.
			k := consts[0].ErrorKind.(*kind.Const)
			loc := "/" + strings.Join(append(append([]string(nil), at...), consts[0].InstanceLocation...), "/")
			sort.Strings(want)
			return []string{fmt.Sprintf("at %s: %q is not one of %s", loc, fmt.Sprint(k.Got), strings.Join(want, ", "))}
		}
	}
	var out []string
	for _, c := range causes {
		out = append(out, collect(c, at)...)
	}
	return out
}

// branchConst returns the const error directly under a oneOf branch (or
// under its "properties" node, where property errors are grouped), if any.
func branchConst(branch *jsonschema.ValidationError) *jsonschema.ValidationError {
	for _, c := range branch.Causes {
		if _, ok := c.ErrorKind.(*kind.Const); ok {
			return c
		}
		for _, cc := range c.Causes {
			if _, ok := cc.ErrorKind.(*kind.Const); ok {
				return cc
			}
		}
	}
	return nil
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
