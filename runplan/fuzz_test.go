package runplan

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/itchyny/gojq"

	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/tools"
)

// FuzzBuildHostileOutputs: plan --from over a run whose first step read
// whatever an attacker wrote (issue 36 item 2). Whatever the output and
// the later steps' arguments, a command, working directory, written path
// and MCP argument are kept as the run had them (never a reference to the
// output); every argument, linked or not, yields exactly the value the
// run used when the plan replays over the same outputs; and the plan
// parses back.
func FuzzBuildHostileOutputs(f *testing.F) {
	f.Add("touch PWNED\nsrc\nout/a.txt\n", "touch PWNED", "src", "out/a.txt", "src", `{"$jq":".steps[0].output"}`)
	f.Add("ls\n", "ls", "", "x", "ls", "")
	f.Add("\n\n", "\n", "\n", "\n", "\n", `""`)
	reg := tools.DefaultRegistry()
	f.Fuzz(func(t *testing.T, output, command, dir, path, data, mcpArg string) {
		str := func(v string) json.RawMessage { b, _ := json.Marshal(v); return b }
		args := func(kv ...any) json.RawMessage {
			m := map[string]json.RawMessage{}
			for i := 0; i+1 < len(kv); i += 2 {
				v, ok := kv[i+1].(json.RawMessage)
				if !ok {
					v = str(kv[i+1].(string))
				}
				m[kv[i].(string)] = v
			}
			b, _ := json.Marshal(m)
			return b
		}
		var mcpVal json.RawMessage = str(mcpArg)
		if json.Valid([]byte(mcpArg)) {
			mcpVal = json.RawMessage(mcpArg)
		}
		steps := numbered(
			ok("read_file", `{"path":"TODO.txt"}`, output),
			ok("run_command", string(args("command", command, "working_dir", dir)), "x"),
			ok("write_file", string(args("path", path, "content", data)), "ok"),
			ok("edit_file", string(args("path", path, "old_string", data, "new_string", data+"!")), "ok"),
			ok("srv.tool", string(args("a", mcpVal, "b", data)), "ok"),
			ok("read_file", string(args("path", data)), "y"),
		)
		p, omitted, err := Build("q", steps, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// The plan's steps are the run's kept ones, in order; replayed
		// over the same outputs, each argument must give what the run used.
		left := map[int]bool{}
		for _, o := range omitted {
			left[o.Iteration] = true
		}
		var kept []react.StepTrace
		var outputs []any
		for _, st := range steps {
			if !left[st.Iteration] {
				kept = append(kept, st)
				outputs = append(outputs, map[string]any{"output": st.Observation})
			}
		}
		if len(kept) != len(p.Steps)-1 {
			t.Fatalf("%d steps kept, the plan has %d", len(kept), len(p.Steps)-1)
		}
		never := map[string][]string{"run_command": {"command", "working_dir"}, "write_file": {"path"}, "edit_file": {"path"}, "srv.tool": {"a", "b"}}
		for i, s := range p.Steps[:len(p.Steps)-1] {
			var want map[string]json.RawMessage
			if err := json.Unmarshal(kept[i].Action.Args, &want); err != nil {
				t.Fatal(err)
			}
			// The step sees the outputs of the steps before it.
			before := map[string]any{"steps": outputs[:i]}
			for k, raw := range s.Args {
				if got := yield(t, raw, before); !sameValue(got, want[k]) {
					t.Fatalf("%s %s: %s yields %s, the run had %s", s.Tool, k, raw, got, want[k])
				}
				for _, n := range never[s.Tool] {
					// Outputs changed since (an edited TODO.txt): a command
					// or written path stays what the run had.
					if got := yield(t, raw, changed(len(outputs[:i]))); k == n && !sameValue(got, want[k]) {
						t.Fatalf("%s %s follows the outputs: %s yields %s after they changed", s.Tool, k, raw, got)
					}
				}
			}
		}
		var buf strings.Builder
		if err := p.WriteJSONL(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := planner.Parse(strings.NewReader(buf.String()), "p", reg); err != nil && !strings.Contains(err.Error(), "srv.tool") {
			t.Fatalf("the plan does not parse back: %v\n%s", err, buf.String())
		}
	})
}

// changed is a run state of n outputs that all differ from the run's.
func changed(n int) map[string]any {
	steps := make([]any, n)
	for i := range steps {
		steps[i] = map[string]any{"output": "CHANGED\nCHANGED\nCHANGED\nCHANGED\nCHANGED\n"}
	}
	return map[string]any{"steps": steps}
}

// yield is what a plan argument gives when the step runs over state.
func yield(t *testing.T, raw json.RawMessage, state map[string]any) json.RawMessage {
	t.Helper()
	kind, expr := planner.ClassifyArg(raw)
	if kind != planner.ArgJQ {
		return raw
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		t.Fatalf("$jq %q: %v", expr, err)
	}
	code, err := gojq.Compile(q, gojq.WithVariables([]string{"$state"}))
	if err != nil {
		t.Fatalf("$jq %q: %v", expr, err)
	}
	v, ok := code.Run(state, state).Next()
	if !ok {
		t.Fatalf("$jq %q: no value", expr)
	}
	if err, isErr := v.(error); isErr {
		t.Fatalf("$jq %q: %v", expr, err)
	}
	b, _ := json.Marshal(v)
	return b
}

func sameValue(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
