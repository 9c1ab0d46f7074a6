package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/planner"
)

// maxParamFileBytes caps a --param NAME=@FILE value (a plan caps at 64 MiB;
// a value is an argument, which a tool's own caps bound further).
const maxParamFileBytes = 16 << 20

// paramFlag is --param NAME=VALUE, repeatable. Its values are read when
// the command runs (planParams), so that a bad one is reported whole, not
// as pflag's "invalid value". Given, they replace TACT_PARAMS, as every flag
// replaces its variable.
type paramFlag struct {
	args []string
}

func addParamFlag(f *pflag.FlagSet) *paramFlag {
	defer helpGroup(f, "Input and output")()
	p := &paramFlag{}
	f.Var(p, "param", "value of the plan's parameter `NAME=VALUE` (NAME=@FILE: the file's text); repeatable")
	return p
}

func (p *paramFlag) Type() string   { return "NAME=VALUE" }
func (p *paramFlag) String() string { return "" }

func (p *paramFlag) Set(arg string) error {
	p.args = append(p.args, arg)
	return nil
}

// values reads the --param flags: each value a JSON string.
func (p *paramFlag) values() (map[string]json.RawMessage, error) {
	values := map[string]json.RawMessage{}
	for _, arg := range p.args {
		name, value, ok := strings.Cut(arg, "=")
		if !ok {
			return nil, badInputf("--param %q: want NAME=VALUE or NAME=@FILE", arg)
		}
		if !planner.ValidParamName(name) {
			return nil, badInputf("--param %q: invalid parameter name %q (want letters, digits and _, not starting with a digit)", arg, name)
		}
		if file, isFile := strings.CutPrefix(value, "@"); isFile {
			b, err := filekind.ReadFile(filekind.Spec{What: "--param " + name, Max: maxParamFileBytes}, file)
			if err != nil {
				return nil, badInput(err)
			}
			if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
				return nil, badInputf("--param %s: %s is not text (a parameter's value is a string)", name, file)
			}
			// One trailing newline is the file's end, not the value's
			// (echo x > f writes "x\n"): trimmed, as $(cat f) would.
			value = string(b)
			if v, ok := strings.CutSuffix(value, "\n"); ok {
				value = strings.TrimSuffix(v, "\r")
			}
		}
		raw, err := json.Marshal(value)
		if err != nil {
			return nil, badInputf("--param %s: %v", name, err)
		}
		values[name] = raw
	}
	return values, nil
}

// planParams reads the plan's parameters: the --param flags, or without
// them TACT_PARAMS.
func planParams(s *config.Settings, flag *paramFlag) (map[string]json.RawMessage, error) {
	if len(flag.args) > 0 {
		return flag.values()
	}
	if strings.TrimSpace(s.Params) == "" {
		return nil, nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s.Params), &values); err != nil || values == nil {
		return nil, badInputf("%s: not a JSON object of parameter values (%s)", config.Var("Params"), paramsProblem(err))
	}
	for name := range values {
		if !planner.ValidParamName(name) {
			return nil, badInputf("%s: invalid parameter name %q (want letters, digits and _, not starting with a digit)", config.Var("Params"), name)
		}
	}
	return values, nil
}

func paramsProblem(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}
