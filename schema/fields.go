package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// FieldPath writes a JSON pointer's tokens the way a request's author names
// a field: conversation_history[2].role ("request" for the whole value).
func FieldPath(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		if _, err := strconv.ParseUint(tok, 10, 32); err == nil {
			fmt.Fprintf(&b, "[%s]", tok)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if b.Len() == 0 {
		return "request"
	}
	return b.String()
}

// DecodeFields parses data (exactly one JSON value) and validates it,
// wording problems by field for an HTTP client: "llm_config.foo: unknown
// field", "conversation_history[2].role: got number, want string". The
// first few problems are reported, in field order.
func (v *Validator) DecodeFields(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var inst any
	if err := dec.Decode(&inst); err != nil {
		return nil, fmt.Errorf("request: invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("request: invalid JSON: trailing data after the first value")
	}
	err := v.s.Validate(inst)
	if err == nil {
		return inst, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	leaves := fieldLeaves(ve)
	sort.Strings(leaves)
	leaves = dedupe(leaves)
	const max = 3
	if len(leaves) > max {
		leaves = append(leaves[:max], fmt.Sprintf("and %d more", len(leaves)-max))
	}
	return nil, errors.New(strings.Join(leaves, "; "))
}

func fieldLeaves(e *jsonschema.ValidationError) []string {
	if len(e.Causes) > 0 {
		var out []string
		for _, c := range e.Causes {
			out = append(out, fieldLeaves(c)...)
		}
		return out
	}
	at := func(name string) string { return FieldPath(append(append([]string(nil), e.InstanceLocation...), name)) }
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		var out []string
		for _, p := range k.Properties {
			out = append(out, at(p)+": unknown field")
		}
		return out
	case *kind.Required:
		var out []string
		for _, p := range k.Missing {
			out = append(out, at(p)+": missing")
		}
		return out
	}
	return []string{FieldPath(e.InstanceLocation) + ": " + strings.ReplaceAll(e.ErrorKind.LocalizedString(printer), "\n", " ")}
}
