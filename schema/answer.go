package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/tactcli/tact/internal/filekind"
)

// maxAnswerSchema bounds a --schema file: schemas are a few KiB, and one
// read whole must not be a way to fill memory.
const maxAnswerSchema = 1 << 20

// ReadAnswer reads a --schema value: inline JSON, or @FILE for a file's
// content. It returns the schema compacted (one line, as the action schema
// embeds it), checked to compile; errors name the keyword path.
func ReadAnswer(spec string) (json.RawMessage, error) {
	raw := []byte(spec)
	if name, ok := strings.CutPrefix(spec, "@"); ok {
		// The shared reader of files opened by name: a regular file only,
		// never a blocking open (a FIFO), and the cap checked while reading
		// (a /proc file says size 0).
		var err error
		if raw, err = filekind.ReadFile(filekind.Spec{What: "schema file", Max: maxAnswerSchema}, name); err != nil {
			return nil, err
		}
	}
	return CompileAnswer(raw)
}

// CompileAnswer checks that raw is one JSON Schema that compiles and
// returns it compacted. An error is one line; for a schema that breaks
// the meta-schema it names the keyword's path ("at /properties/count/type: ...").
func CompileAnswer(raw []byte) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, bytes.TrimSpace(raw)); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if b.Len() == 0 {
		return nil, errors.New("empty schema")
	}
	// Compact checked the syntax; the kind is told by the first byte, so a
	// number beyond float64 (1e400) is not "not JSON".
	if t := b.String(); t[0] != '{' && t != "true" && t != "false" {
		return nil, errors.New("a schema is a JSON object (or true/false)")
	}
	compact := json.RawMessage(b.Bytes())
	v, err := Compile(compact)
	if err == nil {
		// A schema that refers to itself with nothing in between ({"$ref":
		// "#"}) compiles, but validating any value ends in a reference
		// cycle: no answer could ever pass, so say so now rather than
		// after a run (or a person) has produced one. One probe at the
		// root finds it; recursion through properties or items ends on
		// finite data and is fine.
		var ve *jsonschema.ValidationError
		if errors.As(v.s.Validate(nil), &ve) {
			if c := refCycle(ve); c != nil {
				return nil, fmt.Errorf("no value can validate against it: %s", c.LocalizedString(printer))
			}
		}
	}
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		if errors.As(err, &sve) {
			var ve *jsonschema.ValidationError
			if errors.As(sve.Err, &ve) {
				return nil, fmt.Errorf("not a valid JSON Schema: %s", OneLine(ve))
			}
		}
		return nil, err
	}
	return compact, nil
}

// FinalAnswerArgs is the arguments schema of the final_answer action when
// the answer must follow the schema answer (a --schema): the answer is
// that JSON value itself, not a string. The answer schema is embedded as a
// resource of its own (Embed, base AnswerBase), so its references and
// dialect mean what they mean on its own.
func FinalAnswerArgs(answer json.RawMessage) json.RawMessage {
	var wrapper ordered
	if t := bytes.TrimSpace(answer); len(t) > 0 && t[0] == '{' {
		if ms, ok := topMembers(t); ok && dialectOf(ms) == 2019 {
			// A 2019-09 resource inside a 2020-12 document fails the
			// meta-schema check in santhosh-tekuri/jsonschema v6.0.3 (its
			// $recursiveRef then resolves to a subschema of the meta-schema:
			// every "definitions" entry must be an object of objects), so
			// around one the wrapper is 2019-09 too: its keywords mean
			// the same there.
			wrapper = append(wrapper, struct {
				k string
				v any
			}{"$schema", draft2019URI})
		}
	}
	return mustJSON(append(wrapper, ordered{
		{"type", "object"},
		{"properties", ordered{{"answer", Embed(answer, AnswerBase)}}},
		{"required", []string{"answer"}},
		{"additionalProperties", false},
	}...))
}

// draft2019URI is draft 2019-09's meta-schema.
const draft2019URI = "https://json-schema.org/draft/2019-09/schema"

// FallbackAnswer is the schema of the fallback answer reply under a
// --schema: {"answer": VALUE}.
func FallbackAnswer(answer json.RawMessage) json.RawMessage { return FinalAnswerArgs(answer) }

// CheckAnswer is the one check of an answer value against an answer
// schema (compiled on its own, as CompileAnswer checked it): a saved
// plan's literal answer when the plan is read, and every answer at run
// time. It returns the value compact. at names where the value sits for
// the error's location ("answer": "at /answer/count: ...").
func CheckAnswer(answer json.RawMessage, value []byte, at ...string) (json.RawMessage, error) {
	v, err := Compile(answer)
	if err != nil {
		return nil, fmt.Errorf("answer schema: %w", err)
	}
	if _, err := v.validateJSONAt(value, at); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, value); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// refCycle is the reference cycle among e's causes, if any.
func refCycle(e *jsonschema.ValidationError) *kind.RefCycle {
	if c, ok := e.ErrorKind.(*kind.RefCycle); ok {
		return c
	}
	for _, c := range e.Causes {
		if k := refCycle(c); k != nil {
			return k
		}
	}
	return nil
}
