// Package mcpserve is tact as an MCP server (tact mcp serve): the built-in
// tools, and whole runs when a model is configured, offered to MCP clients
// over stdio or streamable HTTP. Every call goes through the engine's
// runtime as a run's tool calls do: its workspace and sandbox, the policy
// gate (approval asked of the client by elicitation), its redactor and its
// output limits.
package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/mcp"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/tools"
)

// Config is what New needs besides the runtime.
type Config struct {
	// Version is sent in the initialize handshake.
	Version string
	// Log receives warnings (nil: slog.Default()).
	Log *slog.Logger
}

// Server serves one runtime to any number of MCP sessions.
type Server struct {
	rt  *agent.Runtime
	cfg Config
	log *slog.Logger
	sdk *sdk.Server
	// runs bounds the tact_run and tact_exec calls running at once to
	// the sequences the backend serves; nil: unbounded.
	runs chan struct{}

	// seal seals the request states of input-required results.
	seal sealer

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*session
}

// session is one client's state: its approval gate (the runtime's policy,
// --yes and --approve-cmd, asking this client), whose "always" answers last
// as long as the session and whose questions wait on no other session's.
// Its direct calls and its tact_run and tact_exec runs share it.
type session struct {
	gate tools.Gate
}

// New makes the server and registers its tools: the built-in tools the
// settings allow (--allow-tools; never final_answer), tact_exec and, when
// the runtime has a model, tact_run.
func New(rt *agent.Runtime, cfg Config) *Server {
	s := &Server{rt: rt, cfg: cfg, log: cfg.Log, seal: newSealer(), sessions: map[*sdk.ServerSession]*session{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "tact", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "tact's tools work inside one workspace (" + rt.Env.Workspace + "); write and exec calls are approved by policy or by asking you.",
		HasTools:     true,
		// Every version the SDK speaks: before 2026-07-28 a question is
		// elicited while the call waits; from it on, a run pauses and the
		// call's input-required result asks (pause.go).
	})
	for _, t := range BuiltinTools(rt) {
		s.sdk.AddTool(mcpTool(t, rt.S.NoNetwork), s.toolHandler(t))
	}
	if n := rt.Concurrency(); n > 0 && n < 1<<16 {
		s.runs = make(chan struct{}, n)
	}
	s.addRunTools()
	return s
}

// SDK is the MCP server, for a transport to run.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// BuiltinTools are the tools the server offers under their own names: the
// built-in ones (an MCP server's SERVER.TOOL is its own server's to offer),
// without final_answer and ask_user (a run's to answer, not a client's
// to call), narrowed to --allow-tools when given.
func BuiltinTools(rt *agent.Runtime) []tools.Tool {
	var out []tools.Tool
	for _, t := range rt.Registry.List() {
		if _, ok := t.(*mcp.Tool); ok || t.Name() == tools.FinalAnswer || t.Name() == tools.AskUser {
			continue
		}
		if len(rt.S.AllowTools) > 0 && !slices.Contains(rt.S.AllowTools, t.Name()) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// mcpTool describes t with its schema, and its side-effect class and
// declaration as hints: read tools are read-only and idempotent; write and
// exec tools may destroy, and are idempotent when they declare so
// (write_file); only exec tools (run_command) reach beyond the workspace
// (the network, unless --no-network).
func mcpTool(t tools.Tool, noNetwork bool) *sdk.Tool {
	read := t.Class() == tools.ClassRead
	destructive := !read
	openWorld := t.Class() == tools.ClassExec && !noNetwork
	return &sdk.Tool{
		Name:        t.Name(),
		Description: fmt.Sprintf("%s (tact %s tool)", t.Description(), t.Class()),
		InputSchema: t.Schema(),
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:    read,
			DestructiveHint: &destructive,
			IdempotentHint:  read || tools.DeclOf(t).Idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
}

// session returns ss's state, made on its first call and dropped when the
// session ends.
func (s *Server) session(ss *sdk.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.sessions[ss]; ok {
		return st
	}
	var st *session
	switch {
	case s.asksByResult(ss):
		// 2026-07-28: nobody is asked while a call waits; what a person
		// decides pauses, and the call's result asks (pause.go).
		st = &session{gate: s.rt.NewPausingGate()}
	case modern(ss):
		// A 2026-07-28 client that cannot be asked: as on 2025-11-25
		// without elicitation (denied, or paused with --on-approval pause).
		st = &session{gate: s.rt.NewGate(nil)}
	default:
		var prompter policy.Prompter
		if canElicit(ss) && !s.rt.S.NoInput {
			prompter = elicitPrompter{ss}
		}
		st = &session{gate: s.rt.NewGate(prompter)}
	}
	s.sessions[ss] = st
	go func() {
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	return st
}

// toolHandler calls t as a run's step does (agent.Runtime.CallTool): the
// user's PreToolUse hooks, write and exec calls through the session's gate
// (with --approve-cmd, which a client answering its own elicitation cannot
// get round), the tool in the runtime's Env, the PostToolUse hooks; what
// comes back is cut to the observation limit (never inside a secret) and
// redacted.
func (s *Server) toolHandler(t tools.Tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := json.RawMessage(req.Params.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		c := agent.ToolCall{Tool: t, Args: args, Gate: s.session(req.Session).gate}
		var out agent.ToolCallResult
		if s.asksByResult(req.Session) {
			var ask *sdk.CallToolResult
			var err error
			if out, ask, err = s.pausingCall(ctx, req, c); err != nil || ask != nil {
				return ask, err
			}
		} else {
			out = s.rt.CallTool(withSession(ctx, req.Session), c)
		}
		switch {
		case out.DryRun:
			return s.textResult(out.Result.Output, false), nil
		case !out.Ran:
			return s.textResult(out.Result.Err.Error(), true), nil
		case ctx.Err() != nil:
			return s.textResult("interrupted: "+ctx.Err().Error(), true), nil
		}
		text := s.observation(out.Result)
		if out.Context != "" {
			text += "\nContext from the user's hooks:\n" + out.Context
		}
		return s.textResult(text, out.Result.Failed()), nil
	}
}

// observation is a tool result as text: its output, its stderr, its
// error and a process's exit status, each cut to the limit.
func (s *Server) observation(res tools.Result) string {
	limit := s.limit()
	var b strings.Builder
	b.WriteString(s.cut(res.Output, limit))
	if res.Stderr != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("stderr:\n" + s.cut(res.Stderr, max(limit/4, 256)))
	}
	if res.Err != nil {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("error: " + s.cut(res.Err.Error(), limit))
	}
	if res.ExitCode != 0 {
		fmt.Fprintf(&b, "\nexit code: %d", res.ExitCode)
	}
	return b.String()
}

// limit is --max-observation-tokens in bytes (about four a token, the
// executor's own estimate when it has no tokenizer).
func (s *Server) limit() int { return max(s.rt.S.MaxObservationTokens, 1) * 4 }

// cut keeps the first limit bytes of text, never splitting a secret the
// redactor would hide, and says how much was left out.
func (s *Server) cut(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	at := s.rt.Redactor.CutBefore(text, limit)
	return fmt.Sprintf("%s\n[cut: %d of %d bytes shown; narrow the call to see the rest]", text[:at], at, len(text))
}

// textResult is one redacted text content.
func (s *Server) textResult(text string, isError bool) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s.rt.Redactor.Redact(text)}}, IsError: isError}
}
