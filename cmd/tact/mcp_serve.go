package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/buildinfo"
	"github.com/tactcli/tact/mcpserve"
	"github.com/tactcli/tact/redact"
)

// mcpServeOptions is tact mcp serve's test seam.
type mcpServeOptions struct {
	IO          *iostreams
	S           *config.Settings
	Runtime     runtimeFunc
	HTTP        string
	MaxSessions int
	PrintConfig bool
	// Args are the command's own arguments as typed, for --print-config.
	Args []string
}

// mcpShutdownGrace is how long HTTP calls in flight may finish after a
// signal.
const mcpShutdownGrace = 5 * time.Second

// newMCPServeCmd makes tact mcp serve; runF (nil: mcpServeRun) runs it.
func newMCPServeCmd(f *factory, runF func(context.Context, *mcpServeOptions) error) *cobra.Command {
	o := &mcpServeOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve tact's tools (and whole runs) to MCP clients over stdio or HTTP",
		Long: "Be an MCP server (docs/mcp.md, \"tact as a server\"): the built-in tools under\n" +
			"their own names, confined to --workspace and approved by the policy as in a run\n" +
			"(write/exec calls are asked of the client by elicitation, else denied), tact_exec\n" +
			"and, with a model, tact_run. Over stdio unless --http ADDR (streamable HTTP,\n" +
			"loopback unless --token-env). --print-config prints the mcpServers entry to paste\n" +
			"into a client's configuration.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.Args = c.Flags().Args()
			if runF != nil {
				return runF(c.Context(), o)
			}
			return mcpServeRun(c.Context(), o)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	fl, s := cmd.Flags(), f.Settings
	addWorkspaceFlags(fl, s)
	addOutputFlags(fl, s, "")
	addPlannerFlags(fl, s, "tools offered and runs may use, comma-separated (default: every built-in tool)")
	addModelFlags(fl, s)
	addExecutorFlags(fl, s)
	addHistoryFlags(fl, s)
	addSafetyFlags(fl, s)
	fl.StringVar(&o.HTTP, "http", "", "serve streamable HTTP on HOST:PORT instead of stdio; beyond loopback it needs --token-env")
	fl.StringVar(&s.TokenEnv, "token-env", s.TokenEnv, "`NAME` of the environment variable holding the bearer token every HTTP request must send")
	fl.IntVar(&o.MaxSessions, "max-sessions", 16, "HTTP sessions open at once (0: no bound); a new one beyond is refused with 503")
	fl.IntVar(&s.Parallel, "parallel", s.Parallel, "runs (tact_run, tact_exec) answered at once on one loaded model (1 to 64)")
	fl.BoolVar(&o.PrintConfig, "print-config", false, "print the mcpServers JSON entry for a client's configuration and exit")
	return cmd
}

func mcpServeRun(ctx context.Context, o *mcpServeOptions) error {
	s := o.S
	if o.MaxSessions < 0 {
		return badInputf("--max-sessions %d: must be at least 0", o.MaxSessions)
	}
	if o.PrintConfig {
		return printMCPConfig(o)
	}
	token := ""
	if s.TokenEnv != "" {
		if token = os.Getenv(s.TokenEnv); token == "" {
			return badInputf("--token-env %s: the variable is unset or empty", s.TokenEnv)
		}
	}
	var ln net.Listener
	if o.HTTP != "" {
		if err := mcpserve.CheckAddr(o.HTTP, token); err != nil {
			return badInput(err)
		}
		var err error
		// Listen first: a port in use fails before the model loads.
		if ln, err = net.Listen("tcp", o.HTTP); err != nil {
			return badInputf("--http %s: %v", o.HTTP, err)
		}
		defer ln.Close()
		allowSignalGrace(mcpShutdownGrace)
	}
	// No MCP servers are started: their tools are theirs to offer, and a
	// servers file naming tact itself would start it again and again.
	rt, err := o.Runtime(ctx, agent.Options{Mode: "mcp-serve", MCPServers: []string{}, Prompter: mcpserve.Prompter(s.NoInput),
		Secrets: []string{token}, History: true})
	if err != nil {
		return err
	}
	srv := mcpserve.New(rt, mcpserve.Config{Version: buildinfo.Version, Log: slog.Default()})
	if ln == nil {
		return srv.ServeStdio(ctx) // stdout is the protocol's: nothing else may be written to it
	}
	slog.Info("tact mcp serve: listening", "url", "http://"+ln.Addr().String()+"/", "auth", token != "", "max_sessions", o.MaxSessions)
	// The address on stderr as its own line, for scripts and tests that
	// listen on port 0.
	fmt.Fprintf(o.IO.ErrOut, "tact mcp serve: listening on http://%s/\n", ln.Addr())
	return srv.ServeHTTP(ctx, ln, mcpserve.HTTPOptions{Token: token, MaxSessions: o.MaxSessions, SessionTimeout: 30 * time.Minute}, mcpShutdownGrace)
}

// printMCPConfig prints the mcpServers entry that starts this tact with
// the same flags (the workspace made absolute), and the TACT_* variables
// set now that hold no secret (mcpserve.ClientConfig).
func printMCPConfig(o *mcpServeOptions) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--print-config: this program's path: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	ws, err := filepath.Abs(o.S.Workspace)
	if err != nil {
		return badInputf("--workspace: %v", err)
	}
	// The --env and TACT_ENV pairs are secrets too when their names say so
	// (GITHUB_TOKEN=...), as the runtime's redactor counts them.
	environ := append(os.Environ(), o.S.Env...)
	environ = append(environ, strings.Split(os.Getenv("TACT_ENV"), "\n")...) // --env replaces it in o.S.Env
	red, err := redact.NewRedactor(environ, o.S.Redact)
	if err != nil {
		return badInputf("--redact: %v", err)
	}
	out, left, err := mcpserve.ClientConfig(exe, ws, mcpserve.ServeArgs(os.Args), os.Environ(), o.S.TokenEnv, red)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		fmt.Fprintf(o.IO.ErrOut, "tact mcp serve --print-config: left out (they hold secrets; give them to the client yourself): %s\n", strings.Join(left, ", "))
	}
	_, err = fmt.Fprintf(o.IO.Out, "%s\n", out)
	return err
}
