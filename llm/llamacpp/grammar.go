package llamacpp

import (
	"github.com/tactcli/tact/grammar"
)

// schemaGBNF converts a JSON Schema to a GBNF grammar with tact's own
// converter (package grammar). The grammar may allow more than the
// schema (grammar.Grammar.Widened): callers validate replies against the
// schema itself.
func schemaGBNF(raw []byte) (string, error) {
	g, err := grammar.FromSchema(raw)
	if err != nil {
		return "", err
	}
	return g.GBNF, nil
}
