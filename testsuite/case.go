// Package testsuite is the suite of `tact test`: the case format (one JSON
// object a line in *.jsonl files), its strict parser, the checks a case
// makes on a finished run (jq assertions over the run's --json document,
// an answer schema, files in the workspace) and the reports of a suite's
// trials (a table, a JSON document, JUnit XML). It runs nothing: suiterun
// records, replays and runs the cases and hands each trial's document and
// workspace to Check. The format is documented in docs/testing.md
// ("The case format").
package testsuite

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tactcli/tact/internal/text"
)

// Case is one test case of a suite, read from one line of a case file.
// Paths are absolute, resolved against the case file's directory.
type Case struct {
	Name string // unique in the suite; for a case that broke before its name was read, "FILE:LINE"
	File string // the case file, as Load was given it joined with its name
	Line int    // 1-based line in File

	Query string // the query (with Plan: the query of a plan without a header)
	// Plan is a saved plan's file (tact exec), absolute; Params its
	// parameters' values (JSON values).
	Plan   string
	Params map[string]json.RawMessage

	// Fixture is the directory copied fresh into every trial's workspace
	// ("" : an empty workspace). Cassette is the recorded model replies
	// replayed without a model ("": none; a live run needs none).
	Fixture  string
	Cassette string

	Flags Flags
	// Skip, when set, is why the case is not run (reported as skipped).
	Skip string
	// Description is free text about the case, for people.
	Description string

	Asserts []Assertion
	// AnswerSchema is a JSON Schema (compact) the run's final_answer must
	// validate against; nil when the case has none.
	AnswerSchema json.RawMessage
	Files        []FileCheck

	// Err is why the case cannot run (bad JSON, unknown field, a jq
	// assertion that does not compile, a missing fixture, a duplicate
	// name, ...): one line naming FILE:LINE and the field path. The suite
	// still runs its other cases.
	Err error
}

// Where is the case's place as errors name it: "cases.jsonl:3".
func (c *Case) Where() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// Flags are the run's flags of a case, named as `tact run`'s flags with _
// for -; marshalled, only the flags given appear (a recorder may write a
// case's flags with encoding/json). Unset fields keep the command's own value (the settings of `tact
// test run`); paths are absolute after Load.
type Flags struct {
	AllowTools []string `json:"allow_tools,omitempty"`
	NoPlan     bool     `json:"no_plan,omitempty"`
	NoAsk      bool     `json:"no_ask,omitempty"`
	ReadOnly   bool     `json:"read_only,omitempty"`
	Yes        bool     `json:"yes,omitempty"`
	NoNetwork  bool     `json:"no_network,omitempty"`

	MaxIterations   *int `json:"max_iterations,omitempty"`
	RetryBuffer     *int `json:"retry_buffer,omitempty"`
	ReplanThreshold *int `json:"replan_threshold,omitempty"`
	StallThreshold  *int `json:"stall_threshold,omitempty"`
	TokenBudget     *int `json:"token_budget,omitempty"`
	MaxTokens       *int `json:"max_tokens,omitempty"`
	// Seed and Temperature fix sampling for a live run; the trials of a
	// case vary the seed from Seed when it is set.
	Seed        *int64   `json:"seed,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`

	// Timeout bounds one trial (the run's --timeout: exit 7 when hit);
	// ToolTimeout one run_command.
	Timeout     Duration `json:"timeout,omitempty"`
	ToolTimeout Duration `json:"tool_timeout,omitempty"`

	// Schema is the run's --schema: in the case an inline schema or the
	// path of a schema file; after Load the schema itself, compact.
	Schema json.RawMessage `json:"schema,omitempty"`
	// StopWhen is the run's --stop-when jq expression (checked to compile).
	StopWhen       string   `json:"stop_when,omitempty"`
	SuccessPhrases []string `json:"success_phrases,omitempty"`
	FailurePhrases []string `json:"failure_phrases,omitempty"`
	// Sandbox and OnApproval take the values of --sandbox and
	// --on-approval.
	Sandbox    string `json:"sandbox,omitempty"`
	OnApproval string `json:"on_approval,omitempty"`
	// Env holds KEY=VALUE pairs for run_command (--env).
	Env []string `json:"env,omitempty"`

	// Policy and Hooks are the files of --policy and --hooks; Files the
	// context files of -f. Relative paths in the case resolve against the
	// case file's directory.
	Policy string   `json:"policy,omitempty"`
	Hooks  string   `json:"hooks,omitempty"`
	Files  []string `json:"files,omitempty"`
}

// Duration is a Go duration written as a string ("90s", "5m").
type Duration time.Duration

// UnmarshalJSON reads "90s"; a bare number is refused, its unit unknown.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"90s\", got %s", text.JSONKind(b))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (want a number with a unit, e.g. 90s, 5m or 1h30m)", s)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// D is the duration as a time.Duration (0: not given).
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as UnmarshalJSON reads it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Assertion is one jq expression over the run's --json document; it passes
// when the expression yields exactly one value, true.
type Assertion struct {
	JQ   string `json:"jq"`
	Name string `json:"name,omitempty"` // optional; reports show it instead of the expression
}

// Label is how reports name the assertion: its name, else its expression.
func (a Assertion) Label() string {
	if a.Name != "" {
		return a.Name
	}
	return "jq " + clip(a.JQ)
}

// FileCheck is one check of the workspace after a trial. Exactly one of
// Exists, Absent, Contains and Unchanged is given.
type FileCheck struct {
	Path      string  `json:"path"` // relative to the workspace, inside it
	Exists    bool    `json:"exists,omitempty"`
	Absent    bool    `json:"absent,omitempty"`
	Contains  *string `json:"contains,omitempty"`
	Unchanged bool    `json:"unchanged,omitempty"` // byte for byte as in the fixture
	Name      string  `json:"name,omitempty"`      // optional, as Assertion's
}

// Kind is the check's kind: "exists", "absent", "contains" or "unchanged".
func (f FileCheck) Kind() string {
	switch {
	case f.Exists:
		return "exists"
	case f.Absent:
		return "absent"
	case f.Contains != nil:
		return "contains"
	case f.Unchanged:
		return "unchanged"
	}
	return ""
}

// Label is how reports name the check: its name, else "PATH KIND".
func (f FileCheck) Label() string {
	if f.Name != "" {
		return f.Name
	}
	if f.Contains != nil {
		return fmt.Sprintf("%s contains %s", f.Path, excerpt(*f.Contains))
	}
	return f.Path + " " + f.Kind()
}

// clip makes s one line of at most about 60 bytes for a label.
func clip(s string) string {
	const keep = 60
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > keep {
		cut := keep
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not in the middle of a rune
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// excerpt is clip quoted, for a value inside a message.
func excerpt(s string) string { return strconv.Quote(clip(s)) }
