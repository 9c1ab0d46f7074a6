package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"

	"github.com/tactcli/tact/internal/atomicfile"
	"github.com/tactcli/tact/internal/filekind"
)

// policyFile keeps rules raw so each can be decoded strictly and errors can
// name the rule.
type policyFile struct {
	Allow []json.RawMessage `json:"allow"`
	Deny  []json.RawMessage `json:"deny"`
}

// ParsePolicy parses a policy file strictly: unknown fields, bad globs and
// empty rules are errors of the form "name: reason" (JSON syntax and type
// errors as "name:line:col: reason").
func ParsePolicy(data []byte, name string) (*Policy, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Policy{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var pf policyFile
	if err := dec.Decode(&pf); err != nil {
		return nil, jsonError(name, data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(data, dec.InputOffset())
		return nil, fmt.Errorf("%s:%d:%d: unexpected data after the policy object", name, line, col)
	}
	p := &Policy{}
	var err error
	if p.Allow, err = parseRules(name, "allow", pf.Allow); err != nil {
		return nil, err
	}
	if p.Deny, err = parseRules(name, "deny", pf.Deny); err != nil {
		return nil, err
	}
	return p, nil
}

func parseRules(name, list string, raws []json.RawMessage) ([]Rule, error) {
	var out []Rule
	for i, raw := range raws {
		where := fmt.Sprintf("%s[%d] %s", list, i, ruleJSON(raw))
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var r Rule
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: %s: %s", name, where, jsonReason(err))
		}
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", name, where, err)
		}
		if r.Exact && list == "deny" {
			// A deny rule must catch every form of the command.
			return nil, fmt.Errorf("%s: %s: \"exact\" is for allow rules: a deny rule matches the command with any further arguments", name, where)
		}
		out = append(out, r)
	}
	return out, nil
}

// ruleJSON is a rule's JSON on one line, shortened, for error messages.
func ruleJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(bytes.Join(bytes.Fields(raw), []byte(" ")))
	}
	s := buf.String()
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// jsonError turns encoding/json errors into "name:line:col: reason".
func jsonError(name string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset)
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, syn.Error())
	case errors.As(err, &typ):
		line, col := lineCol(data, typ.Offset)
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, jsonReason(err))
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, int64(len(data)))
		return fmt.Errorf("%s:%d:%d: unexpected end of JSON", name, line, col)
	}
	return fmt.Errorf("%s: %s", name, jsonReason(err))
}

// jsonReason words a decode error without Go type names.
func jsonReason(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		field := typ.Field
		if field == "" {
			field = "value"
		}
		return fmt.Sprintf("%s: expected %s, got %s", field, jsonKind(typ.Type), typ.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.String:
		return "string"
	}
	return t.Kind().String()
}

// lineCol converts a byte offset into 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// policyInput is how the policy file is opened: a regular file (a FIFO or a
// device is refused, never waited on or read for ever) of at most 1 MiB
// (real ones are a few KiB).
var policyInput = filekind.Spec{What: "policy", Max: 1 << 20, Trusted: true}

// LoadPolicy reads a policy file; a missing file is an empty policy.
func LoadPolicy(path string) (*Policy, error) {
	data, err := filekind.ReadFile(policyInput, path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Policy{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParsePolicy(data, path)
}

// marshal writes the policy with both lists present, so the file is easy
// to edit by hand.
func (p *Policy) marshal() ([]byte, error) {
	out := Policy{Allow: p.Allow, Deny: p.Deny}
	if out.Allow == nil {
		out.Allow = []Rule{}
	}
	if out.Deny == nil {
		out.Deny = []Rule{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// AppendRule adds r to the allow list of the policy file at path, creating
// the file (0600) and its missing directories (0700); an existing file keeps
// its mode. Concurrent runs serialize on a lock file (flock) beside it and
// the file is replaced by an atomic rename, so neither a crash nor a second
// run loses rules. An identical rule is not added twice.
func AppendRule(path string, r Rule) error {
	if path == "" {
		return errors.New("policy: no policy file path")
	}
	if err := r.validate(); err != nil {
		return fmt.Errorf("policy %s: rule %s: %v", path, r, err)
	}
	// Write through a symlink (dotfile managers) rather than replacing it.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("policy %s: %w", path, err)
	}
	lock, err := filekind.OpenLock(filekind.Spec{What: "policy lock"}, path+".lock")
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := flockRetry(lock); err != nil {
		return fmt.Errorf("policy %s: lock: %w", path, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway

	mode := fs.FileMode(0o600)
	data, err := filekind.ReadFile(policyInput, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return err
	default:
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
	}
	// Refuse to rewrite a file we cannot parse: it would lose the user's rules.
	p, err := ParsePolicy(data, path)
	if err != nil {
		return err
	}
	for _, have := range p.Allow {
		if have.Tool == r.Tool && have.Command == r.Command && have.Path == r.Path {
			return nil
		}
	}
	p.Allow = append(p.Allow, r)
	out, err := p.marshal()
	if err != nil {
		return fmt.Errorf("policy %s: %w", path, err)
	}
	if err := atomicfile.Replace(path, out, mode); err != nil {
		return fmt.Errorf("policy %s: %w", path, err)
	}
	return nil
}

// flockRetry takes an exclusive lock, retrying when a signal interrupts it.
func flockRetry(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// strconvQuote quotes like %q; kept as a helper so Rule.String stays terse.
func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }
