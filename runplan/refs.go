package runplan

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/redact"
)

// minRefBytes is the shortest argument value matched against outputs:
// shorter ones ("1", "y") equal some output line by accident too often.
const minRefBytes = 2

// cutMarker is the marker the executor writes where it cut an observation
// (react/cut.go: "[... lines 12-40 cut (900 bytes, about 225 tokens) ...]").
var cutMarker = regexp.MustCompile(`\[\.\.\. lines? \d+(-\d+)? cut \(\d+ bytes, about \d+ tokens\)`)

// referable reports whether an observation is the raw output the plan's
// $jq will see: not cut by the executor and with nothing redacted.
func referable(obs string) bool {
	return obs != "" && !cutMarker.MatchString(obs) && !strings.Contains(obs, redact.Redacted)
}

// linkArgs replaces each top-level string argument that may be linked
// and equals an earlier kept step's output, or one line of it, by a $jq
// reference to it; outputs are the earlier kept steps' observations, in
// order (the run state's steps when the plan runs). The most recent output
// wins.
func linkArgs(args map[string]json.RawMessage, outputs []string, may func(arg string) bool) {
	for k, v := range args {
		if !may(k) {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil || len(s) < minRefBytes || strings.TrimSpace(s) == "" {
			continue
		}
		if expr := reference(s, outputs); expr != "" {
			args[k] = jqArg(expr)
		}
	}
}

// reference is a $jq expression yielding s from one of outputs, or "".
func reference(s string, outputs []string) string {
	for k := len(outputs) - 1; k >= 0; k-- {
		obs := outputs[k]
		if !referable(obs) {
			continue
		}
		out := fmt.Sprintf(".steps[%d].output", k)
		switch {
		case obs == s:
			return out
		case strings.TrimSuffix(obs, "\n") == s:
			return out + ` | rtrimstr("\n")`
		}
		for l, line := range strings.Split(obs, "\n") {
			if line == s {
				return fmt.Sprintf(`%s | split("\n") | .[%d]`, out, l)
			}
		}
	}
	return ""
}

// keepLiteral keeps a recorded argument's value as it was: "" and an object
// shaped {"$jq": ...} mean something else in a plan (fill, compute), so
// they become a $jq expression that is their JSON text (JSON is jq that
// yields itself).
func keepLiteral(v json.RawMessage) json.RawMessage { return planner.LiteralArg(v) }

func jqArg(expr string) json.RawMessage {
	b, _ := text.JSON(map[string]string{"$jq": expr}) // a map of strings always encodes
	return b
}
