package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/synth"
)

// refSchemas are answer schemas whose meaning rests on references and
// dialect: pydantic's $defs (issue 36 item 16: the llama backend said
// "schema cannot be compiled to a grammar" and every run exited 1) and a
// draft-07 root $ref into definitions.
var refSchemas = []string{
	`{"$defs":{"Item":{"properties":{"name":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["name","qty"],"type":"object"}},"properties":{"items":{"items":{"$ref":"#/$defs/Item"},"type":"array"}},"required":["items"],"type":"object"}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/Count","definitions":{"Count":{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}}}`,
}

// The tiny model under answer schemas with local references: the grammar
// builds, and whatever the run does, every stdout line validates (or the
// run ends 11 with nothing on stdout).
func TestSchemaRefsTinyModel(t *testing.T) {
	c := newE2E(t)
	model := synth.Cached(t, synth.Tiny)
	for i, sch := range refSchemas {
		for seed := 1; seed <= 2; seed++ {
			p := c.run("run", "--model", model, "--workspace", c.ws, "--seed", fmt.Sprint(seed), "--temperature", "0.8",
				"--max-tokens", "256", "--no-plan", "--no-ask", "--max-iterations", "2", "--schema", sch, "count the files")
			code := p.wait(5 * time.Minute)
			switch code {
			case 0, 3, 4, 5, 6, 11, 12:
			default:
				t.Fatalf("schema %d seed %d: exit %d\nstderr: %s", i, seed, code, p.stderr.String())
			}
			n := validateLines(t, sch, p.stdout.String())
			if (code == 11) != (n == 0) || n > 1 {
				t.Errorf("schema %d seed %d: exit %d with %d answer lines\nstderr: %s", i, seed, code, n, p.stderr.String())
			}
		}
	}
}
