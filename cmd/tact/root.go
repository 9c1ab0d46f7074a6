package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/buildinfo"
)

func newRootCmd(streams *iostreams) (*cobra.Command, error) {
	s, err := config.Load()
	if err != nil {
		return nil, badInput(err)
	}
	root := &cobra.Command{
		Use:           "tact",
		Short:         "Plan and run shell agents on local llama.cpp models",
		Long:          "tact turns a query into a JSONL plan and carries it out with a ReAct executor,\nusing an allow-list of tools inside a workspace. See README.md for the scripting contract.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	root.PersistentFlags().BoolVarP(&s.Verbose, "verbose", "v", s.Verbose, "debug logs on stderr, including llama.cpp's")
	root.PersistentFlags().BoolVar(&s.Quiet, "quiet", s.Quiet, "only errors on stderr")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		level := slog.LevelWarn
		switch {
		case s.Verbose:
			level = slog.LevelDebug
		case s.Quiet:
			level = slog.LevelError
		}
		slog.SetDefault(slog.New(slog.NewTextHandler(streams.ErrOut, &slog.HandlerOptions{Level: level})))
		return nil
	}
	root.AddCommand(
		newRunCmd(s, streams, modeRun),
		newRunCmd(s, streams, modePlan),
		newRunCmd(s, streams, modeExec),
		newToolsCmd(streams),
		newModelsCmd(s),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := fmt.Fprintf(streams.Out, "tact %s\n", buildinfo.Version)
				return err
			},
		},
	)
	markUsageErrors(root)
	return root, nil
}

// markUsageErrors makes cobra's argument errors (wrong count, unknown
// subcommand) usage errors, exit 2, like flag errors.
func markUsageErrors(c *cobra.Command) {
	// A command without Args keeps cobra's own check (it reports unknown
	// subcommands; tactMain maps that to exit 2).
	if validate := c.Args; validate != nil {
		c.Args = func(cmd *cobra.Command, args []string) error { return badInput(validate(cmd, args)) }
	}
	for _, sub := range c.Commands() {
		markUsageErrors(sub)
	}
}

// addRunFlags binds the flags shared by run, plan and exec to the settings
// loaded from the environment, so flags win over environment variables.
func addRunFlags(f *pflag.FlagSet, s *config.Settings, mode runMode) {
	f.StringVar(&s.Workspace, "workspace", s.Workspace, "directory tools work in; they never leave it")
	f.StringVar(&s.Trace, "trace", s.Trace, "append JSONL trace events to `FILE`")
	f.BoolVar(&s.JSON, "json", s.JSON, "print one JSON result object")
	f.StringSliceVar(&s.AllowTools, "allow-tools", s.AllowTools, "tools the run may use, comma-separated (default: the plan's tools)")
	f.DurationVar(&s.Timeout, "timeout", s.Timeout, "bound the whole run (exit 7)")
	f.StringVar(&s.Backend, "backend", s.Backend, "model backend: llama, script or none")
	f.StringVar(&s.Script, "script", s.Script, "JSONL replies for the script backend")
	f.StringVar(&s.Model, "model", s.Model, "GGUF model path or name")
	f.IntVar(&s.Threads, "threads", s.Threads, "inference threads (default: physical cores)")
	f.IntVar(&s.CtxSize, "ctx-size", s.CtxSize, "context window in tokens (0: the model's, at most 8192)")
	f.IntVar(&s.BatchSize, "batch-size", s.BatchSize, "prompt batch size")
	f.BoolVar(&s.FlashAttn, "flash-attention", s.FlashAttn, "use flash attention")
	f.StringVar(&s.KVCacheType, "kv-cache-type", s.KVCacheType, "KV cache type: f16, q8_0, q4_0")
	f.IntVar(&s.GPULayers, "gpu-layers", s.GPULayers, "layers to offload to a GPU backend")
	f.Float32Var(&s.Temperature, "temperature", s.Temperature, "sampling temperature")
	f.IntVar(&s.TopK, "top-k", s.TopK, "top-k sampling")
	f.Float32Var(&s.TopP, "top-p", s.TopP, "top-p sampling")
	f.Float32Var(&s.MinP, "min-p", s.MinP, "min-p sampling")
	f.IntVar(&s.Seed, "seed", s.Seed, "sampling seed (-1: random)")
	f.IntVar(&s.MaxTokens, "max-tokens", s.MaxTokens, "tokens one model reply may generate")
	f.BoolVar(&s.RequireThought, "require-thought", s.RequireThought, "model actions need a substantive thought")
	f.IntVar(&s.MinThoughtLength, "min-thought-length", s.MinThoughtLength, "minimum thought length")
	if mode == modePlan {
		return
	}
	f.StringVar(&s.Query, "query", s.Query, "the query, for plans without a header")
	f.BoolVar(&s.NoPlan, "no-plan", s.NoPlan, "free ReAct: no planner")
	f.IntVar(&s.MaxIterations, "max-iterations", s.MaxIterations, "action budget in --no-plan mode")
	f.IntVar(&s.RetryBuffer, "retry-buffer", s.RetryBuffer, "extra attempts beyond the plan's steps")
	f.IntVar(&s.ReplanThreshold, "replan-threshold", s.ReplanThreshold, "consecutive failed tool runs before replanning")
	f.StringVar(&s.StopWhen, "stop-when", s.StopWhen, "jq expression over each finished step; true ends the run (exit 8)")
	f.StringVar(&s.ThoughtPrompt, "thought-prompt", s.ThoughtPrompt, "replace the default thought prompt")
	f.StringSliceVar(&s.SuccessPhrases, "success-phrase", s.SuccessPhrases, "observation phrase that ends the run as success (repeatable)")
	f.StringSliceVar(&s.FailurePhrases, "failure-phrase", s.FailurePhrases, "phrase in an answer or observation that means failure (repeatable)")
	f.IntVar(&s.StallThreshold, "stall-threshold", s.StallThreshold, "identical actions in a row that end the run as stalled")
	f.IntVar(&s.MaxObservationTokens, "max-observation-tokens", s.MaxObservationTokens, "cut observations to about this many tokens")
	f.IntVar(&s.TokenBudget, "token-budget", s.TokenBudget, "total tokens the run may spend (exit 6)")
	f.BoolVar(&s.NoInput, "no-input", s.NoInput, "never prompt, even on a terminal")
	f.BoolVarP(&s.Yes, "yes", "y", s.Yes, "approve write/exec actions no deny rule forbids")
	f.StringVar(&s.Policy, "policy", s.Policy, "policy `FILE` (default $XDG_CONFIG_HOME/tact/policy.json)")
	f.BoolVar(&s.ReadOnly, "read-only", s.ReadOnly, "allow read tools only")
	f.BoolVar(&s.DryRun, "dry-run", s.DryRun, "show each action and its decision; run read tools only")
	f.StringVar(&s.Sandbox, "sandbox", s.Sandbox, "kernel sandbox for run_command: workspace-write, read-only or off")
	f.BoolVar(&s.NoNetwork, "no-network", s.NoNetwork, "run_command may not connect or bind TCP sockets")
	f.DurationVar(&s.ToolTimeout, "tool-timeout", s.ToolTimeout, "timeout of one run_command")
	f.StringArrayVar(&s.Env, "env", s.Env, "KEY=VALUE added to run_command's environment (repeatable)")
	f.StringArrayVar(&s.Redact, "redact", s.Redact, "regexp whose matches are replaced by [REDACTED] (repeatable)")
}
