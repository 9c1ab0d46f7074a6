package main

import (
	"strconv"

	"github.com/spf13/pflag"
	"github.com/tactcli/tact/config"
)

// Flag groups, each bound to the settings loaded from the environment (so
// a flag wins over its variable), added by the commands that use them:
//
//	          workspace planner model output query executor safety answer
//	run           x        x      x     x      x      x        x      x
//	exec          x        x      x     x      x      x        x      x
//	plan          x        x      x     x
//	batch         x        x      x     x(trace)       x        x      x
//	chat          x        x      x     x(trace)       x        x      x
//	serve         x        x      x     x(trace)       x        x   + serve
//
// Every flag here is the flag of one config.Settings field (its flag tag);
// a command using any of them is marked with annSettings.

// addWorkspaceFlags: where a job's tools work, which MCP servers add tools,
// and how long the job may take.
func addWorkspaceFlags(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Workspace and tools")()
	f.StringVar(&s.Workspace, "workspace", s.Workspace, "directory tools work in; they never leave it")
	f.DurationVar(&s.Timeout, "timeout", s.Timeout, "bound the whole run (exit 7)")
	f.StringVar(&s.MCPConfig, "mcp-config", s.MCPConfig, "MCP servers `FILE` whose tools runs may use (default $XDG_CONFIG_HOME/tact/mcp.json)")
}

// addPlannerFlags: the tools a plan may use (allowTools: the help text,
// which says what the default is for the command) and the thoughts model
// actions need.
func addPlannerFlags(f *pflag.FlagSet, s *config.Settings, allowTools string) {
	defer helpGroup(f, "Workspace and tools")()
	f.StringSliceVar(&s.AllowTools, "allow-tools", s.AllowTools, allowTools)
	f.BoolVar(&s.RequireThought, "require-thought", s.RequireThought, "model actions need a substantive thought")
	f.IntVar(&s.MinThoughtLength, "min-thought-length", s.MinThoughtLength, "minimum thought length")
}

// addModelFlags: which backend answers and how (the model, its context and
// sampling). A new backend's settings belong here.
func addModelFlags(f *pflag.FlagSet, s *config.Settings) {
	done := helpGroup(f, "Model")
	f.StringVar(&s.Backend, "backend", s.Backend, "model backend: llama, openai, script or none")
	f.StringVar(&s.Script, "script", s.Script, "JSONL replies for the script backend")
	f.StringVar(&s.Model, "model", s.Model, "GGUF model path or name (a catalog name after tact models pull NAME)")
	f.BoolVar(&s.Pull, "pull", s.Pull, "download the catalog model named by --model (default: the recommended one) first")
	f.IntVar(&s.Threads, "threads", s.Threads, "inference threads (0: chosen from the cores free at start, see -v; capped at the CPUs present)")
	f.IntVar(&s.CtxSize, "ctx-size", s.CtxSize, "context window in tokens for every backend (0: the model's, at most 8192; unlimited for script and openai); refused if its KV cache cannot fit in memory")
	f.IntVar(&s.BatchSize, "batch-size", s.BatchSize, "prompt batch size in tokens, 1 to 65536")
	f.StringVar(&s.FlashAttn, "flash-attention", s.FlashAttn, "flash attention: auto (the provider's faster choice), on or off")
	f.Lookup("flash-attention").NoOptDefVal = "on"
	f.StringVar(&s.KVCacheType, "kv-cache-type", s.KVCacheType, "KV cache type: f16, q8_0, q4_0")
	f.IntVar(&s.GPULayers, "gpu-layers", s.GPULayers, "layers to offload to a GPU backend (0: CPU only)")
	f.BoolVar(&s.NoPromptCache, "no-prompt-cache", s.NoPromptCache, "llama backend: neither load nor save the system prompt's KV state in $XDG_CACHE_HOME/tact/kv")
	f.Var(&s.PromptCacheMax, "prompt-cache-max", "llama backend: size cap of the prompt cache, least recently used files go first (300MB, 1GiB; 0: off)")
	done()
	done = helpGroup(f, "Sampling")
	f.Float32Var(&s.Temperature, "temperature", s.Temperature, "sampling temperature, 0 to 10 (0: greedy)")
	f.IntVar(&s.TopK, "top-k", s.TopK, "top-k sampling (0: off, the whole vocabulary)")
	f.Float32Var(&s.TopP, "top-p", s.TopP, "top-p sampling, above 0 and at most 1 (1: off)")
	f.Float32Var(&s.MinP, "min-p", s.MinP, "min-p sampling, 0 to 1 (0: off)")
	f.IntVar(&s.Seed, "seed", s.Seed, "sampling seed, 0 to 4294967295 (-1: random)")
	f.IntVar(&s.MaxTokens, "max-tokens", s.MaxTokens, "tokens one model reply may generate (0: until the context is full)")
	done()
	// The openai backend (docs/openai.md).
	defer helpGroup(f, "Model server (openai backend)")()
	f.StringVar(&s.BaseURL, "base-url", s.BaseURL, "openai backend: an OpenAI-compatible server's API `URL`, e.g. http://127.0.0.1:11434/v1")
	f.StringVar(&s.APIModel, "api-model", s.APIModel, "openai backend: the model's `NAME` on the server")
	f.StringVar(&s.APIKeyEnv, "api-key-env", s.APIKeyEnv, "openai backend: the environment variable holding the API key (never the key itself)")
	f.StringVar(&s.SchemaMode, "schema-mode", s.SchemaMode, "openai backend: json_schema, json_object, json_schema_field or none")
	f.IntVar(&s.Retries, "retries", s.Retries, "openai backend: retries after a connection error, 429 or 5xx")
	f.DurationVar(&s.RequestTimeout, "request-timeout", s.RequestTimeout, "bound of one request to a model server, a stalled stream included (0: none)")
}

// addOutputFlags: the trace file, and --json with its help text (json ""
// leaves --json out: tact batch always writes JSON).
func addOutputFlags(f *pflag.FlagSet, s *config.Settings, json string) {
	defer helpGroup(f, "Input and output")()
	f.StringVar(&s.Trace, "trace", s.Trace, "append JSONL trace events to `FILE`")
	if json != "" {
		f.BoolVar(&s.JSON, "json", s.JSON, json)
	}
}

// addAnswerFlags: the shape of the final answer (--schema).
func addAnswerFlags(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Input and output")()
	f.StringVar(&s.Schema, "schema", s.Schema, "JSON Schema the final answer must validate against, inline or @`FILE`; the answer is then one line of compact JSON (exit 11 when none validates)")
}

// addOutputFileFlag: -o, the file that gets the answer of a run that
// succeeded (run and exec).
func addOutputFileFlag(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Input and output")()
	f.StringVarP(&s.Output, "output", "o", s.Output, "also write the answer (with --json the result object) to `FILE`, atomically, when the run succeeds; otherwise the file is left as it was")
}

// addQueryFlag: the query of a saved plan without a header.
func addQueryFlag(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Input and output")()
	f.StringVar(&s.Query, "query", s.Query, "the query, for plans without a header")
}

// addExecutorFlags: how the ReAct executor runs a plan and when it stops.
func addExecutorFlags(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Executor: budgets and stopping")()
	f.BoolVar(&s.NoPlan, "no-plan", s.NoPlan, "free ReAct: no planner")
	f.IntVar(&s.MaxIterations, "max-iterations", s.MaxIterations, "most actions a run takes: the budget with --no-plan (0: 10); a planned run's budget (plan steps + --retry-buffer) is at most this when set")
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
	f.Var(invertedBool{&s.ProjectInstructions}, "no-project-instructions", "leave the workspace's AGENTS.md (or TACT.md) files out of the system prompt")
	f.Lookup("no-project-instructions").NoOptDefVal = "true"
}

// addHistoryFlags: whether the run is kept in the run history and how
// long the history keeps runs (docs/history.md).
func addHistoryFlags(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Run history")()
	f.Var(invertedBool{&s.History}, "no-history", "keep no record of this run in the run history ($XDG_STATE_HOME/tact/runs.db)")
	f.Lookup("no-history").NoOptDefVal = "true"
	f.DurationVar(&s.HistoryMaxAge, "history-max-age", s.HistoryMaxAge, "runs older than this leave the run history, checked at most once a day (0: kept)")
	f.Var(&s.HistoryMaxSize, "history-max-size", "keep the run history under this size, oldest runs leaving first (256MiB, 1GiB; 0: no cap)")
}

// invertedBool is a --no-X flag of a setting X that is on by default.
type invertedBool struct{ b *bool }

func (v invertedBool) String() string {
	if v.b == nil {
		return "false"
	}
	return strconv.FormatBool(!*v.b)
}

func (v invertedBool) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.b = !on
	return nil
}

func (v invertedBool) Type() string { return "bool" }

// addSafetyFlags: what tools may do, who approves it, and what leaves the
// process redacted.
func addSafetyFlags(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Safety: approval, policy, sandbox")()
	f.BoolVar(&s.NoInput, "no-input", s.NoInput, "never prompt, even on a terminal")
	f.BoolVar(&s.NoAsk, "no-ask", s.NoAsk, "do not offer the ask_user tool (the model cannot ask you a question)")
	f.StringVar(&s.OnApproval, "on-approval", s.OnApproval, "an approval nobody can answer now: deny, or pause (exit 12 needs_input; tact answer continues)")
	f.BoolVarP(&s.Yes, "yes", "y", s.Yes, "approve write/exec actions no deny rule forbids")
	f.StringVar(&s.Policy, "policy", s.Policy, "policy `FILE` (default $XDG_CONFIG_HOME/tact/policy.json)")
	f.BoolVar(&s.ReadOnly, "read-only", s.ReadOnly, "allow read tools only")
	f.BoolVar(&s.DryRun, "dry-run", s.DryRun, "show each action and its decision; run read tools only")
	f.StringVar(&s.Sandbox, "sandbox", s.Sandbox, "kernel sandbox for run_command: workspace-write, read-only or off")
	f.BoolVar(&s.NoNetwork, "no-network", s.NoNetwork, "run_command may not connect or bind TCP sockets")
	f.DurationVar(&s.ToolTimeout, "tool-timeout", s.ToolTimeout, "timeout of one run_command (0: 60s)")
	f.StringArrayVar(&s.Env, "env", s.Env, "KEY=VALUE added to run_command's environment (repeatable)")
	f.StringArrayVar(&s.Redact, "redact", s.Redact, "regexp whose matches are replaced by [REDACTED] (repeatable)")
	f.StringVar(&s.Hooks, "hooks", s.Hooks, "hooks `FILE` (default $XDG_CONFIG_HOME/tact/hooks.json; never read from the workspace)")
	f.StringVar(&s.ApproveCmd, "approve-cmd", s.ApproveCmd, "`COMMAND` asked instead of a person about write/exec actions: JSON on stdin; exit 0 approves once, 3 always, else denies")
	f.DurationVar(&s.ApproveTimeout, "approve-timeout", s.ApproveTimeout, "how long --approve-cmd may take before the action is denied")
}

// addServeFlags: where tact serve listens, who may call it, and how much
// it takes in (docs/serve.md).
func addServeFlags(f *pflag.FlagSet, s *config.Settings) {
	defer helpGroup(f, "Server")()
	f.StringVar(&s.Addr, "addr", s.Addr, "HOST:PORT to listen on; beyond loopback it needs --token-env")
	f.StringVar(&s.TokenEnv, "token-env", s.TokenEnv, "`NAME` of the environment variable holding the bearer token every request must send")
	f.Var(&s.MaxBody, "max-body", "largest request body (413 beyond): bytes, or a number with a unit (64KiB, 2MB)")
	f.IntVar(&s.Queue, "queue", s.Queue, "requests that may wait for a free sequence while --parallel run (429 beyond)")
	f.DurationVar(&s.ShutdownGrace, "shutdown-grace", s.ShutdownGrace, "on SIGTERM or SIGINT, how long in-flight requests may finish before they are cancelled")
	f.DurationVar(&s.WriteTimeout, "write-timeout", s.WriteTimeout, "how long one write of an answer (up to 32KiB) may wait for a client that does not read; then the connection is closed and the request cancelled (0: none)")
	f.IntVar(&s.Parallel, "parallel", s.Parallel, "requests answered at once, each in its own sequence of the model's context (1 to 64)")
}
