package react

import (
	"encoding/json"
	"testing"

	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

func FuzzParseAction(f *testing.F) {
	reg := tools.DefaultRegistry()
	sch := schema.Action(tools.SchemaTools(reg.List()), schema.ThoughtOptions{Required: true, MinLength: 10}, true)
	for _, s := range []string{
		`{"thought":"read the config file first","tool":"read_file","args":{"path":"a.txt"}}`,
		`{"thought":"done with everything now","tool":"final_answer","args":{"answer":"x"}}`,
		`{"thought":"the plan is not working","tool":"replan","args":{"reason":"x"}}`,
		`{"tool":"read_file","args":{"path":1}}`, `[]`, `{`, `null`, `{"thought":"x"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		act, err := ParseAction(data, sch, schema.ThoughtOptions{Required: true, MinLength: 10})
		if err != nil {
			return
		}
		// Anything accepted names a known tool (or replan) with an args object.
		if _, ok := reg.Get(act.Tool); !ok && act.Tool != schema.Replan {
			t.Fatalf("accepted unknown tool %q", act.Tool)
		}
		var m map[string]any
		if json.Unmarshal(act.Args, &m) != nil || m == nil {
			t.Fatalf("accepted non-object args %s", act.Args)
		}
	})
}
