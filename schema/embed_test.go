package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tactcli/tact/schema/schematest"
)

const suiteRoot = "testdata/JSON-Schema-Test-Suite"

// suiteDialects are the suite's folders the embedding is checked on, with
// the "$schema" their cases get (the suite says a case's dialect by its
// folder).
var suiteDialects = []struct{ dir, schema string }{
	{"tests/draft2020-12", ""},
	{"tests/draft2019-09", "https://json-schema.org/draft/2019-09/schema"},
	{"tests/draft7", "http://json-schema.org/draft-07/schema#"},
	{"tests/draft4", "http://json-schema.org/draft-04/schema#"},
}

// The answer schema embedded under final_answer's "answer" (and so in
// every schema built around it) validates every value as the answer
// schema does on its own, and as JSON Schema's test suite says: $ref,
// $defs, $dynamicRef, unevaluated*, draft-04's id and draft-07's root
// $ref keep their meaning.
func TestEmbedKeepsMeaning(t *testing.T) {
	n := 0
	for _, d := range suiteDialects {
		cases, err := schematest.Suite(suiteRoot, d.dir, d.schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			n++
			alone, err := Compile(c.Schema)
			if err != nil {
				t.Errorf("%s %s: does not compile: %v", d.dir, c.Name(), err)
				continue
			}
			args := FinalAnswerArgs(c.Schema)
			embedded, err := Compile(args)
			if err != nil {
				t.Errorf("%s %s: embedded, does not compile: %v\n%s", d.dir, c.Name(), err, args)
				continue
			}
			aloneErr := alone.Validate(decode(t, c.Data))
			if (aloneErr == nil) != c.Valid {
				t.Errorf("%s %s: on its own, valid=%v, want %v (%v)", d.dir, c.Name(), aloneErr == nil, c.Valid, aloneErr)
			}
			wrapped := append(append([]byte(`{"answer":`), c.Data...), '}')
			embErr := embedded.Validate(decode(t, wrapped))
			if (embErr == nil) != c.Valid {
				t.Errorf("%s %s: embedded, valid=%v, want %v (%v)\n%s", d.dir, c.Name(), embErr == nil, c.Valid, embErr, args)
			}
		}
	}
	if n < 1300 {
		t.Fatalf("only %d cases read", n)
	}
	t.Logf("%d cases", n)
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	v, err := decodeNumber(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func decodeNumber(b []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// Embed's output for the shapes a user's schema comes in: its own base,
// its own dialect, its keys in their order.
func TestEmbed(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no id: the base first", `{"type":"object","$defs":{"x":{}}}`,
			`{"$id":"mem:///answer.json","type":"object","$defs":{"x":{}}}`},
		{"an absolute $id is kept", `{"$id":"https://example.com/p.json","type":"string"}`,
			`{"$id":"https://example.com/p.json","type":"string"}`},
		{"a URN $id is kept", `{"$id":"urn:uuid:deadbeef-1234-0000-0000-4321feebdaed","type":"string"}`,
			`{"$id":"urn:uuid:deadbeef-1234-0000-0000-4321feebdaed","type":"string"}`},
		{"a relative $id is resolved against the base", `{"$id":"schemas/p.json","type":"string"}`,
			`{"$id":"mem:///schemas/p.json","type":"string"}`},
		{"draft-07 anchor id", `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"#top","type":"string"}`,
			`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"mem:///answer.json#top","type":"string"}`},
		{"draft-04: id, not $id", `{"$schema":"http://json-schema.org/draft-04/schema#","definitions":{}}`,
			`{"id":"mem:///answer.json","$schema":"http://json-schema.org/draft-04/schema#","definitions":{}}`},
		{"draft-04 id kept", `{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://x.test/a.json"}`,
			`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://x.test/a.json"}`},
		{"draft-07 root $ref: into allOf, ignored siblings left out", `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://x.test/a.json","$ref":"#/definitions/a","type":"string","title":"T","definitions":{"a":{"type":"integer"}}}`,
			`{"$id":"mem:///answer.json","$schema":"http://json-schema.org/draft-07/schema#","allOf":[{"$ref":"#/definitions/a"}],"title":"T","definitions":{"a":{"type":"integer"}}}`},
		{"draft-07 root $ref pointing at a sibling keyword", `{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/properties/a","properties":{"a":{"type":"object"}}}`,
			`{"$id":"mem:///answer.json","$schema":"http://json-schema.org/draft-07/schema#","allOf":[{"$ref":"#/properties/a"}],"properties":{"a":{"type":"object"}}}`},
		{"2020-12 root $ref keeps its siblings", `{"$ref":"#/$defs/a","type":"string","$defs":{"a":{}}}`,
			`{"$id":"mem:///answer.json","$ref":"#/$defs/a","type":"string","$defs":{"a":{}}}`},
		{"true", `true`, `true`},
		{"not JSON", `{"a":`, `{"a":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Embed(json.RawMessage(tc.in), AnswerBase)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A pydantic schema (local $ref into $defs) as --schema: final_answer's
// arguments compile, and a literal answer is checked by the same
// function, with the same verdict and location, whether embedded or on
// its own.
func TestAnswerWithLocalRef(t *testing.T) {
	answer := json.RawMessage(`{"$defs":{"Item":{"properties":{"name":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["name","qty"],"type":"object"}},"properties":{"items":{"items":{"$ref":"#/$defs/Item"},"type":"array"}},"required":["items"],"type":"object"}`)
	args, err := Compile(FinalAnswerArgs(answer))
	if err != nil {
		t.Fatalf("final_answer's arguments do not compile: %v", err)
	}
	if _, err := args.ValidateJSON([]byte(`{"answer":{"items":[{"name":"a","qty":2}]}}`)); err != nil {
		t.Fatal(err)
	}
	_, err = args.ValidateJSON([]byte(`{"answer":{"items":[{"name":"a","qty":0}]}}`))
	if err == nil || !strings.Contains(err.Error(), "at /answer/items/0/qty") {
		t.Fatalf("embedded: %v", err)
	}
	_, err = CheckAnswer(answer, []byte(`{"items":[{"name":"a","qty":0}]}`), "answer")
	if err == nil || !strings.HasPrefix(err.Error(), "at /answer/items/0/qty: ") {
		t.Fatalf("CheckAnswer: %v", err)
	}
	got, err := CheckAnswer(answer, []byte(`{ "items": [ ] }`))
	if err != nil || string(got) != `{"items":[]}` {
		t.Fatalf("CheckAnswer: %s, %v", got, err)
	}
}

// A draft-07 answer schema asserts "format" (draft-07 does, 2020-12 only
// annotates): embedded or on its own, a literal that breaks it fails.
func TestAnswerDialectFormat(t *testing.T) {
	answer := json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"day":{"type":"string","format":"date"}}}`)
	if _, err := CheckAnswer(answer, []byte(`{"day":"2024-02-30"}`)); err == nil {
		t.Fatal("on its own: an impossible date passed")
	}
	args := MustCompile(FinalAnswerArgs(answer))
	if _, err := args.ValidateJSON([]byte(`{"answer":{"day":"not a date"}}`)); err == nil || !strings.Contains(err.Error(), "at /answer/day") {
		t.Fatalf("embedded: %v", err)
	}
	if _, err := args.ValidateJSON([]byte(`{"answer":{"day":"2024-02-29"}}`)); err != nil {
		t.Fatal(err)
	}
	// Without "$schema" the schema is 2020-12: "format" annotates only.
	if _, err := CheckAnswer(json.RawMessage(`{"format":"date"}`), []byte(`"soon"`)); err != nil {
		t.Fatal(err)
	}
}

// A draft-04 schema's "id" is its base: a reference relative to it
// resolves inside the schema, on its own and embedded.
func TestDraft04ID(t *testing.T) {
	answer := json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/root.json","definitions":{"n":{"id":"num.json","type":"integer","minimum":0,"exclusiveMinimum":true}},"properties":{"count":{"$ref":"num.json"}}}`)
	for _, tc := range []struct {
		v  string
		ok bool
	}{{`{"count":1}`, true}, {`{"count":0}`, false}, {`{"count":"1"}`, false}} {
		_, err := CheckAnswer(answer, []byte(tc.v))
		if (err == nil) != tc.ok {
			t.Errorf("on its own %s: %v", tc.v, err)
		}
		_, err = MustCompile(FinalAnswerArgs(answer)).ValidateJSON([]byte(`{"answer":` + tc.v + `}`))
		if (err == nil) != tc.ok {
			t.Errorf("embedded %s: %v", tc.v, err)
		}
	}
}

// A 2019-09 answer schema with "definitions" (JSON Schema Store's
// specif-1.1 has them): final_answer's arguments compile (the wrapper is
// 2019-09 too; see FinalAnswerArgs) and a "#/definitions/..." reference
// still checks.
func TestAnswer2019Definitions(t *testing.T) {
	answer := json.RawMessage(`{"$schema":"https://json-schema.org/draft/2019-09/schema","definitions":{"Text":{"type":"array","items":{"type":"object","properties":{"text":{"description":"some text","type":"string"}},"required":["text"]}}},"$ref":"#/definitions/Text"}`)
	args, err := Compile(FinalAnswerArgs(answer))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := args.ValidateJSON([]byte(`{"answer":[{"text":"a"}]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := args.ValidateJSON([]byte(`{"answer":[{"text":1}]}`)); err == nil || !strings.Contains(err.Error(), "at /answer/0/text") {
		t.Fatalf("got %v", err)
	}
}

// An answer schema is JSON whatever its numbers: one beyond float64 is
// kept as written, not refused as "not JSON".
func TestCompileAnswerBigNumbers(t *testing.T) {
	raw, err := CompileAnswer([]byte(`{"properties":{"big":{"enum":[18446744073709551616]},"huge":{"const":1e400}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckAnswer(raw, []byte(`{"big":18446744073709551616}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckAnswer(raw, []byte(`{"big":18446744073709551617}`)); err == nil {
		t.Fatal("a different big number passed")
	}
	for _, bad := range []string{`[1]`, `"x"`, `1e400`} {
		if _, err := CompileAnswer([]byte(bad)); err == nil || !strings.Contains(err.Error(), "a schema is a JSON object") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// A schema whose root refers to itself with nothing in between compiles
// in the library but no value can ever validate: refused when compiled,
// naming the cycle. Recursion through a property is fine.
func TestCompileAnswerRefCycle(t *testing.T) {
	for _, s := range []string{
		`{"$ref":"#"}`,
		`{"allOf":[{"$ref":"#"}]}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
	} {
		_, err := CompileAnswer([]byte(s))
		if err == nil || !strings.Contains(err.Error(), "no value can validate against it") || !strings.Contains(err.Error(), "reference cycle") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v", s, err)
		}
	}
	if _, err := CompileAnswer([]byte(`{"type":"object","properties":{"next":{"$ref":"#"}}}`)); err != nil {
		t.Errorf("a recursive list schema: %v", err)
	}
}
