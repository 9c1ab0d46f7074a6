// Package prose reads the step service's prose form (a client that gives
// only a tools prompt segment, no JSON Schemas): the model writes
//
//	Thought: what I know and why this action
//	Action: tool_name(param="value", n=3)
//
// or, to answer, "Final Answer: ...". Models write this loosely, so the
// parser is lenient: labels in any case and in markdown bold, code fences,
// single, double or triple quotes, bare words, JSON values, a JSON object
// as the only argument, "Action Input:" on its own line, positional
// arguments when the tools prompt names the parameters. It fails only on an
// Action line it cannot read, and says why.
package prose

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tactcli/tact/internal/text"
)

// Reply is one parsed prose reply: an action (Tool set) or an answer.
type Reply struct {
	Thought string
	Tool    string          // "" for an answer
	Args    json.RawMessage // the action's arguments: a JSON object, keys in written order
	Raw     string          // the action as the model wrote it: "Action: tool(...)"
	Answer  string
}

// Signatures maps tool names to their parameter names, in order.
type Signatures map[string][]string

var (
	sigRE   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.\-]*)\s*\(([^()]*)\)`)
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*`)
)

// IsName reports whether s is a tool name the prose form can hold
// (letters, digits, _ . -, not starting with a digit).
func IsName(s string) bool { return s != "" && identRE.FindString(s) == s }

// ParseSignatures finds the tools a prose tools segment describes, as
// "name(param, other=\"value\")" anywhere in it. The segment's format line
// ("Action: tool_name(param=...)") is an example, not a tool.
func ParseSignatures(segment string) Signatures {
	sigs := Signatures{}
	for _, line := range strings.Split(segment, "\n") {
		for _, m := range sigRE.FindAllStringSubmatchIndex(line, -1) {
			before := strings.TrimRight(line[:m[0]], " \t`*")
			if strings.HasSuffix(strings.ToLower(before), "action:") {
				continue
			}
			name := line[m[2]:m[3]]
			if _, seen := sigs[name]; seen {
				continue
			}
			var params []string
			for _, p := range strings.Split(line[m[4]:m[5]], ",") {
				p = strings.TrimSpace(p)
				id := identRE.FindString(p)
				rest := strings.TrimSpace(p[len(id):])
				if id == "" || (rest != "" && rest[0] != '=' && rest[0] != ':') {
					continue
				}
				params = append(params, id)
			}
			sigs[name] = params
		}
	}
	return sigs
}

// Names lists the known tools, sorted.
func (s Signatures) Names() []string {
	var out []string
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type section struct {
	label string // lower case: "", "thought", "action", "action input", "final answer", "observation"
	text  string
	line  string // the label's line as written
}

var labels = []string{"final answer", "action input", "thought", "action", "answer", "observation"}

// splitSections splits a reply at its label lines.
func splitSections(reply string) []section {
	reply = strings.ReplaceAll(reply, "\r\n", "\n")
	var out []section
	cur := section{}
	for _, line := range strings.Split(reply, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			continue
		}
		if label, rest, ok := labelOf(trimmed); ok {
			out = append(out, cur)
			cur = section{label: label, text: rest, line: trimmed}
			continue
		}
		if cur.text != "" || cur.label != "" {
			cur.text += "\n"
		}
		cur.text += line
	}
	out = append(out, cur)
	for i := range out {
		out[i].text = strings.TrimSpace(out[i].text)
	}
	return out
}

// labelOf recognizes "Thought:", "**Action:**", "## Final Answer:" and the like.
func labelOf(line string) (label, rest string, ok bool) {
	s := strings.TrimLeft(line, "*#>- \t")
	lower := strings.ToLower(s)
	for _, l := range labels {
		if !strings.HasPrefix(lower, l) {
			continue
		}
		after := strings.TrimLeft(s[len(l):], "* \t")
		if !strings.HasPrefix(after, ":") {
			continue
		}
		after = strings.TrimLeft(after[1:], "*")
		if l == "answer" {
			l = "final answer"
		}
		return l, strings.TrimSpace(after), true
	}
	return "", "", false
}

// Parse reads a prose reply. With sigs, an action must name one of
// its tools, and positional arguments take its parameter names in order.
func Parse(reply string, sigs Signatures) (Reply, error) {
	if strings.TrimSpace(reply) == "" {
		return Reply{}, errors.New("empty reply")
	}
	// Arguments are JSON text: keep them valid UTF-8 from the start.
	reply = strings.ToValidUTF8(reply, "\uFFFD")
	secs := splitSections(reply)
	var r Reply
	var action, input, answer *section
	actionAt, answerAt := -1, -1
	var rest []string // unlabelled text, for an answer without a label
	for i := range secs {
		s := &secs[i]
		if s.label == "observation" {
			// The model went on to imagine the tool's output: ignore the rest.
			break
		}
		switch s.label {
		case "thought":
			if r.Thought == "" {
				r.Thought = s.text
			}
		case "action":
			if action == nil {
				action, actionAt = s, i
			}
		case "action input":
			if input == nil {
				input = s
			}
		case "final answer":
			if answer == nil {
				answer, answerAt = s, i
			}
		default:
			if s.text != "" {
				rest = append(rest, s.text)
			}
		}
	}
	// Both an action and a final answer: the first one written counts.
	if action != nil && (answer == nil || actionAt < answerAt) {
		if err := r.parseAction(action.text, input, sigs); err != nil {
			return Reply{}, fmt.Errorf("%s: %v", clipLine(action.line), err)
		}
		if r.Thought == "" && len(rest) > 0 {
			r.Thought = rest[0]
		}
		return r, nil
	}
	switch {
	case answer != nil && answer.text != "":
		r.Answer = answer.text
	case len(rest) > 0:
		r.Answer = strings.Join(rest, "\n\n")
	default:
		r.Answer = r.Thought
	}
	if r.Answer == "" {
		return Reply{}, errors.New("no action and no answer in the reply")
	}
	return r, nil
}

func clipLine(s string) string {
	if len(s) > 80 {
		return s[:text.RuneStart(s, 77)] + "..."
	}
	return s
}

// parseAction reads "tool(args)", "tool" (arguments from Action Input),
// or a JSON object {"tool": ..., "args": {...}}.
func (r *Reply) parseAction(s string, input *section, sigs Signatures) error {
	s = strings.Trim(strings.TrimSpace(s), "`")
	if s == "" {
		return errors.New("no tool named")
	}
	if s[0] == '{' {
		return r.jsonAction(s, sigs)
	}
	name := identRE.FindString(s)
	if name == "" {
		return fmt.Errorf("%q is not a tool name", clipLine(text.FirstLine(s)))
	}
	if len(sigs) > 0 {
		if _, ok := sigs[name]; !ok {
			return fmt.Errorf("unknown tool %q (known: %s)", name, strings.Join(sigs.Names(), ", "))
		}
	}
	r.Tool = name
	p := &argParser{s: s, i: len(name), params: sigs[name]}
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '(' {
		// "Action: tool" with the arguments on an Action Input line, or none.
		r.Raw = "Action: " + name
		r.Args = json.RawMessage(`{}`)
		if input != nil && input.text != "" {
			args, err := inputArgs(input.text, sigs[name])
			if err != nil {
				return fmt.Errorf("Action Input: %v", err)
			}
			r.Args = args
			r.Raw += "\nAction Input: " + input.text
		}
		return nil
	}
	args, err := p.call()
	if err != nil {
		return err
	}
	r.Args = args
	r.Raw = "Action: " + strings.TrimSpace(s[:p.i])
	return nil
}

// inputArgs reads an Action Input: a JSON object, or key="value" pairs.
func inputArgs(s string, params []string) (json.RawMessage, error) {
	s = strings.Trim(strings.TrimSpace(s), "`")
	if strings.HasPrefix(s, "{") {
		return jsonObject(s)
	}
	p := &argParser{s: s + ")", params: params}
	return p.args()
}

func (r *Reply) jsonAction(s string, sigs Signatures) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("invalid JSON action: %v", err)
	}
	var name string
	for _, k := range []string{"tool", "name", "action", "tool_name"} {
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &name) == nil && name != "" {
			break
		}
	}
	if name == "" || identRE.FindString(name) != name {
		return errors.New(`JSON action without a "tool" name`)
	}
	if len(sigs) > 0 {
		if _, ok := sigs[name]; !ok {
			return fmt.Errorf("unknown tool %q (known: %s)", name, strings.Join(sigs.Names(), ", "))
		}
	}
	args := json.RawMessage(`{}`)
	for _, k := range []string{"args", "parameters", "arguments", "action_input", "tool_args"} {
		if raw, ok := m[k]; ok {
			obj, err := jsonObject(string(raw))
			if err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
			args = obj
			break
		}
	}
	r.Tool, r.Args = name, args
	r.Raw = "Action: " + strings.TrimSpace(s[:dec.InputOffset()])
	return nil
}

// jsonObject checks that s is one JSON object and compacts it.
func jsonObject(s string) (json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s[:dec.InputOffset()])); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// argParser reads the arguments of one call from s[i:], just before "(".
type argParser struct {
	s      string
	i      int
	params []string // positional parameter names
}

func (p *argParser) space() {
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if !unicode.IsSpace(r) {
			return
		}
		p.i += n
	}
}

func (p *argParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// call reads "(args)".
func (p *argParser) call() (json.RawMessage, error) {
	p.i++ // "("
	return p.args()
}

// args reads arguments up to and including the closing ")".
func (p *argParser) args() (json.RawMessage, error) {
	p.space()
	if p.peek() == '{' {
		// tool({"k": "v"}): one JSON object holds the arguments.
		start := p.i
		dec := json.NewDecoder(strings.NewReader(p.s[start:]))
		var v any
		if err := dec.Decode(&v); err == nil {
			if _, ok := v.(map[string]any); ok {
				end := start + int(dec.InputOffset())
				save := p.i
				p.i = end
				p.space()
				if p.peek() == ')' {
					p.i++
					return jsonObject(p.s[start:end])
				}
				p.i = save
			}
		}
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	pos := 0
	for {
		p.space()
		if p.i >= len(p.s) {
			return nil, errors.New("unclosed \"(\"")
		}
		if p.peek() == ')' {
			p.i++
			break
		}
		key := p.key()
		if key == "" {
			if pos >= len(p.params) {
				if len(p.params) == 0 {
					return nil, fmt.Errorf("argument %d has no name, and the tools prompt names no parameters for it (write name=\"value\")", len(keys)+1)
				}
				return nil, fmt.Errorf("argument %d has no name, and the tool has only %d parameters", len(keys)+1, len(p.params))
			}
			key = p.params[pos]
			pos++
		}
		if _, dup := vals[key]; dup {
			return nil, fmt.Errorf("argument %q given twice", key)
		}
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, fmt.Errorf("argument %q: %v", key, err)
		}
		keys = append(keys, key)
		vals[key] = v
		p.space()
		switch p.peek() {
		case ',':
			p.i++
		case ')':
		case 0:
			return nil, errors.New("unclosed \"(\"")
		default:
			return nil, fmt.Errorf("argument %q: want \",\" or \")\" after its value, found %q", key, clipLine(text.FirstLine(p.s[p.i:])))
		}
	}
	return objectJSON(keys, vals), nil
}

// key reads "name=" or "name:" and returns name, or "" (the cursor kept)
// for a positional argument.
func (p *argParser) key() string {
	id := identRE.FindString(p.s[p.i:])
	if id == "" {
		return ""
	}
	j := p.i + len(id)
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
		j++
	}
	if j < len(p.s) && (p.s[j] == '=' || p.s[j] == ':') && !strings.HasPrefix(p.s[j:], "==") {
		p.i = j + 1
		return id
	}
	return ""
}

// value reads one argument value: a quoted string, a JSON array or object,
// or a bare word (a JSON number, true, false or null when it is one; True,
// False and None as Python writes them; else a string).
func (p *argParser) value() (json.RawMessage, error) {
	switch c := p.peek(); c {
	case '"', '\'':
		if strings.HasPrefix(p.s[p.i:], strings.Repeat(string(c), 3)) {
			q := strings.Repeat(string(c), 3)
			end := strings.Index(p.s[p.i+3:], q)
			if end < 0 {
				return nil, fmt.Errorf("unclosed %s", q)
			}
			s := p.s[p.i+3 : p.i+3+end]
			p.i += 3 + end + 3
			return stringJSON(s), nil
		}
		s, err := p.quoted(c)
		if err != nil {
			return nil, err
		}
		return stringJSON(s), nil
	case '[', '{':
		dec := json.NewDecoder(strings.NewReader(p.s[p.i:]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON value: %v", err)
		}
		end := p.i + int(dec.InputOffset())
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(p.s[p.i:end])); err != nil {
			return nil, err
		}
		p.i = end
		return b.Bytes(), nil
	case 0:
		return nil, errors.New("missing value")
	}
	start := p.i
	depth := 0
	for p.i < len(p.s) {
		c := p.s[p.i]
		if depth == 0 && (c == ',' || c == ')') {
			break
		}
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		}
		p.i++
	}
	word := strings.TrimSpace(p.s[start:p.i])
	if word == "" {
		return nil, errors.New("missing value")
	}
	switch word {
	case "True", "true":
		return json.RawMessage("true"), nil
	case "False", "false":
		return json.RawMessage("false"), nil
	case "None", "null":
		return json.RawMessage("null"), nil
	}
	if _, err := strconv.ParseFloat(word, 64); err == nil && json.Valid([]byte(word)) {
		return json.RawMessage(word), nil
	}
	return stringJSON(word), nil
}

// quoted reads a string in quote q. A double-quoted string that is valid
// JSON is read as JSON; otherwise escapes are read leniently: \n, \t, \r,
// \\, \", \', \uXXXX, and any other backslash is kept as written (a regexp's
// \d stays \d).
func (p *argParser) quoted(q byte) (string, error) {
	start := p.i
	j := p.i + 1
	for j < len(p.s) && p.s[j] != q {
		if p.s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(p.s) {
		return "", fmt.Errorf("unclosed %c", q)
	}
	lit := p.s[start : j+1]
	p.i = j + 1
	if q == '"' {
		var s string
		if json.Unmarshal([]byte(lit), &s) == nil {
			return s, nil
		}
	}
	return unescape(lit[1 : len(lit)-1]), nil
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '"', '\'', '/':
			b.WriteByte(s[i])
		case 'u':
			if i+4 < len(s) {
				if n, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					r := rune(n)
					i += 4
					if utf16.IsSurrogate(r) && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
						if n2, err := strconv.ParseUint(s[i+3:i+7], 16, 16); err == nil {
							if d := utf16.DecodeRune(r, rune(n2)); d != unicode.ReplacementChar {
								r = d
								i += 6
							}
						}
					}
					b.WriteRune(r)
					continue
				}
			}
			b.WriteString(`\u`)
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func stringJSON(s string) json.RawMessage {
	b, _ := text.JSON(strings.ToValidUTF8(s, "\uFFFD"))
	return bytes.TrimSuffix(b, []byte("\n"))
}

// objectJSON writes an object with keys in the given order.
func objectJSON(keys []string, vals map[string]json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(stringJSON(k))
		b.WriteByte(':')
		b.Write(vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// FormatAction writes an action in the prose form Parse reads
// back: tool(k="v", n=3, list=["a"]) with strings JSON-quoted.
func FormatAction(tool string, args json.RawMessage) string {
	keys, vals := objectFields(args)
	for _, k := range keys {
		if k == "" || identRE.FindString(k) != k {
			// A key Parse could not read back as name=: the whole
			// object as the one argument.
			var c bytes.Buffer
			if json.Compact(&c, args) == nil {
				return tool + "(" + c.String() + ")"
			}
		}
	}
	var b strings.Builder
	b.WriteString(tool)
	b.WriteByte('(')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.Write(vals[k])
	}
	b.WriteByte(')')
	return b.String()
}

// objectFields splits a JSON object into its keys, in order, and their
// compact values; anything else gives none.
func objectFields(raw json.RawMessage) ([]string, map[string]json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil
		}
		var c bytes.Buffer
		if json.Compact(&c, v) != nil {
			return nil, nil
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = c.Bytes()
	}
	return keys, vals
}
