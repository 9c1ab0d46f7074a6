// Package config is the one owner of every environment variable tact reads.
// The CLI loads Settings from the environment, then binds its flags to the
// same fields, so a flag given on the command line wins over the environment.
//
// A variable that does not parse is not fatal at load time: Load keeps the
// default and records the problem in the Origin, and the CLI reports it only
// for a command that uses the setting and only when no flag replaced it
// (Origin.Check). Range checks live here too (Settings.Validate).
package config

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Settings holds every tunable. Field tags name the environment variable
// (envconfig), its default, the flag that sets it and a description; the
// variables table in docs/cli.md must list every envconfig name
// (TestReadmeDocumentsContract), so keep desc short and exact.
//
// List variables: TACT_ALLOW_TOOLS is comma-separated (tool names have no
// commas); the others hold one item a line (newline-separated), because
// regexps, phrases and KEY=VALUE pairs may contain commas.
type Settings struct {
	// Run and I/O.
	Workspace string        `envconfig:"TACT_WORKSPACE" flag:"workspace" default:"." desc:"directory tools work in; they never leave it"`
	Trace     string        `envconfig:"TACT_TRACE" flag:"trace" desc:"append JSONL trace events to this file"`
	JSON      bool          `envconfig:"TACT_JSON" flag:"json" desc:"print one JSON result object instead of the bare answer"`
	Query     string        `envconfig:"TACT_QUERY" flag:"query" desc:"query for plans without a header"`
	Output    string        `envconfig:"TACT_OUTPUT" flag:"output" desc:"run and exec: also write the answer (with --json the result object) to this file, atomically, only when the run succeeds"`
	Params    string        `envconfig:"TACT_PARAMS" flag:"param" desc:"exec: values of the plan's parameters, a JSON object of NAME: value (--param NAME=VALUE replaces it)"`
	Schema    string        `envconfig:"TACT_SCHEMA" flag:"schema" desc:"JSON Schema the final answer must validate against, inline or @FILE: the answer is then one line of compact JSON (exit 11 when no answer validates)"`
	Verbose   bool          `envconfig:"TACT_VERBOSE" flag:"verbose" desc:"debug logs on stderr (and llama.cpp's own logs)"`
	Quiet     bool          `envconfig:"TACT_QUIET" flag:"quiet" desc:"only errors on stderr"`
	Timeout   time.Duration `envconfig:"TACT_TIMEOUT" flag:"timeout" desc:"bound the whole run (0: none); exit 7 when hit"`
	// RequestTimeout bounds one request: to a model server (openai backend:
	// a stalled stream is cut off) and, in tact serve, each HTTP request.
	RequestTimeout time.Duration `envconfig:"TACT_REQUEST_TIMEOUT" flag:"request-timeout" default:"5m" desc:"bound one request to a model server (openai backend) and, in tact serve, each HTTP request (0: none)"`

	// Project instructions: the workspace's AGENTS.md files, joined into
	// the system prompt (internal/instructions).
	ProjectInstructions bool `envconfig:"TACT_PROJECT_INSTRUCTIONS" flag:"no-project-instructions" default:"true" desc:"put the workspace's AGENTS.md (else TACT.md) files, from its git root down to it, in the system prompt (false, or the flag --no-project-instructions: none)"`

	// The run history (docs/history.md).
	History        bool          `envconfig:"TACT_HISTORY" flag:"no-history" default:"true" desc:"keep every run in the run history, $XDG_STATE_HOME/tact/runs.db (false, or the flag --no-history: keep none)"`
	HistoryMaxAge  time.Duration `envconfig:"TACT_HISTORY_MAX_AGE" flag:"history-max-age" default:"2160h" desc:"runs older than this leave the run history, checked at most once a day (0: kept whatever their age)"`
	HistoryMaxSize ByteSize      `envconfig:"TACT_HISTORY_MAX_SIZE" flag:"history-max-size" default:"256MiB" desc:"the run history is kept under this size, oldest runs leaving first, checked once a day, and at once when a quarter over (0: no cap)"`

	// Executor.
	AllowTools           []string `envconfig:"TACT_ALLOW_TOOLS" flag:"allow-tools" split:"comma" desc:"comma-separated tools the run may use (default: the tools the plan names)"`
	NoPlan               bool     `envconfig:"TACT_NO_PLAN" flag:"no-plan" desc:"free ReAct: no planner, the model picks every action"`
	MaxIterations        int      `envconfig:"TACT_MAX_ITERATIONS" flag:"max-iterations" default:"0" desc:"action budget: with --no-plan (0: 10); a planned run's budget (plan steps + REACT_RETRY_BUFFER) is at most this when set"`
	RetryBuffer          int      `envconfig:"REACT_RETRY_BUFFER" flag:"retry-buffer" default:"2" desc:"extra attempts beyond the plan's steps"`
	ReplanThreshold      int      `envconfig:"REACT_REPLAN_FAILURE_THRESHOLD" flag:"replan-threshold" default:"2" desc:"consecutive failed tool runs before replanning"`
	StopWhen             string   `envconfig:"TACT_STOP_WHEN" flag:"stop-when" desc:"jq expression over each finished step; true ends the run (exit 8)"`
	ThoughtPrompt        string   `envconfig:"TACT_THOUGHT_PROMPT" flag:"thought-prompt" desc:"replace the default thought prompt"`
	RequireThought       bool     `envconfig:"TACT_REQUIRE_THOUGHT" flag:"require-thought" default:"true" desc:"model actions must carry a substantive thought"`
	MinThoughtLength     int      `envconfig:"TACT_MIN_THOUGHT_LENGTH" flag:"min-thought-length" default:"10" desc:"minimum thought length in characters when thoughts are required"`
	SuccessPhrases       []string `envconfig:"TACT_SUCCESS_PHRASES" flag:"success-phrase" desc:"phrases in an observation that end the run as success, one a line (newline-separated)"`
	FailurePhrases       []string `envconfig:"TACT_FAILURE_PHRASES" flag:"failure-phrase" desc:"phrases in an answer or observation that mean failure (exit 3), one a line (newline-separated)"`
	StallThreshold       int      `envconfig:"TACT_STALL_THRESHOLD" flag:"stall-threshold" default:"3" desc:"identical actions in a row that end the run as stalled"`
	MaxObservationTokens int      `envconfig:"TACT_MAX_OBSERVATION_TOKENS" flag:"max-observation-tokens" default:"2000" desc:"observations are cut to at most this many tokens (less when the context window is small)"`
	CompactAt            float32  `envconfig:"TACT_COMPACT_AT" flag:"compact-at" default:"0.8" desc:"share of the context window a prompt may fill before older steps are summarized, above 0 and at most 1"`
	KeepSteps            int      `envconfig:"TACT_KEEP_STEPS" flag:"keep-steps" default:"3" desc:"latest steps a compaction keeps whole (at least 1)"`
	TokenBudget          int      `envconfig:"TACT_TOKEN_BUDGET" flag:"token-budget" desc:"total tokens a run may spend (0: unlimited); exit 6 when hit"`

	// Backends and models.
	Backend     string `envconfig:"TACT_BACKEND" flag:"backend" desc:"llama, openai, script or none (default: llama with a model, openai with --base-url, script with --script, else none)"`
	Script      string `envconfig:"TACT_SCRIPT" flag:"script" desc:"JSONL file of canned replies for the script backend"`
	Model       string `envconfig:"TACT_MODEL" flag:"model" desc:"GGUF model path or name in the models directory"`
	ModelsDir   string `envconfig:"TACT_MODELS_DIR" flag:"models-dir" desc:"models directory (default $XDG_DATA_HOME/tact/models)"`
	Pull        bool   `envconfig:"TACT_PULL" flag:"pull" desc:"download the catalog model named by --model (or the recommended default when none is set) before running, with progress on stderr"`
	HFEndpoint  string `envconfig:"HF_ENDPOINT" desc:"Hugging Face hub or mirror that catalog names, hf.co/... and REPO:QUANT pulls download from (default https://huggingface.co)"`
	Threads     int    `envconfig:"TACT_THREADS" flag:"threads" desc:"inference threads (default: chosen from the cores free at start; more than the CPUs present is capped with a warning)"`
	CtxSize     int    `envconfig:"TACT_CTX_SIZE" flag:"ctx-size" desc:"context window in tokens that every prompt and its reply must fit, for every backend (default: the model's, at most 8192; script and none: unlimited; openai: unlimited, set it to the server's); refused when its KV cache cannot fit in memory"`
	BatchSize   int    `envconfig:"TACT_BATCH_SIZE" flag:"batch-size" default:"512" desc:"prompt batch size in tokens (1 to 65536)"`
	FlashAttn   string `envconfig:"TACT_FLASH_ATTENTION" flag:"flash-attention" default:"auto" desc:"flash attention: auto (the provider's faster choice on this machine: on for the runtime, off for the cgo provider), on or off (--flash-attention alone: on)"`
	KVCacheType string `envconfig:"TACT_KV_CACHE_TYPE" flag:"kv-cache-type" default:"f16" desc:"KV cache type: f16, q8_0 or q4_0"`
	GPULayers   int    `envconfig:"TACT_GPU_LAYERS" flag:"gpu-layers" desc:"layers to offload to a GPU backend (0: CPU only)"`
	LibDir      string `envconfig:"TACT_LIB_DIR" desc:"directory of GPU backend libraries (default: lib/ollama beside the binary's directory)"`
	RuntimeDir  string `envconfig:"TACT_RUNTIME_DIR" desc:"llama backend: the llama.cpp runtime directory to use, and no other (default: the best one installed under $XDG_DATA_HOME/tact/runtime; see tact runtime)"`
	RuntimeURL  string `envconfig:"TACT_RUNTIME_URL" desc:"npm registry or mirror that tact runtime install and build download from (default https://registry.npmjs.org)"`
	// OpenTelemetry (docs/telemetry.md): the OTEL_* variables turn it on;
	// this bounds the export when the process ends.
	OTelFlushTimeout time.Duration `envconfig:"TACT_OTEL_FLUSH_TIMEOUT" default:"2s" desc:"with OpenTelemetry on (OTEL_EXPORTER_OTLP_ENDPOINT), bound the export of traces when tact ends; a collector slower than that costs one warning, never the exit code (docs/telemetry.md)"`
	CPULock          bool          `envconfig:"TACT_CPU_LOCK" default:"true" desc:"take turns on the CPU with other tact processes for model work (false: compete)"`
	Temperature      float32       `envconfig:"TACT_TEMPERATURE" flag:"temperature" default:"0.2" desc:"sampling temperature, 0 to 10 (0: greedy)"`
	TopK             int           `envconfig:"TACT_TOP_K" flag:"top-k" default:"40" desc:"top-k sampling (0: off, the whole vocabulary)"`
	TopP             float32       `envconfig:"TACT_TOP_P" flag:"top-p" default:"0.95" desc:"top-p sampling, above 0 and at most 1 (1: off)"`
	MinP             float32       `envconfig:"TACT_MIN_P" flag:"min-p" default:"0.05" desc:"min-p sampling, 0 to 1 (0: off)"`
	Seed             int           `envconfig:"TACT_SEED" flag:"seed" default:"-1" desc:"sampling seed, 0 to 4294967295 (-1: random); fix it for reproducible runs"`
	Parallel         int           `envconfig:"TACT_PARALLEL" flag:"parallel" default:"1" desc:"queries tact batch runs (requests tact serve answers) at once on one loaded model, each in its own sequence of the context (1 to 64)"`
	MaxTokens        int           `envconfig:"TACT_MAX_TOKENS" flag:"max-tokens" default:"512" desc:"tokens a single model reply may generate (0: until the context is full)"`
	// The llama backend's prompt cache (docs/inference.md#prompt-cache).
	NoPromptCache  bool     `envconfig:"TACT_NO_PROMPT_CACHE" flag:"no-prompt-cache" desc:"llama backend: neither load nor save the KV state of the system prompt and tools in $XDG_CACHE_HOME/tact/kv"`
	PromptCacheMax ByteSize `envconfig:"TACT_PROMPT_CACHE_MAX" flag:"prompt-cache-max" default:"512MiB" desc:"llama backend: size cap of the prompt cache directory, least recently used files evicted first (bytes, or a number with a unit: 300MB, 1GiB; 0: the cache is off)"`

	// The openai backend (docs/openai.md): an OpenAI-compatible server.
	BaseURL    string `envconfig:"TACT_BASE_URL" flag:"base-url" desc:"openai backend: the server's API URL, e.g. http://127.0.0.1:11434/v1 (chooses the openai backend when neither --model nor --script is given)"`
	APIModel   string `envconfig:"TACT_API_MODEL" flag:"api-model" desc:"openai backend: the model name the server knows"`
	APIKeyEnv  string `envconfig:"TACT_API_KEY_ENV" flag:"api-key-env" default:"OPENAI_API_KEY" desc:"openai backend: name of the environment variable holding the API key (unset or empty: no key, fine for local servers)"`
	SchemaMode string `envconfig:"TACT_SCHEMA_MODE" flag:"schema-mode" default:"json_schema" desc:"openai backend: how replies are constrained: json_schema, json_object, json_schema_field (llama-server's field) or none (prompt only)"`
	Retries    int    `envconfig:"TACT_RETRIES" flag:"retries" default:"3" desc:"openai backend: retries of a request that failed on the connection, a 429 or a 5xx (0 to 100)"`

	// Safety.
	NoInput     bool          `envconfig:"TACT_NO_INPUT" flag:"no-input" desc:"never prompt, even on a terminal"`
	NoAsk       bool          `envconfig:"TACT_NO_ASK" flag:"no-ask" desc:"do not offer the ask_user tool (the model cannot ask you a question)"`
	OnApproval  string        `envconfig:"TACT_ON_APPROVAL" flag:"on-approval" default:"deny" desc:"an approval that no rule, hook or approver decided and no terminal can answer: deny, or pause (exit 12 needs_input; tact answer continues)"`
	Yes         bool          `envconfig:"TACT_YES" flag:"yes" desc:"approve write/exec actions that no deny rule forbids"`
	Policy      string        `envconfig:"TACT_POLICY" flag:"policy" desc:"policy file (default $XDG_CONFIG_HOME/tact/policy.json)"`
	MCPConfig   string        `envconfig:"TACT_MCP_CONFIG" flag:"mcp-config" desc:"MCP servers file (default $XDG_CONFIG_HOME/tact/mcp.json)"`
	ReadOnly    bool          `envconfig:"TACT_READ_ONLY" flag:"read-only" desc:"allow read tools only"`
	DryRun      bool          `envconfig:"TACT_DRY_RUN" flag:"dry-run" desc:"show each action and its decision; run read tools only"`
	Sandbox     string        `envconfig:"TACT_SANDBOX" flag:"sandbox" default:"workspace-write" desc:"kernel sandbox for run_command: workspace-write, read-only or off"`
	NoNetwork   bool          `envconfig:"TACT_NO_NETWORK" flag:"no-network" desc:"run_command may not connect or bind TCP sockets (kernel-enforced where Landlock allows)"`
	ToolTimeout time.Duration `envconfig:"TACT_TOOL_TIMEOUT" flag:"tool-timeout" default:"60s" desc:"timeout of one run_command (0: the default)"`
	Env         []string      `envconfig:"TACT_ENV" flag:"env" desc:"KEY=VALUE pairs added to run_command's environment, one a line (newline-separated)"`
	Redact      []string      `envconfig:"TACT_REDACT" flag:"redact" desc:"regexps whose matches are replaced by [REDACTED], one a line (newline-separated)"`
	// Hooks and delegated approval (docs/hooks.md): never read from the
	// workspace, so a repository cannot run code through tact.
	Hooks          string        `envconfig:"TACT_HOOKS" flag:"hooks" desc:"hooks file (default $XDG_CONFIG_HOME/tact/hooks.json; never read from the workspace)"`
	ApproveCmd     string        `envconfig:"TACT_APPROVE_CMD" flag:"approve-cmd" desc:"command that approves or denies write/exec actions where a person would be asked: the action as JSON on stdin; exit 0 approves once, 3 approves and adds the \"always\" rule, anything else denies"`
	ApproveTimeout time.Duration `envconfig:"TACT_APPROVE_TIMEOUT" flag:"approve-timeout" default:"5m" desc:"how long --approve-cmd may take before the action is denied"`

	// tact serve (docs/serve.md). --parallel and --request-timeout apply too.
	Addr          string        `envconfig:"TACT_ADDR" flag:"addr" default:"127.0.0.1:8080" desc:"tact serve: HOST:PORT to listen on; beyond loopback it needs --token-env"`
	TokenEnv      string        `envconfig:"TACT_TOKEN_ENV" flag:"token-env" desc:"tact serve: name of the environment variable holding the bearer token every request must send (needed beyond loopback)"`
	MaxBody       ByteSize      `envconfig:"TACT_MAX_BODY" flag:"max-body" default:"1MiB" desc:"tact serve: largest request body (413 beyond): bytes, or a number with a unit (64KiB, 2MB), 1 byte to 1GiB"`
	Queue         int           `envconfig:"TACT_QUEUE" flag:"queue" default:"64" desc:"tact serve: requests that may wait for a free sequence while --parallel run (429 beyond)"`
	ShutdownGrace time.Duration `envconfig:"TACT_SHUTDOWN_GRACE" flag:"shutdown-grace" default:"10s" desc:"tact serve: on SIGTERM or SIGINT, how long in-flight requests may finish before they are cancelled"`
	WriteTimeout  time.Duration `envconfig:"TACT_WRITE_TIMEOUT" flag:"write-timeout" default:"10s" desc:"tact serve: how long one write of an answer (up to 32KiB) may wait for a client that does not read; then the connection is closed and the request cancelled (0: none)"`
}

// Limits of the numeric settings (see Validate).
const (
	MaxTemperature = 10
	MaxBatchSize   = 65536
	MaxCtxSize     = 1 << 24 // far beyond any model; the real bound is memory (checked when the model loads)
	MaxSeed        = math.MaxUint32
	MaxParallel    = 64
	MaxRetries     = 100
	MaxBody        = 1 << 30
	MaxQueue       = 100000
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Origin remembers where settings came from: the raw value of every variable
// that was set, and the problem of each one that did not parse.
type Origin struct {
	raw      map[string]string // field name -> variable's value
	problems map[string]string // field name -> why the value does not parse
}

// EnvError is a variable whose value tact cannot use.
type EnvError struct {
	Var, Value, Problem string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("%s=%s: %s", e.Var, showValue(e.Value), e.Problem)
}

// FieldError is a setting out of range. Its message names the flag, and the
// variable with its value when the value came from the environment.
type FieldError struct {
	Field, Flag, Var, Value, Problem string
}

func (e *FieldError) Error() string {
	if e.Var != "" {
		if e.Flag != "" {
			return fmt.Sprintf("%s=%s (--%s): %s", e.Var, showValue(e.Value), e.Flag, e.Problem)
		}
		return fmt.Sprintf("%s=%s: %s", e.Var, showValue(e.Value), e.Problem)
	}
	if e.Flag != "" {
		return fmt.Sprintf("--%s %s: %s", e.Flag, showValue(e.Value), e.Problem)
	}
	return fmt.Sprintf("%s %s: %s", e.Field, showValue(e.Value), e.Problem)
}

// showValue keeps messages on one line and short.
func showValue(v string) string {
	if len(v) > 60 {
		v = v[:57] + "..."
	}
	if v == "" || strings.ContainsAny(v, " \t\r\n\"'\\") || !strconv.CanBackquote(v) {
		return strconv.Quote(v)
	}
	return v
}

// Load reads Settings from the environment. It never fails: a value that
// does not parse keeps the field's default and is recorded in the Origin, so
// `tact version` and `--help` work whatever the environment holds, and a
// flag can replace a bad variable.
func Load() (*Settings, *Origin) {
	s := Defaults()
	o := &Origin{raw: map[string]string{}, problems: map[string]string{}}
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("envconfig")
		raw, ok := os.LookupEnv(name)
		// An empty variable means "unset" (as in `TACT_NO_PLAN= tact ...`).
		if name == "" || !ok || raw == "" {
			continue
		}
		o.raw[f.Name] = raw
		if problem := setField(v.Field(i), f, raw); problem != "" {
			o.problems[f.Name] = problem
		}
	}
	return s, o
}

// Defaults is Settings with every field at its default.
func Defaults() *Settings {
	s := &Settings{}
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if d, ok := t.Field(i).Tag.Lookup("default"); ok {
			if problem := setField(v.Field(i), t.Field(i), d); problem != "" {
				panic(fmt.Sprintf("config: default of %s: %s", t.Field(i).Name, problem))
			}
		}
	}
	return s
}

// setField parses raw into the field; it returns the problem, or "".
func setField(v reflect.Value, f reflect.StructField, raw string) string {
	switch v.Interface().(type) {
	case string:
		v.SetString(raw)
	case bool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return "not a boolean (want 1, 0, true or false)"
		}
		v.SetBool(b)
	case int:
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 0)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return "integer out of range"
			}
			return "not an integer"
		}
		v.SetInt(n)
	case float32:
		x, err := strconv.ParseFloat(strings.TrimSpace(raw), 32)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return "number out of range"
			}
			return "not a number"
		}
		v.SetFloat(x)
	case ByteSize:
		n, err := ParseByteSize(raw)
		if err != nil {
			return sizeProblem
		}
		v.SetInt(n)
	case time.Duration:
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil {
			return "not a duration (want a number with a unit, e.g. 90s, 5m or 1h30m)"
		}
		v.SetInt(int64(d))
	case []string:
		if f.Tag.Get("split") == "comma" {
			v.Set(reflect.ValueOf(SplitComma(raw)))
		} else {
			v.Set(reflect.ValueOf(SplitLines(raw)))
		}
	default:
		panic("config: unsupported field type " + f.Type.String())
	}
	return ""
}

// SplitLines splits a list variable into its items, one a line. A trailing
// "\r" is dropped (files edited on Windows) and blank lines are skipped; the
// items are otherwise kept exactly, commas and spaces included.
func SplitLines(v string) []string {
	var out []string
	for _, line := range strings.Split(v, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		out = append(out, line)
	}
	return out
}

// SplitComma splits a comma-separated list of names, trimming spaces and
// skipping empty items.
func SplitComma(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Check returns the first problem, in field order, among the settings a
// command uses: a variable that did not parse, or a value out of range. A
// setting whose flag was given on the command line is judged by the flag's
// value alone; its variable is ignored. uses and fromFlag take field names.
func (o *Origin) Check(s *Settings, uses, fromFlag func(field string) bool) error {
	t := reflect.TypeOf(*s)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !uses(f.Name) {
			continue
		}
		flagged := fromFlag(f.Name)
		if p, bad := o.problems[f.Name]; bad && !flagged {
			return &EnvError{Var: f.Tag.Get("envconfig"), Value: o.raw[f.Name], Problem: p}
		}
		if fe := s.checkField(f.Name); fe != nil {
			if raw, fromEnv := o.raw[f.Name]; fromEnv && !flagged {
				fe.Var, fe.Value = f.Tag.Get("envconfig"), raw
			}
			return fe
		}
	}
	return nil
}

// Name says where a setting's value came from, for messages: "--ctx-size"
// when the flag was given (fromFlag) or the value is the default, else
// "TACT_CTX_SIZE=VALUE (--ctx-size)".
func (o *Origin) Name(field string, fromFlag bool) string {
	flag := "--" + Flag(field)
	if o == nil || fromFlag {
		return flag
	}
	raw, fromEnv := o.raw[field]
	if !fromEnv {
		return flag
	}
	return fmt.Sprintf("%s=%s (%s)", Var(field), showValue(raw), flag)
}

// Var is the variable behind field, or "".
func Var(field string) string {
	f, ok := reflect.TypeOf(Settings{}).FieldByName(field)
	if !ok {
		return ""
	}
	return f.Tag.Get("envconfig")
}

// Flag is the flag name (without dashes) that sets field, or "".
func Flag(field string) string {
	f, ok := reflect.TypeOf(Settings{}).FieldByName(field)
	if !ok {
		return ""
	}
	return f.Tag.Get("flag")
}

// Fields lists the field names of Settings in order.
func Fields() []string {
	t := reflect.TypeOf(Settings{})
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = t.Field(i).Name
	}
	return out
}

// Validate checks that every setting is usable: numbers finite and in range,
// enumerations known, KEY=VALUE pairs well formed. The error is a
// *FieldError naming the flag.
func (s *Settings) Validate() error {
	for _, name := range Fields() {
		if fe := s.checkField(name); fe != nil {
			return fe
		}
	}
	return nil
}

func (s *Settings) checkField(field string) *FieldError {
	problem, value := s.fieldProblem(field)
	if problem == "" {
		return nil
	}
	return &FieldError{Field: field, Flag: Flag(field), Value: value, Problem: problem}
}

// fieldProblem says what is wrong with one field's value, and shows the value.
func (s *Settings) fieldProblem(field string) (problem, value string) {
	atLeast := func(n, min int) (string, string) {
		if n < min {
			if min == 0 {
				return "must not be negative", strconv.Itoa(n)
			}
			return fmt.Sprintf("must be at least %d", min), strconv.Itoa(n)
		}
		return "", ""
	}
	between := func(n, lo, hi int) (string, string) {
		if n < lo || n > hi {
			return fmt.Sprintf("must be from %d to %d", lo, hi), strconv.Itoa(n)
		}
		return "", ""
	}
	unit := func(x float32, hi float64) (string, string) {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > hi {
			return fmt.Sprintf("must be a finite number from 0 to %g", hi), strconv.FormatFloat(f, 'g', -1, 32)
		}
		return "", ""
	}
	duration := func(d time.Duration) (string, string) {
		if d < 0 {
			return "must not be negative", d.String()
		}
		return "", ""
	}
	switch field {
	case "Timeout":
		return duration(s.Timeout)
	case "ToolTimeout":
		return duration(s.ToolTimeout)
	case "ApproveTimeout":
		if s.ApproveTimeout <= 0 {
			return "must be positive", s.ApproveTimeout.String()
		}
	case "RequestTimeout":
		return duration(s.RequestTimeout)
	case "HistoryMaxAge":
		return duration(s.HistoryMaxAge)
	case "HistoryMaxSize":
		if s.HistoryMaxSize < 0 {
			return "must not be negative", s.HistoryMaxSize.String()
		}
	case "APIKeyEnv":
		if s.APIKeyEnv != "" && !envName.MatchString(s.APIKeyEnv) {
			return "not an environment variable name", s.APIKeyEnv
		}
	case "SchemaMode":
		switch s.SchemaMode {
		case "", "json_schema", "json_object", "json_schema_field", "none":
		default:
			return "want json_schema, json_object, json_schema_field or none", s.SchemaMode
		}
	case "OnApproval":
		switch s.OnApproval {
		case "", "deny", "pause":
		default:
			return "must be deny or pause", s.OnApproval
		}
	case "Retries":
		return between(s.Retries, 0, MaxRetries)
	case "MaxIterations":
		return atLeast(s.MaxIterations, 0)
	case "RetryBuffer":
		return atLeast(s.RetryBuffer, 0)
	case "ReplanThreshold":
		return atLeast(s.ReplanThreshold, 1)
	case "MinThoughtLength":
		return atLeast(s.MinThoughtLength, 0)
	case "StallThreshold":
		return atLeast(s.StallThreshold, 1)
	case "MaxObservationTokens":
		return atLeast(s.MaxObservationTokens, 1)
	case "TokenBudget":
		return atLeast(s.TokenBudget, 0)
	case "Parallel":
		return between(s.Parallel, 1, MaxParallel)
	case "KeepSteps":
		return atLeast(s.KeepSteps, 1)
	case "CompactAt":
		if f := float64(s.CompactAt); math.IsNaN(f) || f <= 0 || f > 1 {
			return "must be a number above 0 and at most 1", strconv.FormatFloat(f, 'g', -1, 32)
		}
	case "Threads":
		return atLeast(s.Threads, 0)
	case "CtxSize":
		return between(s.CtxSize, 0, MaxCtxSize)
	case "BatchSize":
		return between(s.BatchSize, 1, MaxBatchSize)
	case "GPULayers":
		return atLeast(s.GPULayers, 0)
	case "MaxTokens":
		return atLeast(s.MaxTokens, 0)
	case "PromptCacheMax":
		if s.PromptCacheMax < 0 {
			return "must not be negative", s.PromptCacheMax.String()
		}
	case "TopK":
		return atLeast(s.TopK, 0)
	case "Seed":
		if s.Seed < -1 || int64(s.Seed) > MaxSeed {
			return fmt.Sprintf("must be -1 (random) or from 0 to %d", int64(MaxSeed)), strconv.Itoa(s.Seed)
		}
	case "Temperature":
		return unit(s.Temperature, MaxTemperature)
	case "TopP":
		// 0 would keep no token at all; 1 turns top-p off.
		if f := float64(s.TopP); math.IsNaN(f) || f <= 0 || f > 1 {
			return "must be a finite number above 0 and at most 1", strconv.FormatFloat(f, 'g', -1, 32)
		}
	case "MinP":
		return unit(s.MinP, 1)
	case "FlashAttn":
		if _, ok := FlashAttnMode(s.FlashAttn); !ok {
			return "want auto, on or off", s.FlashAttn
		}
	case "KVCacheType":
		switch strings.ToLower(s.KVCacheType) {
		case "", "f16", "q8_0", "q4_0":
		default:
			return "want f16, q8_0 or q4_0", s.KVCacheType
		}
	case "Addr":
		if _, port, err := net.SplitHostPort(s.Addr); err != nil || port == "" {
			return "want HOST:PORT, e.g. 127.0.0.1:8080", s.Addr
		}
	case "TokenEnv":
		if s.TokenEnv != "" && !envName.MatchString(s.TokenEnv) {
			return "not an environment variable name", s.TokenEnv
		}
	case "MaxBody":
		if s.MaxBody < 1 || s.MaxBody > MaxBody {
			return "must be from 1 byte to 1GiB", s.MaxBody.String()
		}
	case "Queue":
		return between(s.Queue, 0, MaxQueue)
	case "ShutdownGrace":
		return duration(s.ShutdownGrace)
	case "WriteTimeout":
		return duration(s.WriteTimeout)
	case "Env":
		for _, kv := range s.Env {
			if i := strings.IndexByte(kv, '='); i <= 0 {
				return "want KEY=VALUE", kv
			}
		}
	}
	return "", ""
}

// CapThreads lowers Threads to the CPUs this process may run on: more
// threads than CPUs only makes ggml's spinning workers fight for them. It
// returns a warning to log when it capped, else "".
func (s *Settings) CapThreads() string {
	cpus := runtime.NumCPU() // the affinity mask's CPUs (sched_getaffinity)
	if s.Threads > cpus {
		w := fmt.Sprintf("--threads %d is more than the %d CPUs present; using %d", s.Threads, cpus, cpus)
		s.Threads = cpus
		return w
	}
	return ""
}

// DataDir is $XDG_DATA_HOME/tact (default ~/.local/share/tact).
func DataDir() string { return xdgDir("XDG_DATA_HOME", ".local", "share") }

// CacheDir is $XDG_CACHE_HOME/tact (default ~/.cache/tact).
func CacheDir() string { return xdgDir("XDG_CACHE_HOME", ".cache") }

// PromptCacheDir is where the llama backend keeps prompt KV state:
// $XDG_CACHE_HOME/tact/kv.
func PromptCacheDir() string { return filepath.Join(CacheDir(), "kv") }

// ConfigDir is $XDG_CONFIG_HOME/tact (default ~/.config/tact).
func ConfigDir() string { return xdgDir("XDG_CONFIG_HOME", ".config") }

// StateDir is $XDG_STATE_HOME/tact (default ~/.local/state/tact).
func StateDir() string { return xdgDir("XDG_STATE_HOME", ".local", "state") }

// xdgDir is tact's directory under the base directory the variable names,
// else under the default below the home directory. As the XDG Base
// Directory spec says, a relative value is ignored: it would put files
// wherever the command happens to run.
func xdgDir(variable string, defaultUnderHome ...string) string {
	if d := os.Getenv(variable); filepath.IsAbs(d) {
		return filepath.Join(d, "tact")
	}
	parts := append([]string{homeDir()}, defaultUnderHome...)
	return filepath.Join(append(parts, "tact")...)
}

// homeDir is $HOME, else the user database's home (a service or a cron
// job started without HOME), else the temporary directory: never a
// relative path.
func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return h
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir
	}
	return os.TempDir()
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

// HooksPath resolves the hooks file; explicit is false for the default
// path, which may be missing. Only the flag, the variable and the user's
// configuration directory name it, never the workspace.
func (s *Settings) HooksPath() (path string, explicit bool) {
	if s.Hooks != "" {
		return s.Hooks, true
	}
	return filepath.Join(ConfigDir(), "hooks.json"), false
}

// MCPConfigPath resolves the MCP servers file; explicit is false for the
// default path, which may be missing.
func (s *Settings) MCPConfigPath() (path string, explicit bool) {
	if s.MCPConfig != "" {
		return s.MCPConfig, true
	}
	return filepath.Join(ConfigDir(), "mcp.json"), false
}

// FlashAttnMode reads a --flash-attention value: "auto", "on" or "off"
// (ok false for anything else). The boolean spellings an older tact took
// (true, false, 1, 0, and "" for unset) still mean what they did.
func FlashAttnMode(v string) (mode string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "auto":
		return "auto", true
	case "on", "true", "1", "yes":
		return "on", true
	case "off", "false", "0", "no":
		return "off", true
	}
	return "", false
}
