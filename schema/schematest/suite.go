package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// SuiteCase is one case of the official JSON-Schema-Test-Suite
// (schema/testdata/JSON-Schema-Test-Suite, README.md there): a schema, an
// instance and whether the instance is valid.
type SuiteCase struct {
	File        string // tests/draft2020-12/ref.json
	Group       string // the group's description
	Description string // the case's
	Schema      json.RawMessage
	Data        json.RawMessage // as written: numbers exact
	Valid       bool
}

// Name names the case in test output.
func (c SuiteCase) Name() string {
	return filepath.Base(c.File) + ": " + c.Group + ": " + c.Description
}

// SuiteSkips are the groups of the kept files that need a remote schema
// (http://localhost:1234/..., which the suite's runners serve from its
// remotes/ folder): tact never loads a schema from outside the one it
// is given, so these cannot pass through tact. Keyed by file base name
// and group description; the value says which remote. Whole files left
// out of testdata for the same reason are listed in the README.
var SuiteSkips = map[string]string{
	"dynamicRef.json: strict-tree schema, guards against misspelled properties":       "remote http://localhost:1234/draft2020-12/tree.json",
	"dynamicRef.json: tests for implementation dynamic anchor and reference link":     "remote http://localhost:1234/draft2020-12/extendible-dynamic-ref.json",
	"dynamicRef.json: $ref and $dynamicAnchor are independent of order - $defs first": "remote http://localhost:1234/draft2020-12/extendible-dynamic-ref.json",
	"dynamicRef.json: $ref and $dynamicAnchor are independent of order - $ref first":  "remote http://localhost:1234/draft2020-12/extendible-dynamic-ref.json",
	"dynamicRef.json: $ref to $dynamicRef finds detached $dynamicAnchor":              "remote http://localhost:1234/draft2020-12/detached-dynamicref.json",
}

// Skipped reports whether a group needs a remote schema.
func Skipped(file, group string) bool {
	return SuiteSkips[filepath.Base(file)+": "+group] != ""
}

// Suite reads the cases of the suite's JSON files in dir (relative to
// root, e.g. "tests/draft2020-12"), in file order, without the skipped
// groups. schemaURI, when set, is added as "$schema" to each object
// schema that has none (the suite's draft4/ and draft7/ cases say their
// dialect only by their folder).
func Suite(root, dir, schemaURI string) ([]SuiteCase, error) {
	files, err := filepath.Glob(filepath.Join(root, dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []SuiteCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var groups []struct {
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Tests       []struct {
				Description string          `json:"description"`
				Data        json.RawMessage `json:"data"`
				Valid       bool            `json:"valid"`
			} `json:"tests"`
		}
		if err := json.Unmarshal(b, &groups); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, g := range groups {
			if Skipped(f, g.Description) {
				continue
			}
			sch := g.Schema
			if schemaURI != "" {
				sch = withSchema(sch, schemaURI)
			}
			for _, tc := range g.Tests {
				out = append(out, SuiteCase{File: rel, Group: g.Description, Description: tc.Description,
					Schema: sch, Data: tc.Data, Valid: tc.Valid})
			}
		}
	}
	return out, nil
}

// withSchema adds "$schema": uri to an object schema without one.
func withSchema(sch json.RawMessage, uri string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(sch, &m) != nil {
		return sch
	}
	if _, ok := m["$schema"]; ok {
		return sch
	}
	var b bytes.Buffer
	if json.Compact(&b, sch) != nil {
		return sch
	}
	u, _ := json.Marshal(uri)
	rest := b.Bytes()[1:] // after '{'
	out := append([]byte(`{"$schema":`), u...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
