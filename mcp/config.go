// Package mcp makes tact a Model Context Protocol client: it reads the MCP
// servers file, starts one session per server for a run (stdio servers as
// child processes in their own process group, streamable HTTP servers by
// URL), and offers each server tool as a tools.Tool named SERVER.TOOL, so
// the registry, approval, policy, --read-only and --dry-run apply to it as
// to a built-in tool.
package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/tools"
)

const (
	// DefaultCallTimeout bounds one tool call unless the server sets "timeout".
	DefaultCallTimeout = 60 * time.Second
	// DefaultStartTimeout bounds starting a server (process start or first
	// request, handshake and tool listing) unless it sets "startup_timeout".
	DefaultStartTimeout = 30 * time.Second
	// maxTimeout keeps a typo ("timeout": 60000) from disabling the bound.
	maxTimeout = 24 * time.Hour
	// maxConfigSize: the file is read whole.
	maxConfigSize = 1 << 20
)

// Config is the parsed MCP servers file.
type Config struct {
	Path    string
	Servers []*ServerConfig // sorted by name
}

// ServerConfig is one entry of "mcpServers", with ${VAR} references expanded.
type ServerConfig struct {
	Name string
	// A stdio server: Command with Args, started in Cwd with a minimal
	// environment plus Env (KEY=VALUE pairs, sorted by key).
	Command string
	Args    []string
	Env     []string
	Cwd     string
	// A streamable HTTP server: URL, with Headers sent on every request.
	URL     string
	Headers map[string]string

	Timeout       time.Duration // per tool call
	StartTimeout  time.Duration // connect, handshake and tool listing
	Disabled      bool
	DisabledTools map[string]bool
	Classes       map[string]tools.Class // tool name -> class, overriding annotations

	// expandErr is an environment variable that is not set: the server
	// fails to start with this error (one warning), the run goes on.
	expandErr error
	secrets   []string
}

// Transport is "stdio" or "http".
func (s *ServerConfig) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// Server returns the named server's configuration, or nil.
func (c *Config) Server(name string) *ServerConfig {
	if c == nil {
		return nil
	}
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Secrets are the values the run must redact: every value substituted for a
// ${VAR} in a header, env entry or URL, and whole header and env values
// that carry one or whose name says it is a secret (Authorization,
// *_TOKEN ...).
func (c *Config) Secrets() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.secrets...)
	}
	return out
}

// SecretEnviron is Secrets as KEY=VALUE pairs under a name redact.NewRedactor
// treats as secret, so the run's one Redactor covers them too.
func (c *Config) SecretEnviron() []string {
	var out []string
	for _, v := range c.Secrets() {
		out = append(out, "TACT_MCP_SECRET="+v)
	}
	return out
}

var (
	serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE     = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// ValidServerName reports whether name may name a server: letters, digits,
// "_" and "-" (no "." : tools are named SERVER.TOOL).
func ValidServerName(name string) bool { return serverNameRE.MatchString(name) }

// validToolName reports whether a server's tool name is usable: the MCP
// specification's alphabet (tools.ValidMCPToolName, shared with policy).
func validToolName(name string) bool { return tools.ValidMCPToolName(name) }

// toolNameError says why a tool name in the servers file is not one. The
// fields take exact names: there are no patterns here.
func toolNameError(name string) string {
	why := fmt.Sprintf("use 1 to %d of %s", tools.MaxMCPToolName, tools.ToolNameAlphabet)
	switch {
	case name == "":
		why = "empty; " + why
	case len(name) > tools.MaxMCPToolName:
		why = fmt.Sprintf("longer than %d characters", tools.MaxMCPToolName)
	case strings.Contains(name, "*"):
		why = "these fields take exact tool names, not patterns; " + why
	case tools.BadToolNameChar(name) != "":
		why = tools.BadToolNameChar(name) + " is not allowed; " + why
	}
	return fmt.Sprintf("%q is not a tool name (%s)", name, why)
}

type fileJSON struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
}

type serverJSON struct {
	Type           string            `json:"type"`
	Command        *string           `json:"command"`
	Args           []string          `json:"args"`
	Env            map[string]string `json:"env"`
	Cwd            string            `json:"cwd"`
	URL            *string           `json:"url"`
	Headers        map[string]string `json:"headers"`
	Timeout        json.RawMessage   `json:"timeout"`
	StartupTimeout json.RawMessage   `json:"startup_timeout"`
	Disabled       bool              `json:"disabled"`
	DisabledTools  []string          `json:"disabled_tools"`
	Classes        map[string]string `json:"classes"`
}

// Load reads the MCP servers file at path. A missing file is no servers
// unless explicit (the user named it with --mcp-config or TACT_MCP_CONFIG).
func Load(path string, explicit bool, lookup func(string) (string, bool)) (*Config, error) {
	// A regular file only: a FIFO or device is refused, never waited on.
	data, err := filekind.ReadFile(filekind.Spec{What: "MCP servers file", Max: maxConfigSize, Trusted: true}, path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return &Config{Path: path}, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(data, path, lookup)
}

// Parse parses an MCP servers file strictly: unknown fields, a server with
// both or neither of "command" and "url", bad names, classes and timeouts
// are errors of the form "NAME: mcpServers.SERVER.FIELD: reason" (JSON
// syntax errors "NAME:LINE:COL: reason"). lookup resolves ${VAR}
// references (os.LookupEnv); a variable that is not set does not fail the
// parse but the server's start.
func Parse(data []byte, name string, lookup func(string) (string, bool)) (*Config, error) {
	cfg := &Config{Path: name}
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	var f fileJSON
	if err := decodeStrict(data, &f); err != nil {
		return nil, jsonError(name, data, "", err)
	}
	if f.MCPServers == nil {
		return nil, fmt.Errorf("%s: no \"mcpServers\" object", name)
	}
	names := make([]string, 0, len(f.MCPServers))
	for n := range f.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		where := "mcpServers." + n
		if !ValidServerName(n) {
			return nil, fmt.Errorf("%s: mcpServers: server name %q: use letters, digits, \"_\" and \"-\" (at most 64; no \".\", tools are named SERVER.TOOL)", name, n)
		}
		s, err := parseServer(n, f.MCPServers[n], lookup)
		if err != nil {
			return nil, fmt.Errorf("%s: %s%s", name, where, err)
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	return cfg, nil
}

// parseServer's errors start with ".FIELD: " or ": " (joined to the
// server's path by the caller).
func parseServer(name string, raw json.RawMessage, lookup func(string) (string, bool)) (*ServerConfig, error) {
	var j serverJSON
	if err := decodeStrict(raw, &j); err != nil {
		return nil, jsonError("", raw, name, err)
	}
	s := &ServerConfig{Name: name, Disabled: j.Disabled, Timeout: DefaultCallTimeout, StartTimeout: DefaultStartTimeout}
	hasCmd, hasURL := j.Command != nil, j.URL != nil
	switch {
	case hasCmd && hasURL:
		return nil, errors.New(": both \"command\" and \"url\" are set; a server has one (command: a stdio server, url: a streamable HTTP server)")
	case !hasCmd && !hasURL:
		return nil, errors.New(": neither \"command\" nor \"url\" is set; a server needs one (command: a stdio server, url: a streamable HTTP server)")
	}
	switch j.Type {
	case "":
	case "stdio":
		if !hasCmd {
			return nil, errors.New(".type: \"stdio\" needs \"command\"")
		}
	case "http", "streamable-http", "streamable_http", "streamableHttp":
		if !hasURL {
			return nil, fmt.Errorf(".type: %q needs \"url\"", j.Type)
		}
	case "sse":
		return nil, errors.New(".type: \"sse\" (the 2024 HTTP+SSE transport) is not supported; use the server's streamable HTTP endpoint (\"type\": \"http\")")
	default:
		return nil, fmt.Errorf(".type: %q: want \"stdio\" or \"http\"", j.Type)
	}
	ex := &expander{lookup: lookup}
	if hasCmd {
		if len(j.Headers) > 0 {
			return nil, errors.New(".headers: only for a \"url\" server")
		}
		cmd, err := ex.expand(*j.Command)
		if err != nil {
			return nil, fmt.Errorf(".command: %v", err)
		}
		if strings.TrimSpace(cmd) == "" && ex.missing == "" {
			return nil, errors.New(".command: empty")
		}
		s.Command = cmd
		for i, a := range j.Args {
			v, err := ex.expand(a)
			if err != nil {
				return nil, fmt.Errorf(".args[%d]: %v", i, err)
			}
			s.Args = append(s.Args, v)
		}
		if s.Cwd, err = ex.expand(j.Cwd); err != nil {
			return nil, fmt.Errorf(".cwd: %v", err)
		}
		keys := sortedKeys(j.Env)
		for _, k := range keys {
			if !envNameRE.MatchString(k) {
				return nil, fmt.Errorf(".env: %q is not a variable name", k)
			}
			sec := &expander{lookup: lookup}
			v, err := sec.expand(j.Env[k])
			if err != nil {
				return nil, fmt.Errorf(".env.%s: %v", k, err)
			}
			ex.absorb(sec)
			s.Env = append(s.Env, k+"="+v)
			s.secrets = append(s.secrets, sec.values...)
			if len(sec.values) > 0 || redact.IsSecretEnvName(k) {
				s.secrets = append(s.secrets, v)
			}
		}
	} else {
		if j.Cwd != "" || len(j.Args) > 0 || len(j.Env) > 0 {
			return nil, errors.New(": \"args\", \"env\" and \"cwd\" are only for a \"command\" server")
		}
		// Values put into the URL are secrets too (keys in query strings).
		uex := &expander{lookup: lookup}
		u, err := uex.expand(*j.URL)
		if err != nil {
			return nil, fmt.Errorf(".url: %v", err)
		}
		ex.absorb(uex)
		s.secrets = append(s.secrets, uex.values...)
		if ex.missing == "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf(".url: %q: want an http:// or https:// URL", u)
		}
		s.URL = u
		s.Headers = map[string]string{}
		for _, k := range sortedKeys(j.Headers) {
			if !headerRE.MatchString(k) {
				return nil, fmt.Errorf(".headers: %q is not a header name", k)
			}
			sec := &expander{lookup: lookup}
			v, err := sec.expand(j.Headers[k])
			if err != nil {
				return nil, fmt.Errorf(".headers.%s: %v", k, err)
			}
			if strings.ContainsAny(v, "\r\n") {
				return nil, fmt.Errorf(".headers.%s: the value contains a line break", k)
			}
			ex.absorb(sec)
			s.Headers[k] = v
			s.secrets = append(s.secrets, sec.values...)
			if len(sec.values) > 0 || secretHeader(k) {
				s.secrets = append(s.secrets, v)
				// "Bearer TOKEN": the token alone is a secret too.
				if _, tok, ok := strings.Cut(v, " "); ok {
					s.secrets = append(s.secrets, strings.TrimSpace(tok))
				}
			}
		}
	}
	s.expandErr = ex.err()
	var err error
	if s.Timeout, err = parseTimeout(j.Timeout, DefaultCallTimeout); err != nil {
		return nil, fmt.Errorf(".timeout: %v", err)
	}
	if s.StartTimeout, err = parseTimeout(j.StartupTimeout, DefaultStartTimeout); err != nil {
		return nil, fmt.Errorf(".startup_timeout: %v", err)
	}
	s.DisabledTools = map[string]bool{}
	for i, t := range j.DisabledTools {
		if !validToolName(t) {
			return nil, fmt.Errorf(".disabled_tools[%d]: %s", i, toolNameError(t))
		}
		s.DisabledTools[t] = true
	}
	s.Classes = map[string]tools.Class{}
	for _, t := range sortedKeys(j.Classes) {
		if !validToolName(t) {
			return nil, fmt.Errorf(".classes: %s", toolNameError(t))
		}
		switch c := tools.Class(j.Classes[t]); c {
		case tools.ClassRead, tools.ClassWrite, tools.ClassExec:
			s.Classes[t] = c
		default:
			return nil, fmt.Errorf(".classes.%s: %q: want \"read\", \"write\" or \"exec\"", t, j.Classes[t])
		}
	}
	return s, nil
}

// secretHeader reports whether a header's value is a credential.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	return n == "authorization" || n == "proxy-authorization" || n == "cookie" ||
		strings.Contains(n, "token") || strings.Contains(n, "key") || strings.Contains(n, "secret") ||
		strings.Contains(n, "password") || strings.Contains(n, "auth")
}

// parseTimeout accepts seconds (a number) or a Go duration ("90s", "2m").
func parseTimeout(raw json.RawMessage, def time.Duration) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return def, nil
	}
	var d time.Duration
	var secs float64
	var text string
	switch {
	case json.Unmarshal(raw, &secs) == nil:
		if secs != secs || secs > maxTimeout.Seconds() || secs < 0 {
			return 0, fmt.Errorf("%s: want seconds from above 0 to %d", raw, int(maxTimeout.Seconds()))
		}
		d = time.Duration(secs * float64(time.Second))
	case json.Unmarshal(raw, &text) == nil:
		var err error
		if d, err = time.ParseDuration(text); err != nil {
			return 0, fmt.Errorf("%q: not a duration (want seconds, or a number with a unit: 90s, 5m)", text)
		}
	default:
		return 0, fmt.Errorf("%s: want seconds or a duration string", raw)
	}
	if d <= 0 || d > maxTimeout {
		return 0, fmt.Errorf("%s: must be above 0 and at most 24h", raw)
	}
	return d, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expander substitutes ${VAR} and ${VAR:-default}; a lone "$" stays. It
// records the values it substituted (secrets, for the redactor) and the
// first variable that is not set.
type expander struct {
	lookup  func(string) (string, bool)
	values  []string
	missing string
}

func (e *expander) expand(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: unclosed \"${\"", s)
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !envNameRE.MatchString(name) {
			return "", fmt.Errorf("%q: ${%s}: not a variable name", s, ref)
		}
		v, ok := "", false
		if e.lookup != nil {
			v, ok = e.lookup(name)
		}
		switch {
		case ok && v != "":
			e.values = append(e.values, v)
		case hasDef:
			v = def
		case !ok && e.missing == "":
			e.missing = name
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// absorb takes over another expander's missing variable.
func (e *expander) absorb(o *expander) {
	if e.missing == "" {
		e.missing = o.missing
	}
}

func (e *expander) err() error {
	if e.missing == "" {
		return nil
	}
	return fmt.Errorf("environment variable %s is not set", e.missing)
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailing
	}
	return nil
}

var errTrailing = errors.New("unexpected data after the JSON object")

// jsonError words a decode error. With file set it is "FILE:LINE:COL:
// reason" for syntax errors and "FILE: reason" otherwise; for a server
// object (file empty) it is ".FIELD: reason" or ": reason".
func jsonError(file string, data []byte, server string, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	reason := strings.TrimPrefix(err.Error(), "json: ")
	switch {
	case errors.As(err, &syn) && file != "":
		line, col := lineCol(data, syn.Offset)
		return fmt.Errorf("%s:%d:%d: %s", file, line, col, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF) && file != "":
		line, col := lineCol(data, int64(len(data)))
		return fmt.Errorf("%s:%d:%d: unexpected end of JSON", file, line, col)
	case errors.As(err, &typ):
		field := typ.Field
		reason = fmt.Sprintf("expected %s, got %s", kindOf(typ), typ.Value)
		if field == "" {
			if file != "" {
				return fmt.Errorf("%s: %s", file, reason)
			}
			return fmt.Errorf(": %s", reason)
		}
		if file != "" {
			return fmt.Errorf("%s: %s: %s", file, field, reason)
		}
		return fmt.Errorf(".%s: %s", field, reason)
	}
	if file != "" {
		return fmt.Errorf("%s: %s", file, reason)
	}
	return fmt.Errorf(": %s", reason)
}

func kindOf(typ *json.UnmarshalTypeError) string {
	if typ.Type == nil {
		return "a value"
	}
	switch k := typ.Type.Kind().String(); k {
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		if typ.Type.String() == "*string" {
			return "a string"
		}
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	default:
		return k
	}
}

func lineCol(data []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
