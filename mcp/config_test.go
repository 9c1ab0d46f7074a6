package mcp

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/tools"
)

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestParseConfig(t *testing.T) {
	data := []byte(`{"mcpServers": {
		"fs": {"command": "npx", "args": ["-y", "server-fs", "${HOME}/notes"], "env": {"API_TOKEN": "${GH_TOKEN}", "MODE": "fast"},
		       "cwd": "/tmp", "timeout": 90, "disabled_tools": ["rm"], "classes": {"write_file": "write", "read": "read"}},
		"gh": {"type": "http", "url": "https://example.com/mcp?k=${URLKEY}", "headers": {"Authorization": "Bearer ${GH_TOKEN}", "Accept": "x/y"},
		       "timeout": "2m", "startup_timeout": 5},
		"off": {"command": "x", "disabled": true}}}`)
	cfg, err := Parse(data, "mcp.json", lookupFrom(map[string]string{"HOME": "/home/u", "GH_TOKEN": "ghp_secretvalue", "URLKEY": "urlkey-value"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{cfg.Servers[0].Name, cfg.Servers[1].Name, cfg.Servers[2].Name}; !slices.Equal(got, []string{"fs", "gh", "off"}) {
		t.Fatalf("servers %v", got)
	}
	fs, gh, off := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2]
	want := &ServerConfig{Name: "fs", Command: "npx", Args: []string{"-y", "server-fs", "/home/u/notes"},
		Env: []string{"API_TOKEN=ghp_secretvalue", "MODE=fast"}, Cwd: "/tmp", Timeout: 90 * time.Second, StartTimeout: DefaultStartTimeout,
		DisabledTools: map[string]bool{"rm": true}, Classes: map[string]tools.Class{"write_file": tools.ClassWrite, "read": tools.ClassRead},
		secrets: []string{"ghp_secretvalue", "ghp_secretvalue"}}
	if !reflect.DeepEqual(fs, want) {
		t.Errorf("fs =\n%+v\nwant\n%+v", fs, want)
	}
	if gh.Transport() != "http" || gh.URL != "https://example.com/mcp?k=urlkey-value" || gh.Headers["Authorization"] != "Bearer ghp_secretvalue" ||
		gh.Headers["Accept"] != "x/y" || gh.Timeout != 2*time.Minute || gh.StartTimeout != 5*time.Second {
		t.Errorf("gh = %+v", gh)
	}
	if !off.Disabled || fs.Transport() != "stdio" {
		t.Errorf("off = %+v", off)
	}
	secrets := cfg.Secrets()
	for _, s := range []string{"ghp_secretvalue", "Bearer ghp_secretvalue", "urlkey-value"} {
		if !slices.Contains(secrets, s) {
			t.Errorf("secrets %q lack %q", secrets, s)
		}
	}
	if slices.Contains(secrets, "x/y") || slices.Contains(secrets, "fast") || slices.Contains(secrets, "/home/u") {
		t.Errorf("secrets %q hold a plain value", secrets)
	}
	// The run's redactor learns them through SecretEnviron.
	red, err := redact.NewRedactor(cfg.SecretEnviron(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := red.Redact("auth: Bearer ghp_secretvalue"); got != "auth: [REDACTED]" {
		t.Errorf("redacted: %q", got)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, `mcp.json: mcpServers.a: both "command" and "url" are set`},
		{`{"mcpServers": {"a": {}}}`, `mcp.json: mcpServers.a: neither "command" nor "url" is set`},
		{`{"mcpServers": {"a": {"command": "x", "bogus": 1}}}`, `mcp.json: mcpServers.a: unknown field "bogus"`},
		{`{"mcpServers": {}, "other": 1}`, `mcp.json: unknown field "other"`},
		{`{"servers": {}}`, `mcp.json: unknown field "servers"`},
		{`{}`, `mcp.json: no "mcpServers" object`},
		{`{"mcpServers": {"a.b": {"command": "x"}}}`, `mcp.json: mcpServers: server name "a.b": use letters`},
		{`{"mcpServers": {"": {"command": "x"}}}`, `server name ""`},
		{`{"mcpServers": {"a": {"command": "x", "classes": {"t": "rw"}}}}`, `mcp.json: mcpServers.a.classes.t: "rw": want "read", "write" or "exec"`},
		{`{"mcpServers": {"a": {"command": "x", "classes": {"bad name": "read"}}}}`, `mcpServers.a.classes: "bad name" is not a tool name`},
		{`{"mcpServers": {"a": {"command": "x", "disabled_tools": ["a b"]}}}`, `mcpServers.a.disabled_tools[0]: "a b" is not a tool name`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": 0}}}`, `mcpServers.a.timeout: 0: must be above 0`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, `mcpServers.a.timeout: "soon": not a duration`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": -3}}}`, `mcpServers.a.timeout: -3: want seconds`},
		{`{"mcpServers": {"a": {"command": "x", "startup_timeout": true}}}`, `mcpServers.a.startup_timeout: true: want seconds or a duration string`},
		{`{"mcpServers": {"a": {"url": "http://h", "type": "sse"}}}`, `mcpServers.a.type: "sse" (the 2024 HTTP+SSE transport) is not supported`},
		{`{"mcpServers": {"a": {"url": "http://h", "type": "stdio"}}}`, `mcpServers.a.type: "stdio" needs "command"`},
		{`{"mcpServers": {"a": {"command": "x", "type": "ws"}}}`, `mcpServers.a.type: "ws": want "stdio" or "http"`},
		{`{"mcpServers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, `mcpServers.a.headers: only for a "url" server`},
		{`{"mcpServers": {"a": {"url": "http://h", "env": {"A": "b"}}}}`, `mcpServers.a: "args", "env" and "cwd" are only for a "command" server`},
		{`{"mcpServers": {"a": {"url": "ftp://h"}}}`, `mcpServers.a.url: "ftp://h": want an http:// or https:// URL`},
		{`{"mcpServers": {"a": {"url": "http://h", "headers": {"Bad Name": "x"}}}}`, `mcpServers.a.headers: "Bad Name" is not a header name`},
		{`{"mcpServers": {"a": {"url": "http://h", "headers": {"X": "${TOKEN"}}}}`, `mcpServers.a.headers.X: "${TOKEN": unclosed "${"`},
		{`{"mcpServers": {"a": {"command": "x", "env": {"1A": "b"}}}}`, `mcpServers.a.env: "1A" is not a variable name`},
		{`{"mcpServers": {"a": {"command": "x", "env": {"A": "${B-C}"}}}}`, `mcpServers.a.env.A: "${B-C}": ${B-C}: not a variable name`},
		{`{"mcpServers": {"a": {"command": ""}}}`, `mcpServers.a.command: empty`},
		{`{"mcpServers": {"a": {"command": 3}}}`, `mcpServers.a.command: expected a string, got number`},
		{`{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, `mcpServers.a.args: expected an array, got string`},
		{"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",}}}", `mcp.json:2:25: invalid character '}'`},
		{`{"mcpServers": {"a": {"command": "x"}}} {}`, `mcp.json: unexpected data after the JSON object`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in), "mcp.json", lookupFrom(nil))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n  err  %v\n  want %q", tt.in, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", tt.in, err)
		}
	}
}

// An unset variable does not fail the file: the server that needs it fails
// to start (one warning naming the variable) and the run goes on; a
// default (${VAR:-x}) is used when it is unset or empty.
func TestExpandUnsetVariable(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {
		"a": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${NOPE}"}},
		"b": {"command": "x", "args": ["${EMPTY:-dflt}", "${UNSET:-other}", "$HOME", "a$"]}}}`), "m.json", lookupFrom(map[string]string{"EMPTY": ""}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Servers[0].expandErr; err == nil || err.Error() != "environment variable NOPE is not set" {
		t.Errorf("a: %v", err)
	}
	if b := cfg.Servers[1]; b.expandErr != nil || !slices.Equal(b.Args, []string{"dflt", "other", "$HOME", "a$"}) {
		t.Errorf("b: %+v", b)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.json")
	if cfg, err := Load(missing, false, lookupFrom(nil)); err != nil || len(cfg.Servers) != 0 {
		t.Errorf("missing default file: %v %v", cfg, err)
	}
	if _, err := Load(missing, true, lookupFrom(nil)); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing named file: %v", err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := Load(empty, true, lookupFrom(nil)); err != nil || len(cfg.Servers) != 0 {
		t.Errorf("empty file: %v %v", cfg, err)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["${A}"], "env": {"K": "${B:-c}"}, "classes": {"t": "read"}}}}`))
	f.Add([]byte(`{"mcpServers": {"h": {"url": "http://h/${A}", "headers": {"Authorization": "Bearer ${T}"}, "timeout": "5s"}}}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "timeout": 1e400}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "f.json", lookupFrom(map[string]string{"A": "a", "T": "tok-secret"}))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		for _, s := range cfg.Servers {
			if !ValidServerName(s.Name) || (s.Command == "") == (s.URL == "") && s.expandErr == nil {
				t.Fatalf("accepted a bad server: %+v", s)
			}
			if s.Timeout <= 0 || s.StartTimeout <= 0 {
				t.Fatalf("timeouts %v %v", s.Timeout, s.StartTimeout)
			}
			for _, v := range s.Headers {
				if strings.ContainsAny(v, "\r\n") {
					t.Fatalf("header value with a line break: %q", v)
				}
			}
		}
	})
}
