package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/text"
)

const (
	// DefaultTimeout bounds a hook that sets no "timeout" (Claude Code's).
	DefaultTimeout = 60 * time.Second
	// MaxTimeout keeps a typo ("timeout": 60000, meant as milliseconds)
	// from making a stuck hook stall a run for days.
	MaxTimeout = time.Hour
	// maxFileSize: the file is read whole; real ones are a few KiB.
	maxFileSize = 1 << 20
)

// Events are the events a hooks file may name, in the order docs list them.
var Events = []Event{PreToolUse, PostToolUse, Stop, RunStart}

// knownEvents is Events in words, for the unknown-event error.
func knownEvents() string {
	words := make([]string, len(Events))
	for i, e := range Events {
		words[i] = string(e)
	}
	return strings.Join(words, ", ")
}

// toolEvent reports whether ev is about one tool call (its matcher counts).
func toolEvent(ev Event) bool { return ev == PreToolUse || ev == PostToolUse }

// Hook is one command of the hooks file.
type Hook struct {
	Event Event
	// Matcher is the group's matcher as written ("" for every tool); it is
	// ignored for Stop and RunStart.
	Matcher string
	Command string
	Timeout time.Duration
	re      *regexp.Regexp // nil: every tool
}

// Config is a parsed hooks file. A nil *Config is valid and has no hooks.
type Config struct {
	Path  string
	hooks map[Event][]Hook // in file order
}

// Empty reports whether the file has no hook at all.
func (c *Config) Empty() bool {
	if c == nil {
		return true
	}
	for _, hs := range c.hooks {
		if len(hs) > 0 {
			return false
		}
	}
	return true
}

// Has reports whether any hook is registered for ev, whatever its matcher:
// the caller can skip building an Input when there is none.
func (c *Config) Has(ev Event) bool { return c != nil && len(c.hooks[ev]) > 0 }

// Hooks returns the hooks of ev that match tool, in file order. For Stop
// and RunStart tool is ignored and every hook of the event is returned.
// A matcher matches when it matches tact's name or one of its Aliases.
func (c *Config) Hooks(ev Event, tool string) []Hook {
	if c == nil {
		return nil
	}
	var out []Hook
	var names []string
	for _, h := range c.hooks[ev] {
		if h.re != nil && toolEvent(ev) {
			if names == nil {
				names = Aliases(tool)
			}
			if !matchAny(h.re, names) {
				continue
			}
		}
		out = append(out, h)
	}
	return out
}

func matchAny(re *regexp.Regexp, names []string) bool {
	for _, n := range names {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

// Load reads and parses the hooks file at path. It must be a regular file
// of at most 1 MiB; a missing file is an error wrapping fs.ErrNotExist, so
// a caller may treat the default path as optional.
func Load(path string) (*Config, error) {
	data, err := filekind.ReadFile(filekind.Spec{What: "hooks file", Max: maxFileSize, Trusted: true}, path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses a hooks file strictly, in Claude Code's shape:
//
//	{"hooks": {"EVENT": [{"matcher": "REGEXP", "hooks": [{"type": "command", "command": "...", "timeout": SECONDS}]}]}}
//
// Unknown events and fields, duplicate keys, wrong types and bad values
// are errors of one line, "NAME: hooks.EVENT[i].hooks[j].FIELD: reason"
// (JSON syntax errors "NAME:LINE:COL: reason").
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than the %s cap", name, filekind.Size(maxFileSize))
	}
	// Syntax first, with a position: after this every value is valid JSON
	// and the walk below only checks shapes.
	dec := json.NewDecoder(bytes.NewReader(data))
	var root json.RawMessage
	if err := dec.Decode(&root); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: empty file (want {\"hooks\": {...}})", name)
		}
		return nil, syntaxError(name, data, err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		rest := data[end:]
		end += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		line, col := lineCol(data, end)
		return nil, fmt.Errorf("%s:%d:%d: unexpected data after the hooks object", name, line, col)
	}
	p := parser{name: name}
	c := &Config{Path: name, hooks: map[Event][]Hook{}}
	top, err := p.object("", root)
	if err != nil {
		return nil, err
	}
	for _, m := range top {
		if m.key != "hooks" {
			return nil, p.errf(m.key, "unknown field (known: hooks)")
		}
		events, err := p.object("hooks", m.val)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			ev := Event(e.key)
			where := "hooks." + e.key
			if !knownEvent(ev) {
				return nil, p.errf(where, "unknown event (known: %s)", knownEvents())
			}
			groups, err := p.array(where, e.val)
			if err != nil {
				return nil, err
			}
			for i, g := range groups {
				hs, err := p.group(ev, fmt.Sprintf("%s[%d]", where, i), g)
				if err != nil {
					return nil, err
				}
				c.hooks[ev] = append(c.hooks[ev], hs...)
			}
		}
	}
	return c, nil
}

func knownEvent(ev Event) bool { return slices.Contains(Events, ev) }

// parser walks the file by hand so every error can name its field path
// (encoding/json's errors have no array indexes).
type parser struct{ name string }

func (p parser) errf(where, format string, args ...any) error {
	if where == "" {
		return fmt.Errorf("%s: %s", p.name, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%s: %s: %s", p.name, where, fmt.Sprintf(format, args...))
}

type member struct {
	key string
	val json.RawMessage
}

// object splits a JSON object into its members in order, refusing any
// other value and duplicate keys (the second would silently win).
func (p parser) object(where string, raw json.RawMessage) ([]member, error) {
	if text.JSONKind(raw) != "object" {
		return nil, p.errf(where, "want an object, got %s", shown(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // "{"
		return nil, p.errf(where, "%v", err)
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, p.errf(where, "%v", err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, p.errf(where, "%v", err)
		}
		if seen[key] {
			return nil, p.errf(join(where, key), "duplicate field")
		}
		seen[key] = true
		out = append(out, member{key, val})
	}
	return out, nil
}

func (p parser) array(where string, raw json.RawMessage) ([]json.RawMessage, error) {
	if text.JSONKind(raw) != "array" {
		return nil, p.errf(where, "want an array, got %s", shown(raw))
	}
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, p.errf(where, "%v", err)
	}
	return out, nil
}

func (p parser) str(where string, raw json.RawMessage) (string, error) {
	var s string
	if text.JSONKind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		return "", p.errf(where, "want a string, got %s", shown(raw))
	}
	return s, nil
}

// group parses one {"matcher": ..., "hooks": [...]} entry.
func (p parser) group(ev Event, where string, raw json.RawMessage) ([]Hook, error) {
	ms, err := p.object(where, raw)
	if err != nil {
		return nil, err
	}
	var matcher string
	var re *regexp.Regexp
	var list []json.RawMessage
	haveHooks := false
	for _, m := range ms {
		at := join(where, m.key)
		switch m.key {
		case "matcher":
			if matcher, err = p.str(at, m.val); err != nil {
				return nil, err
			}
			if !toolEvent(ev) {
				continue // Stop and RunStart concern no tool
			}
			if re, err = compileMatcher(matcher); err != nil {
				return nil, p.errf(at, "bad regexp: %v", err)
			}
		case "hooks":
			if list, err = p.array(at, m.val); err != nil {
				return nil, err
			}
			haveHooks = true
		default:
			return nil, p.errf(at, "unknown field (known: matcher, hooks)")
		}
	}
	if !haveHooks {
		return nil, p.errf(join(where, "hooks"), "missing (want an array of {\"type\": \"command\", \"command\": ...})")
	}
	out := make([]Hook, 0, len(list))
	for j, hr := range list {
		h, err := p.hook(fmt.Sprintf("%s.hooks[%d]", where, j), hr)
		if err != nil {
			return nil, err
		}
		h.Event, h.Matcher, h.re = ev, matcher, re
		out = append(out, h)
	}
	return out, nil
}

// hook parses one {"type": "command", "command": ..., "timeout": ...}.
func (p parser) hook(where string, raw json.RawMessage) (Hook, error) {
	ms, err := p.object(where, raw)
	if err != nil {
		return Hook{}, err
	}
	h := Hook{Timeout: DefaultTimeout}
	haveType, haveCommand := false, false
	for _, m := range ms {
		at := join(where, m.key)
		switch m.key {
		case "type":
			typ, err := p.str(at, m.val)
			if err != nil {
				return Hook{}, err
			}
			if typ != "command" {
				return Hook{}, p.errf(at, "want \"command\", got %s", shown(m.val))
			}
			haveType = true
		case "command":
			if h.Command, err = p.str(at, m.val); err != nil {
				return Hook{}, err
			}
			if strings.TrimSpace(h.Command) == "" {
				return Hook{}, p.errf(at, "empty command")
			}
			haveCommand = true
		case "timeout":
			if h.Timeout, err = p.timeout(at, m.val); err != nil {
				return Hook{}, err
			}
		default:
			return Hook{}, p.errf(at, "unknown field (known: type, command, timeout)")
		}
	}
	if !haveType {
		return Hook{}, p.errf(join(where, "type"), "missing (want \"command\")")
	}
	if !haveCommand {
		return Hook{}, p.errf(join(where, "command"), "missing")
	}
	return h, nil
}

// timeout reads a number of seconds; fractions are fine ("0.5").
func (p parser) timeout(where string, raw json.RawMessage) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, p.errf(where, "want a positive number of seconds, got %s", shown(raw))
	}
	if text.JSONKind(raw) != "number" {
		return bad()
	}
	sec, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsNaN(sec) || sec <= 0 {
		return bad()
	}
	if sec > MaxTimeout.Seconds() {
		return 0, p.errf(where, "%s seconds is more than the %.0f allowed", shown(raw), MaxTimeout.Seconds())
	}
	// Rounded, not cut: 0.3 s is 300ms, not 299.999999ms.
	d := time.Duration(math.Round(sec * float64(time.Second)))
	if d < time.Millisecond {
		return 0, p.errf(where, "%s seconds is less than the 0.001 allowed", shown(raw))
	}
	return d, nil
}

// compileMatcher compiles a matcher against whole names: "Bash" must not
// match "BashOutput". "" and "*" (Claude Code's "every tool") give nil.
func compileMatcher(m string) (*regexp.Regexp, error) {
	if m == "" || m == "*" {
		return nil, nil
	}
	// Alone first: "a)|(b" is unbalanced, but inside ^(?:...)$ it would
	// compile and silently lose its anchors.
	if _, err := regexp.Compile(m); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return regexp.Compile(`^(?:` + m + `)$`)
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

// shown is a value for an error message: short ones as written, long ones
// clipped, on one line.
func shown(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return text.JSONKind(raw)
	}
	return text.Clip(buf.String(), 60)
}

// syntaxError words a decode error as "NAME:LINE:COL: reason".
func syntaxError(name string, data []byte, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		// Offset counts the offending byte: point at it.
		line, col := lineCol(data, syn.Offset-1)
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, int64(len(data)))
		return fmt.Errorf("%s:%d:%d: unexpected end of JSON", name, line, col)
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "json: "))
}

// lineCol converts a byte offset into 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
