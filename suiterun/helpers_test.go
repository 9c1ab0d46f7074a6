package suiterun

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/sandbox"
)

// resultWithSteps is a result whose steps are the given actions (JSON
// {"tool","args"}).
func resultWithSteps(actions ...string) *react.Result {
	res := &react.Result{}
	for i, a := range actions {
		var tc react.ToolCall
		if err := json.Unmarshal([]byte(a), &tc); err != nil {
			panic(err)
		}
		res.Trace.Steps = append(res.Trace.Steps, react.StepTrace{Iteration: i + 1, Action: tc})
	}
	return res
}

// TestMain lets run_command's sandbox helper re-execute this binary.
func TestMain(m *testing.M) {
	sandbox.ServeHelper()
	os.Exit(m.Run())
}
