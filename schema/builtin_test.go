package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// Built-in tools' schemas lose nothing in normalization: the grammar
// checks all their schemas say, as before.
func TestBuiltinSchemasNormalizeWhole(t *testing.T) {
	tools := append(tools.DefaultRegistry().List(), tools.FinalAnswerTool{})
	for _, tool := range tools {
		n, err := schema.NormalizeArgs(tool.Schema())
		if err != nil {
			t.Fatalf("%s: %v", tool.Name(), err)
		}
		if len(n.Loosened) > 0 {
			t.Errorf("%s: loosened %q", tool.Name(), n.Loosened)
		}
		if _, err := schema.Compile(n.Schema); err != nil {
			t.Errorf("%s: %v", tool.Name(), err)
		}
	}
	for _, raw := range []json.RawMessage{schema.ReplanArgs, schema.Fallback, schema.Summary(100)} {
		if n, err := schema.NormalizeArgs(raw); err != nil || len(n.Loosened) > 0 {
			t.Errorf("%s: %v %v", raw, n, err)
		}
	}
}
