package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// A plan's arguments: their kinds, and the parameters a saved plan binds.

// ArgKind classifies an argument value.
type ArgKind int

const (
	ArgLiteral ArgKind = iota
	ArgFill            // "": one model call fills it
	ArgJQ              // {"$jq": EXPR}
	ArgParam           // {"$param": NAME}: the value tact exec is given for NAME
)

// ClassifyArg says what kind of value raw is; for ArgJQ it returns the
// expression, for ArgParam the parameter's name.
func ClassifyArg(raw json.RawMessage) (ArgKind, string) {
	t := bytes.TrimSpace(raw)
	if string(t) == `""` {
		return ArgFill, ""
	}
	if len(t) > 0 && t[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) == nil && len(m) == 1 {
			if e, ok := m["$jq"]; ok {
				var expr string
				if json.Unmarshal(e, &expr) == nil {
					return ArgJQ, expr
				}
			}
			if e, ok := m["$param"]; ok {
				var name string
				if json.Unmarshal(e, &name) == nil {
					return ArgParam, name
				}
			}
		}
	}
	return ArgLiteral, ""
}

// checkArgs is CheckStep once the step's tool is known.
func checkArgs(s *Step, t tools.Tool) error {
	if s.Args == nil {
		s.Args = map[string]json.RawMessage{}
	}
	literal := map[string]json.RawMessage{}
	for _, k := range slices.Sorted(maps.Keys(s.Args)) {
		v := s.Args[k]
		kind, expr := ClassifyArg(v)
		switch kind {
		case ArgJQ:
			// Bounded (jqx.MaxFilterBytes, long filters compiled in a
			// child process): plans come from files, models and
			// `tact serve` clients.
			if err := jqx.Check(expr, "$state", "$params"); err != nil {
				return fmt.Errorf("argument %q: invalid $jq expression: %v", k, err)
			}
		case ArgParam:
			if !validParamName(expr) {
				return fmt.Errorf("argument %q: invalid parameter name %q (want letters, digits and _, not starting with a digit)", k, expr)
			}
		case ArgLiteral:
			if c, ok := t.(tools.LiteralChecker); ok {
				handled, err := c.CheckLiteral(k, v)
				if err != nil {
					return fmt.Errorf("arguments for %s: %v", s.Tool, err)
				}
				if handled {
					continue
				}
			}
			literal[k] = v
		}
	}
	// Checked here, not at run time: a row missing a required argument
	// could only fail when it runs, after earlier steps had their effects.
	var shape struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(t.Schema(), &shape); err != nil {
		return fmt.Errorf("tool %s: bad schema: %v", s.Tool, err)
	}
	for _, name := range shape.Required {
		if _, ok := s.Args[name]; !ok {
			return fmt.Errorf("arguments for %s: missing required argument %q", s.Tool, name)
		}
	}
	partial, err := schema.Partial(t.Schema())
	if err != nil {
		return fmt.Errorf("tool %s: bad schema: %v", s.Tool, err)
	}
	v, err := schema.Compile(partial)
	if err != nil {
		return fmt.Errorf("tool %s: %v", s.Tool, err)
	}
	b, _ := json.Marshal(literal)
	if _, err := v.ValidateJSON(b); err != nil {
		return fmt.Errorf("arguments for %s: %v", s.Tool, err)
	}
	return nil
}

// ParamSpec declares one plan parameter in the header's "params".
type ParamSpec struct {
	Description string `json:"description,omitempty"`
	// Default is the value when none is given (absent: the parameter is
	// required).
	Default json.RawMessage `json:"default,omitempty"`
}

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validParamName: names are jq identifiers, so $params.NAME works.
func validParamName(name string) bool { return paramName.MatchString(name) }

// ValidParamName reports whether name may name a plan parameter.
func ValidParamName(name string) bool { return validParamName(name) }

// checkParamSpecs returns what is wrong with a header's declarations ("":
// nothing).
func checkParamSpecs(specs map[string]ParamSpec) string {
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		if !validParamName(name) {
			return fmt.Sprintf("params: invalid parameter name %q (want letters, digits and _, not starting with a digit)", name)
		}
	}
	return ""
}

// jqParamRef finds the parameters a $jq expression names as $params.NAME
// or $params["NAME"].
var jqParamRef = regexp.MustCompile(`\$params(?:\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)|\s*\[\s*"([A-Za-z_][A-Za-z0-9_]*)"\s*\])`)

var jqParamsVar = regexp.MustCompile(`\$params\b`)

// ParamRef is one place a plan uses a parameter.
type ParamRef struct {
	Name string
	Line int
	Arg  string
}

// ParamRefs lists where the plan's steps use parameters: {"$param": NAME}
// arguments and $params.NAME in $jq expressions, in plan order.
func (p *Plan) ParamRefs() []ParamRef {
	var refs []ParamRef
	for _, s := range p.Steps {
		for _, k := range slices.Sorted(maps.Keys(s.Args)) {
			kind, v := ClassifyArg(s.Args[k])
			switch kind {
			case ArgParam:
				refs = append(refs, ParamRef{v, s.Line, k})
			case ArgJQ:
				for _, m := range jqParamRef.FindAllStringSubmatch(v, -1) {
					refs = append(refs, ParamRef{m[1] + m[2], s.Line, k})
				}
			}
		}
	}
	return refs
}

// BindParams gives the plan's parameters their values: every
// {"$param": NAME} argument becomes the value (checked against the tool's
// schema), and every $jq expression using $params gets them bound. given
// holds JSON values; a JSON string is taken as the JSON it holds when the
// argument's schema does not take a string but takes that JSON's type (so
// --param count=3 is the integer 3 where the tool wants an integer).
// Header defaults fill what is not given. A parameter used without a value
// or default, or one given that the plan neither declares nor uses, is a
// *ParseError naming the line; nothing runs before this is done.
func BindParams(p *Plan, given map[string]json.RawMessage, reg *tools.Registry) error {
	var specs map[string]ParamSpec
	headerLine := 0
	if p.Header != nil {
		specs, headerLine = p.Header.Params, p.Header.Line
	}
	refs := p.ParamRefs()
	known := map[string]bool{}
	for name := range specs {
		known[name] = true
	}
	for _, r := range refs {
		if specs != nil && !known[r.Name] {
			return &ParseError{p.Source, r.Line, fmt.Sprintf("argument %q: parameter %q is not declared in the plan header's params (declared: %s)", r.Arg, r.Name, strings.Join(slices.Sorted(maps.Keys(specs)), ", "))}
		}
	}
	for _, r := range refs {
		known[r.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if !known[name] {
			line := headerLine
			if line == 0 && len(p.Steps) > 0 {
				line = p.Steps[0].Line
			}
			names := slices.Sorted(maps.Keys(known))
			list := "none"
			if len(names) > 0 {
				list = strings.Join(names, ", ")
			}
			return &ParseError{p.Source, line, fmt.Sprintf("unknown parameter %q (the plan's parameters: %s)", name, list)}
		}
	}
	values := map[string]json.RawMessage{}
	for name, spec := range specs {
		if len(spec.Default) > 0 {
			values[name] = spec.Default
		}
	}
	for name, v := range given {
		values[name] = v
	}
	for _, r := range refs {
		if _, ok := values[r.Name]; !ok {
			return &ParseError{p.Source, r.Line, fmt.Sprintf("argument %q: parameter %q has no value and no default: give --param %s=VALUE", r.Arg, r.Name, r.Name)}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	all, err := json.Marshal(values)
	if err != nil {
		return &ParseError{p.Source, headerLine, fmt.Sprintf("parameters: %v", err)}
	}
	for i := range p.Steps {
		if err := bindStep(&p.Steps[i], values, all, reg); err != nil {
			return &ParseError{p.Source, p.Steps[i].Line, err.Error()}
		}
	}
	return nil
}

func bindStep(s *Step, values map[string]json.RawMessage, all []byte, reg *tools.Registry) error {
	t, ok := reg.Get(s.Tool)
	if !ok {
		return fmt.Errorf("unknown tool %q", s.Tool)
	}
	var shape struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(t.Schema(), &shape) // CheckStep already read it
	var partial *schema.Validator
	bound := false
	for _, k := range slices.Sorted(maps.Keys(s.Args)) {
		kind, v := ClassifyArg(s.Args[k])
		switch kind {
		case ArgParam:
			val := coerce(values[v], shape.Properties[k])
			if partial == nil {
				raw, err := schema.Partial(t.Schema())
				if err == nil {
					partial, err = schema.Compile(raw)
				}
				if err != nil {
					return fmt.Errorf("tool %s: bad schema: %v", s.Tool, err)
				}
			}
			one, _ := json.Marshal(map[string]json.RawMessage{k: val})
			if _, err := partial.ValidateJSON(one); err != nil {
				return fmt.Errorf("parameter %q (argument %q of %s): %v", v, k, s.Tool, err)
			}
			// A value is data: one shaped {"$jq": ...}, {"$param": ...}
			// or "" must not be read as a directive when the step runs.
			s.Args[k] = LiteralArg(val)
			bound = true
		case ArgJQ:
			if !jqParamsVar.MatchString(v) {
				continue
			}
			// The values travel in the expression, so the bound plan
			// stands alone: its rows in the trace and in a checkpoint
			// (tact run --resume) run the same without the parameters.
			expr := string(all) + " as $params | (\n" + v + "\n)"
			if err := jqx.Check(expr, "$state"); err != nil {
				return fmt.Errorf("argument %q: the $jq expression with $params bound: %v", k, err)
			}
			raw, _ := json.Marshal(map[string]string{"$jq": expr})
			s.Args[k] = raw
			bound = true
		}
	}
	if bound {
		return checkArgs(s, t)
	}
	return nil
}

// LiteralArg is a plan argument that yields the JSON value v as it is. A
// value a plan would read as a directive ("" to fill, an object shaped
// {"$jq": ...} or {"$param": ...}) becomes a $jq expression that is its
// JSON text, which jq yields unchanged; any other value is itself.
func LiteralArg(v json.RawMessage) json.RawMessage {
	if kind, _ := ClassifyArg(v); kind == ArgLiteral {
		return v
	}
	var compact bytes.Buffer
	if json.Compact(&compact, v) != nil {
		return v
	}
	raw, _ := json.Marshal(map[string]string{"$jq": compact.String()})
	return raw
}

// coerce turns a JSON string into the JSON it holds when the argument's
// schema (prop) does not take a string but takes that value's type.
func coerce(val, prop json.RawMessage) json.RawMessage {
	var text string
	if json.Unmarshal(val, &text) != nil {
		return val
	}
	types := schemaTypes(prop)
	if len(types) == 0 || types["string"] {
		return val
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return val
	}
	if !types[jsonType(v)] && !(jsonType(v) == "integer" && types["number"]) {
		return val
	}
	return json.RawMessage(bytes.TrimSpace([]byte(text)))
}

// schemaTypes is the set of a schema's "type" keyword (empty: any).
func schemaTypes(prop json.RawMessage) map[string]bool {
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(prop, &s) != nil || len(s.Type) == 0 {
		return nil
	}
	out := map[string]bool{}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		out[one] = true
		return out
	}
	var many []string
	if json.Unmarshal(s.Type, &many) == nil {
		for _, t := range many {
			out[t] = true
		}
	}
	return out
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// placeholder is {{NAME}} as the planner writes it where a parameter's
// value belongs.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// templatize makes a planned plan a template of the parameters names: the
// header declares them, and a string argument that is {{NAME}} becomes
// {"$param": NAME}, one that holds it among other text a $jq expression
// joining the text and $params.NAME. Placeholders of other names stay.
func templatize(p *Plan, names []string, reg *tools.Registry) error {
	declared := map[string]bool{}
	if p.Header.Params == nil {
		p.Header.Params = map[string]ParamSpec{}
	}
	for _, n := range names {
		if !validParamName(n) {
			return fmt.Errorf("invalid parameter name %q (want letters, digits and _, not starting with a digit)", n)
		}
		declared[n] = true
		p.Header.Params[n] = ParamSpec{}
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		changed := false
		for _, k := range slices.Sorted(maps.Keys(s.Args)) {
			var text string
			if kind, _ := ClassifyArg(s.Args[k]); kind != ArgLiteral || json.Unmarshal(s.Args[k], &text) != nil {
				continue
			}
			if isCommandArg(reg, s.Tool, k) {
				// A value in a command line is one word, never text.
				v, ok, err := templateCommand(text, declared)
				if err != nil {
					return fmt.Errorf("step %d: %v", i+1, err)
				}
				if ok {
					s.Args[k] = v
					changed = true
				}
				continue
			}
			if v, ok := templateArg(text, declared); ok {
				s.Args[k] = v
				changed = true
			}
		}
		if changed {
			if err := CheckStep(s, reg); err != nil {
				return fmt.Errorf("step %d: %v", i+1, err)
			}
		}
	}
	return nil
}

// templateArg is the argument for text with placeholders of declared
// names (false: it has none).
// isCommandArg reports whether argument arg of tool holds a command line
// (its declaration says so: tools.Decl.Command).
func isCommandArg(reg *tools.Registry, tool, arg string) bool {
	if reg == nil {
		return false
	}
	t, ok := reg.Get(tool)
	return ok && tools.DeclOf(t).Command == arg
}

func templateArg(text string, declared map[string]bool) (json.RawMessage, bool) {
	var parts []string
	last, found := 0, false
	for _, m := range placeholder.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		if !declared[name] {
			continue
		}
		if m[0] == 0 && m[1] == len(text) {
			raw, _ := json.Marshal(map[string]string{"$param": name})
			return raw, true
		}
		found = true
		if m[0] > last {
			lit, _ := json.Marshal(text[last:m[0]])
			parts = append(parts, string(lit))
		}
		parts = append(parts, "($params."+name+" | tostring)")
		last = m[1]
	}
	if !found {
		return nil, false
	}
	if last < len(text) {
		lit, _ := json.Marshal(text[last:])
		parts = append(parts, string(lit))
	}
	raw, _ := json.Marshal(map[string]string{"$jq": strings.Join(parts, " + ")})
	return raw, true
}
