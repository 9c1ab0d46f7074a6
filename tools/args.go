package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tactcli/tact/internal/text"
)

// argSpec describes one argument a tool accepts. dst is *string or *int; set
// records whether the argument was given (and not null).
type argSpec struct {
	name     string
	required bool
	dst      any
	set      *bool
}

// decodeArgs decodes a tool's arguments object strictly: it must be one JSON
// object, names match exactly (encoding/json alone would match "PATH" to
// "path"), unknown names and wrong types are errors, and required arguments
// must be present and not null. Arguments are re-checked here even though
// the executor validated them against the schema, because Run is also fed
// raw model output and fuzzed bytes.
func decodeArgs(tool string, raw json.RawMessage, args ...argSpec) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("%s: arguments must be a JSON object", tool)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("%s: arguments are not valid JSON: %v", tool, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: unexpected data after the arguments object", tool)
	}
	known := make(map[string]argSpec, len(args))
	names := make([]string, 0, len(args))
	for _, a := range args {
		known[a.name] = a
		names = append(names, a.name)
	}
	var unknown []string
	for k := range m {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s: unknown argument %q (accepted: %s)", tool, unknown[0], strings.Join(names, ", "))
	}
	for _, a := range args {
		v, ok := m[a.name]
		if ok && bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			ok = false
		}
		if !ok {
			if a.required {
				return fmt.Errorf("%s: missing required argument %q", tool, a.name)
			}
			continue
		}
		if err := decodeArgValue(v, a.dst); err != nil {
			return fmt.Errorf("%s: argument %q: %v", tool, a.name, err)
		}
		if a.set != nil {
			*a.set = true
		}
	}
	return nil
}

func decodeArgValue(v json.RawMessage, dst any) error {
	switch d := dst.(type) {
	case *string:
		if err := json.Unmarshal(v, d); err != nil {
			return fmt.Errorf("want a string, got %s", argJSONKind(v))
		}
	case *int:
		// JSON Schema's "integer" accepts 3.0, so parse as a number and
		// insist it is integral instead of using encoding/json's int rules.
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return fmt.Errorf("want an integer: %v", err)
		}
		n, ok := x.(json.Number)
		if !ok {
			return fmt.Errorf("want an integer, got %s", argJSONKind(v))
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
			return fmt.Errorf("want an integer, got %s", n)
		}
		*d = int(f)
	default:
		return errors.New("internal error: unsupported argument type")
	}
	return nil
}

// argJSONKind names the JSON type of v for error messages, with its
// article ("a string", "an object"; "null", "nothing").
func argJSONKind(v json.RawMessage) string {
	switch k := text.JSONKind(v); k {
	case "nothing", "null":
		return k
	case "object", "array":
		return "an " + k
	default:
		return "a " + k
	}
}

// schemaObject builds a tool's JSON Schema (draft 2020-12): an object with
// the given properties, required names, and no other properties.
func schemaObject(props map[string]any, required ...string) json.RawMessage {
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	} else {
		s["required"] = []string{}
	}
	b, err := json.Marshal(s)
	if err != nil {
		// Only reachable through a programming error in a literal schema.
		panic(fmt.Sprintf("tools: schema: %v", err))
	}
	return b
}

func schemaStr(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

// schemaNonEmpty is a string that must not be empty (a path, a pattern, a
// command). With a grammar built from the schema a model cannot leave it
// empty; a plan row may still write "" to have it filled at run time.
func schemaNonEmpty(desc string) map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "description": desc}
}

func schemaInt(desc string, min int) map[string]any {
	return map[string]any{"type": "integer", "minimum": min, "description": desc}
}

// fail is the Result of a tool that could not run.
func toolFail(err error) Result { return Result{Err: err} }
