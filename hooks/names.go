package hooks

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/internal/text"
)

// claudeNames are Claude Code's names for tact's built-in tools, so a
// matcher written for Claude Code ("Bash", "Edit|Write") matches here too.
var claudeNames = map[string][]string{
	"run_command":  {"Bash"},
	"read_file":    {"Read"},
	"write_file":   {"Write"},
	"edit_file":    {"Edit"},
	"search_files": {"Grep"},
	"list_files":   {"LS", "Glob"},
}

// Aliases are the names a matcher is tried against for tool: tact's own
// first, then Claude Code's (Bash for run_command ...); an MCP tool
// SERVER.TOOL is also mcp__SERVER__TOOL, as Claude Code names it.
func Aliases(tool string) []string {
	out := []string{tool}
	out = append(out, claudeNames[tool]...)
	// Server names hold no ".", so the first one ends the server's name.
	if server, name, ok := strings.Cut(tool, "."); ok && server != "" && name != "" {
		out = append(out, "mcp__"+server+"__"+name)
	}
	return out
}

// withAliases is a call's arguments as a hook's tool_input: the args
// object with the fields Claude Code's hooks read added beside tact's
// (file_path, cwd), never replacing one the args have. cwd is the
// workspace. Args that are not a JSON object come back unchanged.
func withAliases(tool string, args json.RawMessage, cwd string) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || t[0] != '{' {
		return args
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(t, &fields) != nil {
		return args
	}
	str := func(key string) (string, bool) {
		var s string
		if raw, ok := fields[key]; ok && json.Unmarshal(raw, &s) == nil {
			return s, true
		}
		return "", false
	}
	type field struct {
		key string
		val string
	}
	var add []field
	switch tool {
	case "read_file", "write_file", "edit_file":
		if p, ok := str("path"); ok && p != "" {
			add = append(add, field{"file_path", absIn(cwd, p)})
		}
	case "run_command":
		dir := cwd
		if wd, ok := str("working_dir"); ok && wd != "" {
			dir = absIn(cwd, wd)
		}
		if dir != "" {
			add = append(add, field{"cwd", dir})
		}
	}
	var extra bytes.Buffer
	for _, f := range add {
		if _, ok := fields[f.key]; ok {
			continue
		}
		k, _ := text.JSON(f.key)
		v, _ := text.JSON(f.val)
		extra.WriteByte(',')
		extra.Write(k)
		extra.WriteByte(':')
		extra.Write(v)
	}
	if extra.Len() == 0 {
		return args
	}
	// Spliced in before the closing brace, so tact's fields keep their
	// bytes and order.
	body := bytes.TrimSpace(t[1 : len(t)-1])
	out := make([]byte, 0, len(t)+extra.Len()+1)
	out = append(out, '{')
	out = append(out, body...)
	if len(body) == 0 {
		out = append(out, extra.Bytes()[1:]...)
	} else {
		out = append(out, extra.Bytes()...)
	}
	return append(out, '}')
}

// absIn is p made absolute against dir and cleaned.
func absIn(dir, p string) string {
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}
