// Package config is the one owner of every environment variable tact reads.
// The CLI loads Settings from the environment, then binds its flags to the
// same fields, so a flag given on the command line wins over the environment.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// Settings holds every tunable. Field tags name the environment variable and
// its default; the README's tables are generated from this struct's tags by
// TestReadmeListsEveryVariable, so keep desc short and exact.
type Settings struct {
	// Run and I/O.
	Workspace string        `envconfig:"TACT_WORKSPACE" default:"." desc:"directory tools work in; they never leave it"`
	Trace     string        `envconfig:"TACT_TRACE" desc:"append JSONL trace events to this file"`
	JSON      bool          `envconfig:"TACT_JSON" desc:"print one JSON result object instead of the bare answer"`
	Query     string        `envconfig:"TACT_QUERY" desc:"query for plans without a header"`
	Verbose   bool          `envconfig:"TACT_VERBOSE" desc:"debug logs on stderr (and llama.cpp's own logs)"`
	Quiet     bool          `envconfig:"TACT_QUIET" desc:"only errors on stderr"`
	Timeout   time.Duration `envconfig:"TACT_TIMEOUT" desc:"bound the whole run (0: none); exit 7 when hit"`

	// Executor.
	AllowTools           []string `envconfig:"TACT_ALLOW_TOOLS" desc:"comma-separated tools the run may use (default: the tools the plan names)"`
	NoPlan               bool     `envconfig:"TACT_NO_PLAN" desc:"free ReAct: no planner, the model picks every action"`
	MaxIterations        int      `envconfig:"TACT_MAX_ITERATIONS" default:"10" desc:"action budget in --no-plan mode"`
	RetryBuffer          int      `envconfig:"REACT_RETRY_BUFFER" default:"2" desc:"extra attempts beyond the plan's steps"`
	ReplanThreshold      int      `envconfig:"REACT_REPLAN_FAILURE_THRESHOLD" default:"2" desc:"consecutive failed tool runs before replanning"`
	StopWhen             string   `envconfig:"TACT_STOP_WHEN" desc:"jq expression over each finished step; true ends the run (exit 8)"`
	ThoughtPrompt        string   `envconfig:"TACT_THOUGHT_PROMPT" desc:"replace the default thought prompt"`
	RequireThought       bool     `envconfig:"TACT_REQUIRE_THOUGHT" default:"true" desc:"model actions must carry a substantive thought"`
	MinThoughtLength     int      `envconfig:"TACT_MIN_THOUGHT_LENGTH" default:"10" desc:"minimum thought length in characters when thoughts are required"`
	SuccessPhrases       []string `envconfig:"TACT_SUCCESS_PHRASES" desc:"comma-separated phrases in an observation that end the run as success"`
	FailurePhrases       []string `envconfig:"TACT_FAILURE_PHRASES" desc:"comma-separated phrases in an answer or observation that mean failure (exit 3)"`
	StallThreshold       int      `envconfig:"TACT_STALL_THRESHOLD" default:"3" desc:"identical actions in a row that end the run as stalled"`
	MaxObservationTokens int      `envconfig:"TACT_MAX_OBSERVATION_TOKENS" default:"2000" desc:"observations are cut to about this many tokens"`
	TokenBudget          int      `envconfig:"TACT_TOKEN_BUDGET" desc:"total tokens a run may spend (0: unlimited); exit 6 when hit"`

	// Backends and models.
	Backend     string  `envconfig:"TACT_BACKEND" desc:"llama, script or none (default: llama with a model, script with --script, else none)"`
	Script      string  `envconfig:"TACT_SCRIPT" desc:"JSONL file of canned replies for the script backend"`
	Model       string  `envconfig:"TACT_MODEL" desc:"GGUF model path or name in the models directory"`
	ModelsDir   string  `envconfig:"TACT_MODELS_DIR" desc:"models directory (default $XDG_DATA_HOME/tact/models)"`
	Threads     int     `envconfig:"TACT_THREADS" desc:"inference threads (default: physical cores)"`
	CtxSize     int     `envconfig:"TACT_CTX_SIZE" desc:"context window in tokens (default: the model's, at most 8192)"`
	BatchSize   int     `envconfig:"TACT_BATCH_SIZE" default:"512" desc:"prompt batch size in tokens"`
	FlashAttn   bool    `envconfig:"TACT_FLASH_ATTENTION" desc:"use flash attention"`
	KVCacheType string  `envconfig:"TACT_KV_CACHE_TYPE" default:"f16" desc:"KV cache type: f16, q8_0 or q4_0"`
	GPULayers   int     `envconfig:"TACT_GPU_LAYERS" desc:"layers to offload to a GPU backend (0: CPU only)"`
	LibDir      string  `envconfig:"TACT_LIB_DIR" desc:"directory of GPU backend libraries (default: lib/ollama beside the binary's directory)"`
	Temperature float32 `envconfig:"TACT_TEMPERATURE" default:"0.2" desc:"sampling temperature (0: greedy)"`
	TopK        int     `envconfig:"TACT_TOP_K" default:"40" desc:"top-k sampling"`
	TopP        float32 `envconfig:"TACT_TOP_P" default:"0.95" desc:"top-p sampling"`
	MinP        float32 `envconfig:"TACT_MIN_P" default:"0.05" desc:"min-p sampling"`
	Seed        int     `envconfig:"TACT_SEED" default:"-1" desc:"sampling seed (-1: random); fix it for reproducible runs"`
	MaxTokens   int     `envconfig:"TACT_MAX_TOKENS" default:"512" desc:"tokens a single model reply may generate"`

	// Safety.
	NoInput     bool          `envconfig:"TACT_NO_INPUT" desc:"never prompt, even on a terminal"`
	Yes         bool          `envconfig:"TACT_YES" desc:"approve write/exec actions that no deny rule forbids"`
	Policy      string        `envconfig:"TACT_POLICY" desc:"policy file (default $XDG_CONFIG_HOME/tact/policy.json)"`
	ReadOnly    bool          `envconfig:"TACT_READ_ONLY" desc:"allow read tools only"`
	DryRun      bool          `envconfig:"TACT_DRY_RUN" desc:"show each action and its decision; run read tools only"`
	Sandbox     string        `envconfig:"TACT_SANDBOX" default:"workspace-write" desc:"kernel sandbox for run_command: workspace-write, read-only or off"`
	NoNetwork   bool          `envconfig:"TACT_NO_NETWORK" desc:"run_command may not connect or bind TCP sockets (kernel-enforced where Landlock allows)"`
	ToolTimeout time.Duration `envconfig:"TACT_TOOL_TIMEOUT" default:"60s" desc:"timeout of one run_command"`
	Env         []string      `envconfig:"TACT_ENV" desc:"comma-separated KEY=VALUE pairs added to run_command's environment"`
	Redact      []string      `envconfig:"TACT_REDACT" desc:"comma-separated regexps whose matches are replaced by [REDACTED]"`
}

// Load reads Settings from the environment.
func Load() (*Settings, error) {
	// An empty variable means "unset" (as in `TACT_NO_PLAN= tact ...`), not
	// a value to parse.
	t := reflect.TypeOf(Settings{})
	for i := 0; i < t.NumField(); i++ {
		if name := t.Field(i).Tag.Get("envconfig"); name != "" {
			if v, ok := os.LookupEnv(name); ok && v == "" {
				os.Unsetenv(name)
			}
		}
	}
	var s Settings
	if err := envconfig.Process("", &s); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	return &s, nil
}

// DataDir is $XDG_DATA_HOME/tact (default ~/.local/share/tact).
func DataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "tact")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "share", "tact")
}

// ConfigDir is $XDG_CONFIG_HOME/tact (default ~/.config/tact).
func ConfigDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "tact")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "tact")
}

// ModelsDirectory resolves the models directory.
func (s *Settings) ModelsDirectory() string {
	if s.ModelsDir != "" {
		return s.ModelsDir
	}
	return filepath.Join(DataDir(), "models")
}

// PolicyPath resolves the policy file path.
func (s *Settings) PolicyPath() string {
	if s.Policy != "" {
		return s.Policy
	}
	return filepath.Join(ConfigDir(), "policy.json")
}
