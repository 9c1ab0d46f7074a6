package testsuite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/jqx"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/schema"
)

// Suite is the cases of a suite directory or case file, in file order.
type Suite struct {
	Path  string // as Load was given it
	Cases []*Case
}

// Caps on what Load reads whole: a case file holds cases, not data (the
// fixtures are directories), and a schema is a few KiB.
const (
	maxCaseFile   = 16 << 20
	maxSchemaFile = 1 << 20
	// maxCheckPath is PATH_MAX: a longer file check path names no file.
	maxCheckPath = 4096
)

// Load reads the suite at path: a directory, whose *.jsonl files directly
// in it are its case files (sorted by name; subfolders hold fixtures,
// cassettes, schemas), or one case file. The error is for a suite that
// cannot run at all (no such path, an unreadable case file, no case);
// a case that is broken is kept with its Err set, so the others run.
func Load(path string) (*Suite, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", path, unwrapPath(err))
	}
	files := []string{path}
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("suite %s: %w", path, unwrapPath(err))
		}
		files = files[:0]
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".jsonl") && !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("suite %s: no case file (*.jsonl) in the directory", path)
		}
	}
	s := &Suite{Path: path}
	for _, f := range files {
		data, err := filekind.ReadFile(filekind.Spec{What: "case file", Max: maxCaseFile}, f)
		if err != nil {
			return nil, fmt.Errorf("suite %s: %w", path, err)
		}
		s.Cases = append(s.Cases, ParseCases(f, data)...)
	}
	if len(s.Cases) == 0 {
		return nil, fmt.Errorf("suite %s: no cases (one JSON object a line)", path)
	}
	markDuplicates(s.Cases)
	return s, nil
}

// unwrapPath drops *fs.PathError's repetition of the path the message
// already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseCases parses the case file named file (its bytes data): one case a
// line; blank lines and lines starting with # are skipped. Every case line
// gives a Case, a broken one with Err set. Paths in the cases resolve
// against file's directory; fixtures, plans and schemas are looked at on
// disk.
func ParseCases(file string, data []byte) []*Case {
	dir := filepath.Dir(file)
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // an editor's byte order mark is no case
	var out []*Case
	for i, line := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		c := parseCase(t, dir)
		c.File, c.Line = file, i+1
		if c.Err != nil {
			c.Err = fmt.Errorf("%s: %w", c.Where(), c.Err)
			if !validName.MatchString(c.Name) {
				c.Name = c.Where() // a name a report can show
			}
		}
		out = append(out, c)
	}
	return out
}

// markDuplicates sets Err on every case whose name an earlier case has.
func markDuplicates(cases []*Case) {
	first := map[string]*Case{}
	for _, c := range cases {
		if c.Err != nil && c.Name == c.Where() {
			continue // no name of its own
		}
		if f, ok := first[c.Name]; ok {
			if c.Err == nil {
				c.Err = fmt.Errorf("%s: name: %q is also the name of the case at %s", c.Where(), c.Name, f.Where())
			}
			continue
		}
		first[c.Name] = c
	}
}

// caseLine is a case line as written.
type caseLine struct {
	Name         string                     `json:"name"`
	Description  string                     `json:"description"`
	Skip         string                     `json:"skip"`
	Query        string                     `json:"query"`
	Plan         string                     `json:"plan"`
	Params       map[string]json.RawMessage `json:"params"`
	Fixture      string                     `json:"fixture"`
	Cassette     string                     `json:"cassette"`
	Flags        Flags                      `json:"flags"`
	Assert       []Assertion                `json:"assert"`
	AnswerSchema json.RawMessage            `json:"answer_schema"`
	Files        []FileCheck                `json:"files"`
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// parseCase parses one line; the returned case's Err says the first
// problem, with its field path, without FILE:LINE.
func parseCase(line []byte, dir string) *Case {
	c := &Case{}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		c.Err = fmt.Errorf("not JSON: %v", err)
		return c
	}
	var l caseLine
	if err := decode(line, "", &l); err != nil {
		// The name, when it reads, names the broken case in reports.
		var n struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(line, &n) == nil && validName.MatchString(n.Name) {
			c.Name = n.Name
		}
		c.Err = err
		return c
	}
	c.Name = l.Name
	c.Err = fill(c, &l, dir)
	return c
}

// fill checks l and moves it into c.
func fill(c *Case, l *caseLine, dir string) error {
	switch {
	case l.Name == "":
		return errors.New("name: missing (a name is required: lowercase letters, digits, . _ -)")
	case !validName.MatchString(l.Name):
		return fmt.Errorf("name: %q: want 1 to 100 of a-z, 0-9, . _ - (starting with a letter or digit)", l.Name)
	case l.Query == "" && l.Plan == "":
		return errors.New("query: missing (a case gives a query, or a saved plan in plan)")
	case l.Params != nil && l.Plan == "":
		return errors.New("params: given without a plan (params are a saved plan's parameters)")
	}
	c.Description, c.Skip, c.Query, c.Params = l.Description, l.Skip, l.Query, l.Params
	var err error
	if l.Plan != "" {
		if c.Plan, err = regularFile(dir, l.Plan, "plan"); err != nil {
			return err
		}
	}
	if l.Fixture != "" {
		c.Fixture = resolve(dir, l.Fixture)
		st, err := os.Stat(c.Fixture)
		switch {
		case err != nil:
			return fmt.Errorf("fixture: %s: %v", l.Fixture, unwrapPath(err))
		case !st.IsDir():
			return fmt.Errorf("fixture: %s: not a directory", l.Fixture)
		}
	}
	if l.Cassette != "" {
		c.Cassette = resolve(dir, l.Cassette)
	}
	if c.Flags, err = checkFlags(l.Flags, dir); err != nil {
		return err
	}
	for i, a := range l.Assert {
		at := fmt.Sprintf("assert[%d].jq", i)
		if strings.TrimSpace(a.JQ) == "" {
			return errors.New(at + ": missing (an assertion is a jq expression that must yield true)")
		}
		if err := jqx.Check(a.JQ); err != nil {
			return fmt.Errorf("%s: does not compile: %v", at, err)
		}
	}
	c.Asserts = l.Assert
	if l.AnswerSchema != nil {
		if c.AnswerSchema, err = readSchema(dir, l.AnswerSchema, "answer_schema"); err != nil {
			return err
		}
	}
	for i, f := range l.Files {
		if err := checkFile(f, i, c.Fixture); err != nil {
			return err
		}
	}
	c.Files = l.Files
	return nil
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// regularFile resolves p and checks it is a regular file.
func regularFile(dir, p, at string) (string, error) {
	abs := resolve(dir, p)
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %s: %v", at, p, unwrapPath(err))
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("%s: %s: not a regular file", at, p)
	}
	return abs, nil
}

// readSchema reads a schema given inline (an object, true or false) or as
// a file's path (a string), compiled and compact.
func readSchema(dir string, raw json.RawMessage, at string) (json.RawMessage, error) {
	src := []byte(raw)
	if text.JSONKind(raw) == "string" {
		var p string
		_ = json.Unmarshal(raw, &p) // kind says it is a string
		if p == "" {
			return nil, errors.New(at + ": empty (an inline schema, or a schema file's path)")
		}
		var err error
		src, err = filekind.ReadFile(filekind.Spec{What: "schema file", Max: maxSchemaFile}, resolve(dir, p))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", at, p, unwrapFilekind(err))
		}
		at += ": " + p
	}
	s, err := schema.CompileAnswer(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", at, err)
	}
	return s, nil
}

// unwrapFilekind keeps filekind's reason without its repetition of the
// path.
func unwrapFilekind(err error) error {
	var fe *filekind.Error
	if errors.As(err, &fe) {
		if why := fe.Why(); why != "" {
			return errors.New(why)
		}
		return unwrapPath(fe.Err)
	}
	return err
}

// checkFile checks files[i]: a path inside the workspace, one kind, and
// for unchanged a file the fixture has.
func checkFile(f FileCheck, i int, fixture string) error {
	at := fmt.Sprintf("files[%d]", i)
	n := 0
	for _, b := range []bool{f.Exists, f.Absent, f.Contains != nil, f.Unchanged} {
		if b {
			n++
		}
	}
	switch {
	case f.Path == "":
		return errors.New(at + ".path: missing")
	case len(f.Path) > maxCheckPath:
		return fmt.Errorf("%s.path: %d bytes: want at most %d", at, len(f.Path), maxCheckPath)
	case strings.ContainsRune(f.Path, 0):
		return fmt.Errorf("%s.path: %q: holds a NUL byte, which no file name has", at, f.Path)
	case !filepath.IsLocal(f.Path) || filepath.Clean(f.Path) == ".":
		return fmt.Errorf("%s.path: %q: want a relative path inside the workspace", at, f.Path)
	case n == 0:
		return errors.New(at + ": give one of exists, absent, contains or unchanged (true)")
	case n > 1:
		return errors.New(at + ": give only one of exists, absent, contains or unchanged")
	}
	if f.Unchanged {
		if fixture == "" {
			return errors.New(at + ".unchanged: the case has no fixture to compare with")
		}
		st, err := os.Lstat(filepath.Join(fixture, f.Path))
		if err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("%s.unchanged: %s is no regular file in the fixture", at, f.Path)
		}
	}
	return nil
}

// checkFlags checks the flags and resolves their paths and schema.
func checkFlags(f Flags, dir string) (Flags, error) {
	for _, n := range []struct {
		name string
		v    *int
	}{{"max_iterations", f.MaxIterations}, {"retry_buffer", f.RetryBuffer}, {"replan_threshold", f.ReplanThreshold},
		{"stall_threshold", f.StallThreshold}, {"token_budget", f.TokenBudget}, {"max_tokens", f.MaxTokens}} {
		if n.v != nil && *n.v < 0 {
			return f, fmt.Errorf("flags.%s: %d is negative", n.name, *n.v)
		}
	}
	if f.Seed != nil && (*f.Seed < 0 || *f.Seed > 4294967295) {
		return f, fmt.Errorf("flags.seed: %d: want 0 to 4294967295", *f.Seed)
	}
	if f.Temperature != nil && (*f.Temperature < 0 || *f.Temperature > 10) {
		return f, fmt.Errorf("flags.temperature: %v: want 0 to 10", *f.Temperature)
	}
	switch f.Sandbox {
	case "", "workspace-write", "read-only", "off":
	default:
		return f, fmt.Errorf("flags.sandbox: %q: want workspace-write, read-only or off", f.Sandbox)
	}
	switch f.OnApproval {
	case "", "deny", "pause":
	default:
		return f, fmt.Errorf("flags.on_approval: %q: want deny or pause", f.OnApproval)
	}
	for i, t := range f.AllowTools {
		if strings.TrimSpace(t) == "" || strings.Contains(t, ",") {
			return f, fmt.Errorf("flags.allow_tools[%d]: %q is no tool name", i, t)
		}
	}
	for i, e := range f.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return f, fmt.Errorf("flags.env[%d]: %q: want KEY=VALUE", i, e)
		}
	}
	if f.StopWhen != "" {
		if err := jqx.Check(f.StopWhen, "$state"); err != nil {
			return f, fmt.Errorf("flags.stop_when: does not compile: %v", err)
		}
	}
	var err error
	if f.Schema != nil {
		if f.Schema, err = readSchema(dir, f.Schema, "flags.schema"); err != nil {
			return f, err
		}
	}
	if f.Policy != "" {
		if f.Policy, err = regularFile(dir, f.Policy, "flags.policy"); err != nil {
			return f, err
		}
	}
	if f.Hooks != "" {
		if f.Hooks, err = regularFile(dir, f.Hooks, "flags.hooks"); err != nil {
			return f, err
		}
	}
	files := make([]string, len(f.Files))
	for i, p := range f.Files {
		if files[i], err = regularFile(dir, p, fmt.Sprintf("flags.files[%d]", i)); err != nil {
			return f, err
		}
	}
	if f.Files != nil {
		f.Files = files
	}
	return f, nil
}
