// Package planner holds tact's plans: the JSONL plan format (parse, write),
// and the Planner that asks a model for a plan or a replan.
package planner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tactcli/tact/tools"
)

// Header is the first row `tact plan` writes.
type Header struct {
	Type    string         `json:"type"`
	Query   string         `json:"query"`
	Created time.Time      `json:"created"`
	Planner map[string]any `json:"planner,omitempty"`
	// Params declares the plan's parameters (see params.go).
	Params map[string]ParamSpec `json:"params,omitempty"`
	// Files names the context files (tact plan -f) the plan was made
	// with: tact exec of it needs as many -f inputs (docs/plans.md).
	Files []string `json:"files,omitempty"`
	// Line is the header's source line (0 for planner-made headers).
	Line int `json:"-"`
}

// Step is one plan row. Args values are literals, "" (fill from context with
// one model call) or {"$jq": EXPR} (computed from the run state, no model).
type Step struct {
	Type    string                     `json:"type,omitempty"`
	Step    int                        `json:"step,omitempty"`
	Thought string                     `json:"thought,omitempty"`
	Tool    string                     `json:"tool"`
	Args    map[string]json.RawMessage `json:"args"`
	// Line is the source line (0 for planner-made steps).
	Line int `json:"-"`
}

// Plan is a header (optional in hand-written files) and its steps.
type Plan struct {
	Header *Header
	Steps  []Step
	// Source names where the plan came from ("plan.jsonl", "-", "planner").
	Source string
}

// ParseError is bad plan input; its message is "FILE:LINE: reason".
type ParseError struct {
	File   string
	Line   int
	Reason string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Reason)
}

// Query returns the header's query ("" without a header).
func (p *Plan) Query() string {
	if p.Header == nil {
		return ""
	}
	return p.Header.Query
}

// Tools lists the distinct tools the plan names, in order of first use.
func (p *Plan) Tools() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range p.Steps {
		if !seen[s.Tool] {
			seen[s.Tool] = true
			out = append(out, s.Tool)
		}
	}
	return out
}

// Outline is the plan as numbered lines for prompts.
func (p *Plan) Outline() []string {
	out := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		args, _ := json.Marshal(s.Args)
		line := fmt.Sprintf("%d. %s %s", i+1, s.Tool, args)
		if s.Thought != "" {
			line += " (" + s.Thought + ")"
		}
		out[i] = line
	}
	return out
}

const maxLine = 16 * 1024 * 1024

var utf8BOM = []byte("\xef\xbb\xbf")

// Parse reads a JSONL plan. Every problem is a *ParseError naming name:line.
// Tools must exist in reg; whether they are allowed is decided at run time.
func Parse(r io.Reader, name string, reg *tools.Registry) (*Plan, error) {
	p := &Plan{Source: name}
	br := bufio.NewReaderSize(r, 64*1024)
	line := 0
	for {
		raw, err := readLine(br)
		if len(raw) > 0 || err == nil {
			line++
		}
		if err != nil && err != io.EOF {
			return nil, &ParseError{name, line, err.Error()}
		}
		if len(raw) == 0 && err == io.EOF {
			break
		}
		if line == 1 {
			// A UTF-8 byte order mark (editors on Windows write one) is not
			// part of the first row.
			raw = bytes.TrimPrefix(raw, utf8BOM)
		}
		text := bytes.TrimSpace(raw)
		if len(text) > 0 {
			if perr := p.addRow(text, name, line, reg); perr != nil {
				return nil, perr
			}
		}
		if err == io.EOF {
			break
		}
	}
	if len(p.Steps) == 0 {
		return nil, &ParseError{name, 0, "plan has no steps"}
	}
	return p, nil
}

// readLine returns one line without its newline; lines over maxLine are an
// error rather than silently split.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if err != nil {
			return buf, err
		}
		if !isPrefix {
			return buf, nil
		}
	}
}

type rowProbe struct {
	Type string `json:"type"`
}

func (p *Plan) addRow(text []byte, name string, line int, reg *tools.Registry) *ParseError {
	fail := func(format string, a ...any) *ParseError {
		return &ParseError{name, line, fmt.Sprintf(format, a...)}
	}
	if text[0] != '{' {
		return fail("invalid plan row: expected a JSON object")
	}
	var probe rowProbe
	if err := json.Unmarshal(text, &probe); err != nil {
		return fail("invalid JSON: %s", jsonErr(err))
	}
	switch probe.Type {
	case "plan":
		if p.Header != nil {
			return fail("second plan header")
		}
		if len(p.Steps) > 0 {
			return fail("plan header after steps")
		}
		var h Header
		if err := strictDecode(text, &h); err != nil {
			return fail("invalid plan header: %s", jsonErr(err))
		}
		if perr := checkParamSpecs(h.Params); perr != "" {
			return fail("invalid plan header: %s", perr)
		}
		h.Line = line
		p.Header = &h
		return nil
	case "", "step":
	default:
		return fail("unknown row type %q (want \"plan\" or \"step\")", probe.Type)
	}
	var s Step
	if err := strictDecode(text, &s); err != nil {
		return fail("invalid plan step: %s", jsonErr(err))
	}
	s.Line = line
	if err := CheckStep(&s, reg); err != nil {
		return fail("%s", err)
	}
	p.Steps = append(p.Steps, s)
	return nil
}

func strictDecode(text []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the object")
	}
	return nil
}

func jsonErr(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

// CheckStep validates a step against the registry: known tool, args an
// object, every required argument present ("" to fill, {"$jq": ...} and
// {"$param": ...} count as present), $jq expressions that compile, and
// literal args that satisfy the tool's schema. A parameter's value is
// checked when it is bound (BindParams).
func CheckStep(s *Step, reg *tools.Registry) error {
	if s.Tool == "" {
		return fmt.Errorf("missing \"tool\"")
	}
	t, ok := reg.Get(s.Tool)
	if !ok {
		return fmt.Errorf("unknown tool %q (known: %s)", s.Tool, strings.Join(reg.Names(), ", "))
	}
	return checkArgs(s, t)
}

// NeedsModel reports whether any argument must be filled by a model.
func (s *Step) NeedsModel() bool {
	for _, v := range s.Args {
		if k, _ := ClassifyArg(v); k == ArgFill {
			return true
		}
	}
	return false
}

// Rows is the plan as WriteJSONL writes it, one JSON object per row (for
// trace events).
func (p *Plan) Rows() []json.RawMessage {
	var buf bytes.Buffer
	_ = p.WriteJSONL(&buf) // writing to a buffer cannot fail
	var rows []json.RawMessage
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		rows = append(rows, json.RawMessage(l))
	}
	return rows
}

// WriteJSONL writes the header (if any) and the steps, one object a line.
func (p *Plan) WriteJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if p.Header != nil {
		h := *p.Header
		h.Type = "plan"
		if err := enc.Encode(h); err != nil {
			return err
		}
	}
	for i, s := range p.Steps {
		s.Type = "step"
		s.Step = i + 1
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return nil
}
