package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/buildinfo"
)

func newRootCmd(streams *iostreams) (*cobra.Command, error) {
	// Load never fails: a bad variable is reported below, only by a command
	// that uses it and only when no flag replaced it.
	s, origin := config.Load()
	redactingStderr(streams) // before anything logs; the run sets its secrets
	root := &cobra.Command{
		Use:           "tact",
		Short:         "Plan and run shell agents on local llama.cpp models",
		Long:          "tact turns a query into a JSONL plan and carries it out with a ReAct executor,\nusing an allow-list of tools inside a workspace. See docs/cli.md for the scripting contract.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(flagError(err)) })
	root.PersistentFlags().BoolVarP(&s.Verbose, "verbose", "v", s.Verbose, "debug logs on stderr, including llama.cpp's")
	root.PersistentFlags().BoolVar(&s.Quiet, "quiet", s.Quiet, "only errors on stderr")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := origin.Check(s, settingsUsedBy(cmd), func(field string) bool {
			f := cmd.Flag(config.Flag(field))
			return f != nil && f.Changed
		}); err != nil {
			return badInput(err)
		}
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
		newRunCmd(s, origin, streams, modeRun),
		newRunCmd(s, origin, streams, modePlan),
		newRunCmd(s, origin, streams, modeExec),
		newBatchCmd(s, origin, streams),
		newToolsCmd(s, streams),
		newMCPCmd(s, streams),
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

// annSettings marks run, plan and exec: every flag they have is bound to
// config.Settings, so a setting is used exactly when its flag exists.
const annSettings = "tact/settings"

// settingsUsedBy says which settings (config field names) cmd uses, so a bad
// variable breaks only the commands that read it: run, plan and exec use the
// settings their flags bind (plus the logging level and GPU library
// directory); models commands use the models directory and logging level;
// version, tools and help use none.
func settingsUsedBy(cmd *cobra.Command) func(field string) bool {
	switch {
	case cmd.Annotations[annSettings] != "":
		return func(field string) bool {
			name := config.Flag(field)
			return name == "" || cmd.Flag(name) != nil
		}
	case cmd.HasParent() && (cmd.Name() == "models" || cmd.Parent().Name() == "models"):
		return func(field string) bool {
			return field == "ModelsDir" || field == "HFEndpoint" || field == "Verbose" || field == "Quiet"
		}
	case cmd.Flag("mcp-config") != nil: // tools, mcp list
		return func(field string) bool { return field == "MCPConfig" || field == "Verbose" || field == "Quiet" }
	}
	return func(string) bool { return false }
}

// flagError turns pflag's "invalid argument "x" for "--n" flag:
// strconv.ParseInt: parsing "x": invalid syntax" into "--n x: not an integer".
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	problem := "invalid value"
	switch ive.GetFlag().Value.Type() {
	case "int":
		problem = "not an integer"
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			problem = "integer out of range"
		}
	case "float32", "float64":
		problem = "not a number"
	case "duration":
		problem = "not a duration (want a number with a unit, e.g. 90s, 5m or 1h30m)"
	case "bool":
		problem = "not a boolean (want true or false)"
	}
	return fmt.Errorf("--%s %s: %s", ive.GetFlag().Name, strconv.Quote(ive.GetValue()), problem)
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
	switch mode {
	case modePlan:
		f.BoolVar(&s.JSON, "json", s.JSON, "print the plan as one JSON object {plan: [rows], token_usage}")
		f.StringSliceVar(&s.AllowTools, "allow-tools", s.AllowTools, "tools the planner may use, comma-separated (default: all)")
	case modeBatch:
		f.StringSliceVar(&s.AllowTools, "allow-tools", s.AllowTools, "tools the runs may use, comma-separated (default: each plan's tools)")
	default:
		f.BoolVar(&s.JSON, "json", s.JSON, "print one JSON result object")
		f.StringSliceVar(&s.AllowTools, "allow-tools", s.AllowTools, "tools the run may use, comma-separated (default: the plan's tools)")
	}
	f.DurationVar(&s.Timeout, "timeout", s.Timeout, "bound the whole run (exit 7)")
	f.StringVar(&s.Backend, "backend", s.Backend, "model backend: llama, script or none")
	f.StringVar(&s.Script, "script", s.Script, "JSONL replies for the script backend")
	f.StringVar(&s.Model, "model", s.Model, "GGUF model path or name (a catalog name after tact models pull NAME)")
	f.BoolVar(&s.Pull, "pull", s.Pull, "download the catalog model named by --model (default: the recommended one) first")
	f.IntVar(&s.Threads, "threads", s.Threads, "inference threads (0: physical cores; capped at the CPUs present)")
	f.IntVar(&s.CtxSize, "ctx-size", s.CtxSize, "context window in tokens for every backend (0: the model's, at most 8192; unlimited for script); refused if its KV cache cannot fit in memory")
	f.IntVar(&s.BatchSize, "batch-size", s.BatchSize, "prompt batch size in tokens, 1 to 65536")
	f.BoolVar(&s.FlashAttn, "flash-attention", s.FlashAttn, "use flash attention")
	f.StringVar(&s.KVCacheType, "kv-cache-type", s.KVCacheType, "KV cache type: f16, q8_0, q4_0")
	f.IntVar(&s.GPULayers, "gpu-layers", s.GPULayers, "layers to offload to a GPU backend (0: CPU only)")
	f.Float32Var(&s.Temperature, "temperature", s.Temperature, "sampling temperature, 0 to 10 (0: greedy)")
	f.IntVar(&s.TopK, "top-k", s.TopK, "top-k sampling (0: off, the whole vocabulary)")
	f.Float32Var(&s.TopP, "top-p", s.TopP, "top-p sampling, above 0 and at most 1 (1: off)")
	f.Float32Var(&s.MinP, "min-p", s.MinP, "min-p sampling, 0 to 1 (0: off)")
	f.IntVar(&s.Seed, "seed", s.Seed, "sampling seed, 0 to 4294967295 (-1: random)")
	f.IntVar(&s.MaxTokens, "max-tokens", s.MaxTokens, "tokens one model reply may generate (0: until the context is full)")
	f.BoolVar(&s.RequireThought, "require-thought", s.RequireThought, "model actions need a substantive thought")
	f.IntVar(&s.MinThoughtLength, "min-thought-length", s.MinThoughtLength, "minimum thought length")
	f.StringVar(&s.MCPConfig, "mcp-config", s.MCPConfig, "MCP servers `FILE` whose tools runs may use (default $XDG_CONFIG_HOME/tact/mcp.json)")
	if mode == modePlan {
		return
	}
	if mode != modeBatch {
		f.StringVar(&s.Query, "query", s.Query, "the query, for plans without a header")
	}
	f.BoolVar(&s.NoPlan, "no-plan", s.NoPlan, "free ReAct: no planner")
	f.IntVar(&s.MaxIterations, "max-iterations", s.MaxIterations, "action budget in --no-plan mode")
	f.IntVar(&s.RetryBuffer, "retry-buffer", s.RetryBuffer, "extra attempts beyond the plan's steps")
	f.IntVar(&s.ReplanThreshold, "replan-threshold", s.ReplanThreshold, "consecutive failed tool runs before replanning")
	f.StringVar(&s.StopWhen, "stop-when", s.StopWhen, "jq expression over each finished step; true ends the run (exit 8)")
	f.StringVar(&s.ThoughtPrompt, "thought-prompt", s.ThoughtPrompt, "replace the default thought prompt")
	// One value a flag: a phrase may contain commas.
	f.StringArrayVar(&s.SuccessPhrases, "success-phrase", s.SuccessPhrases, "observation phrase that ends the run as success (repeatable, one phrase each)")
	f.StringArrayVar(&s.FailurePhrases, "failure-phrase", s.FailurePhrases, "phrase in an answer or observation that means failure (repeatable, one phrase each)")
	f.IntVar(&s.StallThreshold, "stall-threshold", s.StallThreshold, "identical actions in a row that end the run as stalled")
	f.IntVar(&s.MaxObservationTokens, "max-observation-tokens", s.MaxObservationTokens, "cut observations to about this many tokens")
	f.IntVar(&s.TokenBudget, "token-budget", s.TokenBudget, "total tokens the run may spend (exit 6)")
	f.Float32Var(&s.CompactAt, "compact-at", s.CompactAt, "summarize older steps when a prompt would fill this share of the context window")
	f.IntVar(&s.KeepSteps, "keep-steps", s.KeepSteps, "latest steps a compaction keeps whole")
	f.BoolVar(&s.NoInput, "no-input", s.NoInput, "never prompt, even on a terminal")
	f.BoolVarP(&s.Yes, "yes", "y", s.Yes, "approve write/exec actions no deny rule forbids")
	f.StringVar(&s.Policy, "policy", s.Policy, "policy `FILE` (default $XDG_CONFIG_HOME/tact/policy.json)")
	f.BoolVar(&s.ReadOnly, "read-only", s.ReadOnly, "allow read tools only")
	f.BoolVar(&s.DryRun, "dry-run", s.DryRun, "show each action and its decision; run read tools only")
	f.StringVar(&s.Sandbox, "sandbox", s.Sandbox, "kernel sandbox for run_command: workspace-write, read-only or off")
	f.BoolVar(&s.NoNetwork, "no-network", s.NoNetwork, "run_command may not connect or bind TCP sockets")
	f.DurationVar(&s.ToolTimeout, "tool-timeout", s.ToolTimeout, "timeout of one run_command (0: 60s)")
	f.StringArrayVar(&s.Env, "env", s.Env, "KEY=VALUE added to run_command's environment (repeatable)")
	f.StringArrayVar(&s.Redact, "redact", s.Redact, "regexp whose matches are replaced by [REDACTED] (repeatable)")
}
