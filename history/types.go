package history

import "time"

// Run is what a run's caller knows when it starts. Text fields hold what the
// caller passes, already redacted: the store never redacts, parses or
// validates them. JSON fields (Plan, Settings) are opaque JSON text.
type Run struct {
	ID          string // given by the caller; unique across the store
	ParentID    string // the run that started this one (a batch, a serve session), if any
	ResumedFrom string // the run this one continues (--continue, resume), if any
	Command     string // "run", "exec", "batch", "chat", "serve"...
	Workspace   string
	Query       string
	Plan        string // JSON text
	Backend     string
	Model       string
	Settings    string // JSON text: the settings that change behaviour
	StartedAt   time.Time
}

// Usage counts tokens.
type Usage struct {
	Prompt     int64
	Completion int64
	Cached     int64
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{Prompt: u.Prompt + v.Prompt, Completion: u.Completion + v.Completion, Cached: u.Cached + v.Cached}
}

// Step is one finished step of a run.
type Step struct {
	Index       int
	Thought     string
	Tool        string // the action's tool; empty for a step without one
	Args        string // the action's arguments, JSON text
	Decision    string
	Observation string // as the model saw it
	ExitCode    int
	StartedAt   time.Time
	Duration    time.Duration
	Usage       Usage
}

// Final is how a run ended. Zero totals (Usage, Steps) are filled in from
// the stored steps.
type Final struct {
	Answer   string
	Reason   string // "answered", "interrupted", "timeout", "budget", "stalled"...
	ExitCode int
	EndedAt  time.Time
	Usage    Usage // totals
	Steps    int
	Duration time.Duration
	Result   string // the run's full --json result document, JSON text
}

// ReasonInterrupted is the reason a record reads with when its run never
// ended (killed, crashed, or still running in another process).
const ReasonInterrupted = "interrupted"

// Record is a stored run as read back. Steps and trace events are read
// separately (Store.Steps, Store.Events).
type Record struct {
	Run
	Ended    bool // End was recorded; when false Reason is ReasonInterrupted
	Answer   string
	Reason   string
	ExitCode int // meaningful only when Ended
	EndedAt  time.Time
	Usage    Usage // totals
	Steps    int   // step count: Final.Steps, else the steps stored
	Duration time.Duration
	Result   string // JSON text
	// DroppedEvents counts the trace events this run lost because the
	// recorder's buffer was full: its trace is incomplete when non-zero.
	DroppedEvents int64
}

// Filter selects runs for List. Zero fields do not filter.
type Filter struct {
	Since, Until time.Time // on the start time: Since <= start < Until
	Reason       string    // "interrupted" matches runs that never ended
	Exit         *int
	Workspace    string
	// Query is full-text search over queries, answers, thoughts and
	// observations. Each whitespace-separated word must occur (AND);
	// words are matched literally: FTS5 syntax (quotes, *, NEAR, -, ())
	// has no effect. Blank text does not filter.
	Query string
	Limit int // default 20; negative: no limit
}
