package hooks

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	for _, tt := range []struct {
		name string
		file string
		want map[Event][]Hook // Event, Matcher, Command, Timeout compared
	}{
		{"empty object", `{}`, nil},
		{"no events", `{"hooks": {}}`, nil},
		{"empty group list", `{"hooks": {"Stop": []}}`, nil},
		{"all events", `{"hooks": {
			"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a", "timeout": 5}]}],
			"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "b"}, {"type": "command", "command": "c", "timeout": 0.5}]}],
			"Stop": [{"hooks": [{"type": "command", "command": "d"}]}],
			"RunStart": [{"matcher": "(ignored", "hooks": [{"type": "command", "command": "e", "timeout": 3600}]}]
		}}`, map[Event][]Hook{
			PreToolUse:  {{Event: PreToolUse, Matcher: "Bash", Command: "a", Timeout: 5 * time.Second}},
			PostToolUse: {{Event: PostToolUse, Matcher: "Edit|Write", Command: "b", Timeout: DefaultTimeout}, {Event: PostToolUse, Matcher: "Edit|Write", Command: "c", Timeout: 500 * time.Millisecond}},
			Stop:        {{Event: Stop, Command: "d", Timeout: DefaultTimeout}},
			RunStart:    {{Event: RunStart, Matcher: "(ignored", Command: "e", Timeout: time.Hour}},
		}},
		{"groups in file order", `{"hooks": {"PreToolUse": [
			{"matcher": "*", "hooks": [{"type": "command", "command": "1"}]},
			{"matcher": "", "hooks": [{"type": "command", "command": "2"}, {"type": "command", "command": "3"}]}
		]}}`, map[Event][]Hook{
			PreToolUse: {
				{Event: PreToolUse, Matcher: "*", Command: "1", Timeout: DefaultTimeout},
				{Event: PreToolUse, Matcher: "", Command: "2", Timeout: DefaultTimeout},
				{Event: PreToolUse, Matcher: "", Command: "3", Timeout: DefaultTimeout},
			},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("hooks.json", []byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if c.Empty() != (len(tt.want) == 0) {
				t.Errorf("Empty() = %v", c.Empty())
			}
			for _, ev := range Events {
				got := c.hooks[ev]
				if len(got) != len(tt.want[ev]) {
					t.Fatalf("%s: %d hooks, want %d", ev, len(got), len(tt.want[ev]))
				}
				if c.Has(ev) != (len(got) > 0) {
					t.Errorf("Has(%s) = %v", ev, c.Has(ev))
				}
				for i, h := range got {
					w := tt.want[ev][i]
					if h.Event != w.Event || h.Matcher != w.Matcher || h.Command != w.Command || h.Timeout != w.Timeout {
						t.Errorf("%s[%d] = %+v, want %+v", ev, i, h, w)
					}
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	hook := func(fields string) string {
		return `{"hooks": {"PreToolUse": [{"matcher": "x", "hooks": [{"type": "command", "command": "ok"}, {` + fields + `}]}]}}`
	}
	for _, tt := range []struct {
		name, file, want string
	}{
		{"empty", ``, `hooks.json: empty file`},
		{"syntax", "{\n  \"hooks\": {,}\n}", `hooks.json:2:13: invalid character ','`},
		{"truncated", `{"hooks": {`, `hooks.json:1:12: unexpected end of JSON`},
		{"trailing data", `{"hooks": {}} {}`, `hooks.json:1:15: unexpected data after the hooks object`},
		{"not an object", `[]`, `hooks.json: want an object, got []`},
		{"unknown top field", `{"hooks": {}, "permissions": {}}`, `hooks.json: permissions: unknown field (known: hooks)`},
		{"hooks null", `{"hooks": null}`, `hooks.json: hooks: want an object, got null`},
		{"unknown event", `{"hooks": {"PreTool": []}}`, `hooks.json: hooks.PreTool: unknown event (known: PreToolUse, PostToolUse, Stop, RunStart)`},
		{"event not array", `{"hooks": {"Stop": {}}}`, `hooks.json: hooks.Stop: want an array, got {}`},
		{"duplicate event", `{"hooks": {"Stop": [], "Stop": []}}`, `hooks.json: hooks.Stop: duplicate field`},
		{"group not object", `{"hooks": {"Stop": ["x"]}}`, `hooks.json: hooks.Stop[0]: want an object, got "x"`},
		{"group unknown field", `{"hooks": {"Stop": [{"hooks": [], "when": 1}]}}`, `hooks.json: hooks.Stop[0].when: unknown field (known: matcher, hooks)`},
		{"group without hooks", `{"hooks": {"Stop": [{"matcher": ""}]}}`, `hooks.json: hooks.Stop[0].hooks: missing`},
		{"matcher type", `{"hooks": {"PostToolUse": [{"matcher": 1, "hooks": []}]}}`, `hooks.json: hooks.PostToolUse[0].matcher: want a string, got 1`},
		{"bad regexp", `{"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}}`, "hooks.json: hooks.PreToolUse[0].matcher: bad regexp: missing closing ): `Bash(`"},
		{"regexp escaping anchors", `{"hooks": {"PreToolUse": [{"matcher": "a)|(b", "hooks": []}]}}`, "hooks.json: hooks.PreToolUse[0].matcher: bad regexp: unexpected ): `a)|(b`"},
		{"hook not object", `{"hooks": {"Stop": [{"hooks": [3]}]}}`, `hooks.json: hooks.Stop[0].hooks[0]: want an object, got 3`},
		{"group hooks not array", `{"hooks": {"Stop": [{"hooks": "true"}]}}`, `hooks.json: hooks.Stop[0].hooks: want an array, got "true"`},
		{"hook unknown field", hook(`"type": "command", "command": "c", "async": true`), `hooks.json: hooks.PreToolUse[0].hooks[1].async: unknown field (known: type, command, timeout)`},
		{"type missing", hook(`"command": "c"`), `hooks.json: hooks.PreToolUse[0].hooks[1].type: missing (want "command")`},
		{"type wrong", hook(`"type": "prompt", "command": "c"`), `hooks.json: hooks.PreToolUse[0].hooks[1].type: want "command", got "prompt"`},
		{"command missing", hook(`"type": "command"`), `hooks.json: hooks.PreToolUse[0].hooks[1].command: missing`},
		{"command empty", hook(`"type": "command", "command": "  "`), `hooks.json: hooks.PreToolUse[0].hooks[1].command: empty command`},
		{"command type", hook(`"type": "command", "command": ["ls"]`), `hooks.json: hooks.PreToolUse[0].hooks[1].command: want a string, got ["ls"]`},
		{"timeout string", hook(`"type": "command", "command": "c", "timeout": "x"`), `hooks.json: hooks.PreToolUse[0].hooks[1].timeout: want a positive number of seconds, got "x"`},
		{"timeout zero", hook(`"type": "command", "command": "c", "timeout": 0`), `hooks.json: hooks.PreToolUse[0].hooks[1].timeout: want a positive number of seconds, got 0`},
		{"timeout negative", hook(`"type": "command", "command": "c", "timeout": -1`), `hooks.json: hooks.PreToolUse[0].hooks[1].timeout: want a positive number of seconds, got -1`},
		{"timeout null", hook(`"type": "command", "command": "c", "timeout": null`), `hooks.json: hooks.PreToolUse[0].hooks[1].timeout: want a positive number of seconds, got null`},
		{"timeout huge", hook(`"type": "command", "command": "c", "timeout": 60000`), `hooks.json: hooks.PreToolUse[0].hooks[1].timeout: 60000 seconds is more than the 3600 allowed`},
		{"timeout tiny", hook(`"type": "command", "command": "c", "timeout": 1e-9`), `hooks.json: hooks.PreToolUse[0].hooks[1].timeout: 1e-9 seconds is less than the 0.001 allowed`},
		{"duplicate hook field", hook(`"type": "command", "command": "c", "command": "d"`), `hooks.json: hooks.PreToolUse[0].hooks[1].command: duplicate field`},
		{"too large", `{"hooks": {}}` + strings.Repeat(" ", 1<<20), `hooks.json: larger than the 1 MiB cap`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("hooks.json", []byte(tt.file))
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n %s\nwant it to start with\n %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error has several lines: %q", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "missing.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	path := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(path, []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != path || !c.Has(Stop) || c.Has(PreToolUse) {
		t.Errorf("Load = %+v", c)
	}
	if err := os.WriteFile(path, []byte(`{"hooks": {"Stop": 1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+": hooks.Stop: ") {
		t.Errorf("bad file: %v, want an error naming %s and the field", err, path)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

func TestNilConfig(t *testing.T) {
	var c *Config
	if !c.Empty() || c.Has(PreToolUse) || c.Hooks(PreToolUse, "run_command") != nil {
		t.Error("a nil Config has hooks")
	}
	var r *Runner
	if r.Has(Stop) {
		t.Error("a nil Runner has hooks")
	}
	if out := NewRunner(nil, Options{}).Run(t.Context(), Input{HookEventName: PreToolUse, ToolName: "run_command"}); out.Decision != DecisionAllow || len(out.Runs) != 0 {
		t.Errorf("Runner of a nil Config: %+v", out)
	}
}

func TestMatching(t *testing.T) {
	file := `{"hooks": {
		"PreToolUse": [
			{"matcher": "Bash", "hooks": [{"type": "command", "command": "bash"}]},
			{"matcher": "", "hooks": [{"type": "command", "command": "empty"}]},
			{"matcher": "*", "hooks": [{"type": "command", "command": "star"}]},
			{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "edit-write"}]},
			{"matcher": "Glob", "hooks": [{"type": "command", "command": "glob"}]},
			{"matcher": "LS", "hooks": [{"type": "command", "command": "ls"}]},
			{"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "any-mcp"}]},
			{"matcher": "mcp__srv__tool", "hooks": [{"type": "command", "command": "mcp-name"}]},
			{"matcher": "srv\\.tool", "hooks": [{"type": "command", "command": "dotted"}]},
			{"matcher": "srv\\..*", "hooks": [{"type": "command", "command": "server"}]},
			{"matcher": "run_command", "hooks": [{"type": "command", "command": "tact-name"}]},
			{"matcher": "Read", "hooks": [{"type": "command", "command": "read"}]}
		],
		"Stop": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "stop"}]}]
	}}`
	c, err := Parse("hooks.json", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ev   Event
		tool string
		want string
	}{
		{PreToolUse, "run_command", "bash empty star tact-name"},
		{PreToolUse, "BashOutput", "empty star"},
		{PreToolUse, "xBash", "empty star"},
		{PreToolUse, "write_file", "empty star edit-write"},
		{PreToolUse, "edit_file", "empty star edit-write"},
		{PreToolUse, "list_files", "empty star glob ls"},
		{PreToolUse, "read_file", "empty star read"},
		{PreToolUse, "srv.tool", "empty star any-mcp mcp-name dotted server"},
		{PreToolUse, "srv.other", "empty star any-mcp server"},
		{PreToolUse, "srvXtool", "empty star"},
		{PostToolUse, "run_command", ""},
		{Stop, "", "stop"},
	} {
		var got []string
		for _, h := range c.Hooks(tt.ev, tt.tool) {
			got = append(got, h.Command)
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("Hooks(%s, %q) = %q, want %q", tt.ev, tt.tool, g, tt.want)
		}
	}
}
