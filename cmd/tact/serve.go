package main

import (
	"context"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/server"
)

// serveOptions is tact serve's test seam.
type serveOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
}

// newServeCmd makes tact serve; runF (nil: serveRun) runs it, for tests.
func newServeCmd(f *factory, runF func(context.Context, *serveOptions) error) *cobra.Command {
	o := &serveOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the ReAct step API and whole runs over HTTP on one loaded model",
		Long: "Load the model once and answer HTTP requests (docs/serve.md): POST\n" +
			"/api/agent/react_step (one step of a conversation the client holds; the client\n" +
			"runs the tools), POST /v1/runs (a whole run in the server's workspace, always\n" +
			"unattended), GET /healthz and GET /metrics. Up to --parallel requests are\n" +
			"answered at once and --queue more wait. Listens on 127.0.0.1:8080 unless --addr;\n" +
			"beyond loopback --token-env must name the variable holding a bearer token.\n" +
			"SIGTERM or SIGINT stops accepting, lets in-flight requests finish within\n" +
			"--shutdown-grace, and exits 0.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return serveRun(c.Context(), o)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	fl, s := cmd.Flags(), f.Settings
	addWorkspaceFlags(fl, s)
	addOutputFlags(fl, s, "")
	addPlannerFlags(fl, s, "tools runs may use, comma-separated (default: each plan's tools)")
	addModelFlags(fl, s)
	addExecutorFlags(fl, s)
	addHistoryFlags(fl, s)
	addSafetyFlags(fl, s)
	addServeFlags(fl, s)
	return cmd
}

// serveRun checks the address and token, listens, loads the model and
// serves until a signal; then it drains and returns nil (exit 0).
func serveRun(ctx context.Context, o *serveOptions) error {
	s := o.S
	// On a signal, requests get their grace before the watchdog ends tact.
	allowSignalGrace(s.ShutdownGrace)
	token := ""
	if s.TokenEnv != "" {
		if token = os.Getenv(s.TokenEnv); token == "" {
			return badInputf("--token-env %s: the variable is unset or empty", s.TokenEnv)
		}
	}
	if err := server.CheckAddr(s.Addr, token); err != nil {
		return badInput(err)
	}
	// Listen first: a port in use fails before the model loads.
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return badInputf("--addr %s: %v", s.Addr, err)
	}
	defer ln.Close()
	// Every run is unattended; the token is a secret wherever it would show.
	rt, err := o.Runtime(ctx, agent.Options{Mode: "serve", Secrets: []string{token}, History: true})
	if err != nil {
		return err
	}
	// One JSON line per request on stderr (redacted like all of it);
	// --quiet keeps only errors.
	level := slog.LevelInfo
	if s.Quiet {
		level = slog.LevelError
	}
	log := slog.New(slog.NewJSONHandler(o.IO.ErrOut, &slog.HandlerOptions{Level: level}))
	srv, err := server.New(rt, server.Config{Token: token, MaxBody: int64(s.MaxBody), Parallel: s.Parallel, Queue: s.Queue,
		RequestTimeout: s.RequestTimeout, WriteTimeout: s.WriteTimeout, ShutdownGrace: s.ShutdownGrace, Log: log})
	if err != nil {
		return badInput(err)
	}
	mi := rt.Model()
	log.Info("listening", "addr", ln.Addr().String(), "backend", mi.Backend, "model", mi.Model, "parallel", s.Parallel,
		"queue", s.Queue, "workspace", rt.Env.Workspace, "auth", token != "")
	// Ready the system prompts while the first requests may already come
	// (they queue behind it, or share the prefix it evaluates).
	warmCtx, stopWarm := context.WithCancel(ctx)
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		warm(warmCtx, rt, log)
	}()
	err = srv.Serve(ctx, ln)
	stopWarm()
	<-warmed
	return err
}

// warm readies the runtime's system prompts (agent.Runtime.Warm: from the
// prompt cache, or evaluated and saved) and logs a line for each.
func warm(ctx context.Context, rt *agent.Runtime, log *slog.Logger) {
	done, err := rt.Warm(ctx)
	for _, w := range done {
		log.Info("warmed", "prompt", w.Prompt, "from_prompt_cache", w.Usage.DiskCachedTokens,
			"evaluated", w.Usage.PromptTokens, "reused", w.Usage.CachedTokens-w.Usage.DiskCachedTokens, "ms", w.Took.Milliseconds())
	}
	if err != nil && ctx.Err() == nil {
		log.Warn("warm-up failed; requests evaluate the system prompts themselves", "err", err.Error())
	}
}
