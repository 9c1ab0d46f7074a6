package schema

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
)

// A user's schema (--schema's answer schema) is embedded in schemas tact
// builds around it: final_answer's arguments {"answer": ANSWER}, the
// action and plan schemas holding those. Embedded as it is, it would
// change meaning: "#/$defs/x" would point into tact's schema (pydantic
// writes such refs), its "$schema" would be ignored (a subschema takes
// its parent's dialect unless it is a resource of its own), and with it
// draft-04's "id" and draft-07's asserted "format".
//
// Embed makes it a schema resource of its own, so every reference
// inside it resolves against it, and its dialect is its own:
//
//   - the base is the schema's own "$id" ("id" under draft-04's
//     "$schema") when it has one: an absolute one is kept as written, a
//     relative one is resolved against base; without one, base is added
//     as the first keyword;
//   - "$schema" stays, so the resource keeps its dialect (draft-04, -06,
//     -07, 2019-09, 2020-12; none means 2020-12, as on its own);
//   - before 2019-09 a "$ref" makes its siblings, "$id" included, be
//     ignored, so such a root cannot carry an id: {"$ref": R, ...} becomes
//     {"$id": base, "$schema": ..., "allOf": [{"$ref": R}], ...} with the
//     siblings that the dialect ignored left out (those a "#/..." pointer
//     reaches, and annotations like "definitions", stay).
//
// Embedded anywhere, the result validates every value exactly as raw does
// on its own (TestEmbedKeepsMeaning runs JSON Schema's test suite both
// ways). raw that is not a JSON object (true, false, not JSON) is
// returned as it is.
func Embed(raw json.RawMessage, base string) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return raw
	}
	members, ok := topMembers(t)
	if !ok {
		return raw
	}
	version := dialectOf(members)
	idKey := "$id"
	if version == 4 {
		idKey = "id"
	}
	if version < 2019 && members.has("$ref") {
		return embedRootRef(t, members, idKey, base)
	}
	var out objectMembers
	if i := members.index(idKey); i >= 0 {
		var id string
		if json.Unmarshal(members[i].val, &id) != nil {
			return raw // not a string: the meta-schema refuses it, embedded or not
		}
		out = append(out, members...)
		out[i].val = mustJSON(resolveID(base, id))
	} else {
		out = append(objectMembers{{idKey, mustJSON(base)}}, members...)
	}
	return out.marshal()
}

// AnswerBase is the base URI of an embedded answer schema without an id
// of its own (FinalAnswerArgs). It names nothing outside tact: schemas
// are compiled with every external reference refused.
const AnswerBase = "mem:///answer.json"

// resolveID is id resolved against base: an absolute id as written, a
// relative one made absolute, a fragment-only one ("#name": draft-06/07
// anchors) given base before its fragment.
func resolveID(base, id string) string {
	ref, err := url.Parse(id)
	if err != nil || ref.IsAbs() {
		return id // an invalid one fails to compile, embedded or not
	}
	b, err := url.Parse(base)
	if err != nil {
		return id
	}
	return b.ResolveReference(ref).String()
}

// dialectOf is the draft the members' "$schema" names (4, 6, 7, 2019,
// 2020), 2020 when it names none tact's validator knows (tact compiles
// schemas as 2020-12 by default).
func dialectOf(members objectMembers) int {
	i := members.index("$schema")
	if i < 0 {
		return 2020
	}
	var s string
	if json.Unmarshal(members[i].val, &s) != nil {
		return 2020
	}
	s, frag, _ := strings.Cut(s, "#")
	if frag != "" {
		return 2020
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://")
	switch s {
	case "json-schema.org/draft-04/schema":
		return 4
	case "json-schema.org/draft-06/schema":
		return 6
	case "json-schema.org/draft-07/schema":
		return 7
	case "json-schema.org/draft/2019-09/schema":
		return 2019
	}
	return 2020
}

// draft7Keywords are the keywords of drafts 4 to 7 that assert or apply
// subschemas: beside a root "$ref" they are ignored, so an embedded
// root leaves them out.
var draft7Keywords = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "patternProperties": true, "propertyNames": true,
	"dependencies": true, "minProperties": true, "maxProperties": true,
	"items": true, "additionalItems": true, "contains": true, "minItems": true,
	"maxItems": true, "uniqueItems": true, "allOf": true, "anyOf": true, "oneOf": true,
	"not": true, "if": true, "then": true, "else": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"contentMediaType": true, "contentEncoding": true, "id": true, "$id": true,
}

// embedRootRef embeds a draft 4-7 root whose "$ref" makes its siblings
// be ignored: the reference moves into an applicator that can stand
// beside an id.
func embedRootRef(t []byte, members objectMembers, idKey, base string) json.RawMessage {
	pointed := pointedKeys(t)
	var kept objectMembers
	var ref json.RawMessage
	for _, m := range members {
		switch {
		case m.key == "$ref":
			ref = m.val
		case m.key == "$schema":
		case draft7Keywords[m.key] && !pointed[m.key]:
		default:
			kept = append(kept, m)
		}
	}
	out := objectMembers{{idKey, mustJSON(base)}}
	if i := members.index("$schema"); i >= 0 {
		out = append(out, members[i])
	}
	for _, app := range []string{"allOf", "anyOf", "oneOf"} {
		if kept.has(app) {
			continue // a sibling a pointer reaches: use another applicator
		}
		one := append(json.RawMessage(`[{"$ref":`), ref...)
		out = append(out, member{app, append(one, "}]"...)})
		return append(out, kept...).marshal()
	}
	return t // all three reached by pointers: left as it is
}

// pointedKeys are the root keys that a "$ref": "#/KEY/..." in raw points
// into.
func pointedKeys(raw []byte) map[string]bool {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	keys := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if r, ok := t["$ref"].(string); ok {
				if frag, ok := strings.CutPrefix(r, "#/"); ok {
					tok, _, _ := strings.Cut(frag, "/")
					if u, err := url.PathUnescape(tok); err == nil {
						tok = u
					}
					keys[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")] = true
				}
			}
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(doc)
	return keys
}

// member is one key and value of a JSON object, in the order written.
type member struct {
	key string
	val json.RawMessage
}

type objectMembers []member

func (ms objectMembers) index(key string) int {
	for i, m := range ms {
		if m.key == key {
			return i
		}
	}
	return -1
}

func (ms objectMembers) has(key string) bool { return ms.index(key) >= 0 }

func (ms objectMembers) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(m.key))
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// topMembers reads a JSON object's members in order, values as written;
// false when t is not one JSON object.
func topMembers(t []byte) (objectMembers, bool) {
	dec := json.NewDecoder(bytes.NewReader(t))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var ms objectMembers
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // trailing data
	}
	return ms, true
}
