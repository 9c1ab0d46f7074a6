package hooks

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/internal/wspath"
	"github.com/tactcli/tact/tools"
)

// Aliases are the names a matcher is tried against for tool: tact's own
// first, then Claude Code's (Bash for run_command ...); an MCP tool
// SERVER.TOOL is also mcp__SERVER__TOOL, as Claude Code names it.
func Aliases(tool string) []string {
	out := []string{tool}
	// Claude Code's names for the built-in tools, as each declares them.
	if d, ok := tools.BuiltinDecl(tool); ok {
		out = append(out, d.HookNames...)
	}
	// Server names hold no ".", so the first one ends the server's name.
	if server, name, ok := strings.Cut(tool, "."); ok && server != "" && name != "" {
		out = append(out, "mcp__"+server+"__"+name)
	}
	return out
}

// withAliases is a call's arguments as a hook's tool_input. For the
// built-in tools' path arguments (tools.Decl.Paths) "path" is the path the
// tool will reach: cleaned and with the workspace's symlinks resolved,
// workspace-relative (absolute when it leads out), so a guard sees the file
// that is written, not the spelling (docs/out/x where docs/out -> ../src
// is src/x); the argument as the call gave it is kept as lexical_path (for
// another path argument ARG, lexical_ARG). file_path (Decl.FilePath: read,
// write, edit) is the first path made absolute, and a command tool gets
// cwd, the resolved directory it runs in, as Claude Code's hooks read them. These fields
// replace any the arguments have (the tools accept no such argument, so
// only a model trying to mislead a hook would send one). cwd is the
// workspace. Other tools' arguments, and args that are not a JSON object,
// come back unchanged.
func withAliases(tool string, args json.RawMessage, cwd string) json.RawMessage {
	t := bytes.TrimSpace(args)
	d, _ := tools.BuiltinDecl(tool)
	if len(t) == 0 || t[0] != '{' || (len(d.Paths) == 0 && d.Command == "") {
		return args
	}
	keys, vals, ok := objectFields(t)
	if !ok {
		return args
	}
	str := func(key string) (string, bool) {
		var s string
		found := false
		for i, k := range keys { // the last one counts, as for the tools
			if k == key && json.Unmarshal(vals[i], &s) == nil {
				found = true
			} else if k == key {
				found = false
			}
		}
		return s, found
	}
	type field struct {
		key string
		val string
	}
	var set []field
	for i, arg := range d.Paths {
		if p, ok := str(arg); ok && p != "" {
			rel, abs := resolved(cwd, p)
			set = append(set, field{arg, rel})
			if i == 0 && d.FilePath {
				set = append(set, field{"file_path", abs})
			}
			set = append(set, field{"lexical_" + arg, p})
		}
	}
	if d.Command != "" && cwd != "" {
		dir := cwd
		if wd, ok := str(d.WorkDir); d.WorkDir != "" && ok && wd != "" {
			_, dir = resolved(cwd, wd)
		}
		set = append(set, field{"cwd", dir})
	}
	if len(set) == 0 {
		return args
	}
	replaced := map[string]string{}
	for _, f := range set {
		replaced[f.key] = f.val
	}
	var out bytes.Buffer
	out.WriteByte('{')
	write := func(k string, v []byte) {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		kb, _ := text.JSON(k)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(v)
	}
	done := map[string]bool{}
	for i, k := range keys {
		v, ok := replaced[k]
		switch {
		case !ok:
			write(k, vals[i])
		case !done[k]:
			// In its place, once: tact's fields keep their order.
			vb, _ := text.JSON(v)
			write(k, vb)
			done[k] = true
		}
	}
	for _, f := range set {
		if !done[f.key] {
			vb, _ := text.JSON(f.val)
			write(f.key, vb)
		}
	}
	out.WriteByte('}')
	return out.Bytes()
}

// objectFields are a JSON object's keys and raw values, in order
// (duplicates kept); ok is false for anything else.
func objectFields(obj []byte) (keys []string, vals []json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k, isKey := tok.(string)
		var v json.RawMessage
		if !isKey || dec.Decode(&v) != nil {
			return nil, nil, false
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, false
	}
	return keys, vals, true
}

// resolved is p as the tools reach it from the workspace cwd: rel is
// workspace-relative (absolute outside it), abs absolute. With no
// workspace it is only cleaned.
func resolved(cwd, p string) (rel, abs string) {
	if cwd == "" {
		p = filepath.Clean(p)
		return filepath.ToSlash(p), p
	}
	r, inside := wspath.Rel(cwd, p)
	if !inside {
		return r, filepath.FromSlash(r)
	}
	return r, filepath.Join(cwd, filepath.FromSlash(r))
}
