package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/outfile"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
	"golang.org/x/term"
)

// logOptions is tact log's test seam: everything it needs, parsed.
type logOptions struct {
	IO *iostreams
	// DBPath is the run history's file (history.DefaultPath).
	DBPath func() (string, error)
	// Terminal: standard output is a terminal, so the list has a header
	// and aligned columns and its text is sanitized; else tab-separated
	// rows without a header, for scripts. Width is the terminal's width
	// (0: unknown).
	Terminal bool
	Width    int
	Now      func() time.Time

	JSON      bool
	Since     string
	Until     string
	Reason    string
	Exit      *int // nil: any exit code
	Workspace string
	Limit     int
	Query     string
}

// logShowOptions is tact log show's test seam.
type logShowOptions struct {
	IO       *iostreams
	DBPath   func() (string, error)
	Terminal bool
	Run      string // an id, a unique id prefix, or "last"
	Trace    bool
}

// newLogCmd makes tact log and tact log show; runF and showF (nil: logRun,
// logShowRun) run them, for tests.
func newLogCmd(f *factory, runF func(context.Context, *logOptions) error, showF func(context.Context, *logShowOptions) error) *cobra.Command {
	o := &logOptions{IO: f.IO, DBPath: history.DefaultPath, Now: time.Now}
	var exit int
	cmd := &cobra.Command{
		Use:   "log",
		Short: "List recent runs from the run history",
		Long: "List the recorded runs (run, exec, each batch query, chat turn and serve run), newest\n" +
			"first, one a line: id, start time, command, workspace, query, termination reason, exit\n" +
			"code, duration and tokens. On a terminal the columns are aligned under a header; piped,\n" +
			"they are tab-separated, without a header. --json prints one JSON object a run (JSONL).\n" +
			"The history is $XDG_STATE_HOME/tact/runs.db (see docs/history.md).\n\n" +
			"--since and --until take a duration ago (90m, 24h, 7d, 2w), a date (2026-11-25, midnight\n" +
			"local time), a local time (2026-11-25 14:03) or RFC 3339 (2026-11-25T14:03:00Z).",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.Exit = nil
			if c.Flags().Changed("exit") {
				o.Exit = &exit
			}
			o.Terminal, o.Width = stdoutTerminal(o.IO)
			if runF != nil {
				return runF(c.Context(), o)
			}
			return logRun(c.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.JSON, "json", false, "one JSON object per run and line, with every recorded field")
	fl.StringVar(&o.Since, "since", "", "runs started at or after `TIME` (24h, 7d, 2026-11-25, RFC 3339)")
	fl.StringVar(&o.Until, "until", "", "runs started before `TIME` (same forms as --since)")
	fl.StringVar(&o.Reason, "reason", "", "runs that ended for `REASON` (success, failure, ..., interrupted)")
	fl.IntVar(&exit, "exit", 0, "runs that exited with `CODE`")
	fl.StringVar(&o.Workspace, "workspace", "", "runs in workspace `DIR` (. is the current directory)")
	fl.IntVarP(&o.Limit, "limit", "n", history.DefaultListLimit, "at most `N` runs (0: all)")
	fl.StringVarP(&o.Query, "query", "q", "", "runs whose query, answer, thoughts or observations hold every word of `TEXT`")
	cmd.AddCommand(newLogShowCmd(f, showF))
	return cmd
}

func newLogShowCmd(f *factory, runF func(context.Context, *logShowOptions) error) *cobra.Command {
	o := &logShowOptions{IO: f.IO, DBPath: history.DefaultPath}
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Print a recorded run's --json result, or its trace",
		Long: "Print the result document of RUN (an id, a unique id prefix, or \"last\" for the newest\n" +
			"run) as its --json printed it. A run that never ended (killed, or still running) gets\n" +
			"the same shape built from its recorded steps, with termination_reason \"interrupted\".\n" +
			"--trace prints the run's trace events instead, one JSON line each, as --trace wrote them.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Run = args[0]
			o.Terminal, _ = stdoutTerminal(o.IO)
			if runF != nil {
				return runF(c.Context(), o)
			}
			return logShowRun(c.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Trace, "trace", false, "print the run's trace events (JSONL) instead of its result")
	return cmd
}

// stdoutTerminal says whether tact's standard output is a terminal, and its
// width. tact's own stdout is an outfile.Writer over os.Stdout
// (systemStreams); tests pass buffers, which are not.
func stdoutTerminal(ios *iostreams) (bool, int) {
	var fd int
	switch w := ios.Out.(type) {
	case *outfile.Writer:
		fd = int(os.Stdout.Fd())
	case *os.File:
		fd = int(w.Fd())
	default:
		return false, 0
	}
	if !term.IsTerminal(fd) {
		return false, 0
	}
	width, _, err := term.GetSize(fd)
	if err != nil {
		width = 0
	}
	return true, width
}

func logRun(ctx context.Context, o *logOptions) error {
	filter, err := o.filter()
	if err != nil {
		return err
	}
	st, err := openHistory(o.DBPath)
	if err != nil || st == nil {
		return err // nil, nil: no history yet, so no runs
	}
	defer st.Close()
	recs, err := st.List(ctx, filter)
	if err != nil {
		return historyError(err)
	}
	var buf bytes.Buffer
	if o.JSON {
		err = writeLogJSON(&buf, recs)
	} else {
		err = writeLogTable(&buf, recs, o.Terminal, o.Width)
	}
	if err != nil {
		return err
	}
	out := buf.Bytes()
	if o.Terminal && o.JSON {
		out = termJSON(out) // the table's cells are sanitized one by one
	}
	_, err = o.IO.Out.Write(out)
	return err
}

// filter turns the flags into a history.Filter; a bad value is a usage
// error naming its flag.
func (o *logOptions) filter() (history.Filter, error) {
	now := o.Now()
	f := history.Filter{Exit: o.Exit, Query: o.Query, Limit: o.Limit}
	var err error
	if f.Since, err = parseLogTime(o.Since, now); err != nil {
		return f, badInputf("--since %s: %v", strconv.Quote(o.Since), err)
	}
	if f.Until, err = parseLogTime(o.Until, now); err != nil {
		return f, badInputf("--until %s: %v", strconv.Quote(o.Until), err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, badInputf("--since %s is not before --until %s", strconv.Quote(o.Since), strconv.Quote(o.Until))
	}
	if o.Reason != "" {
		if !slices.Contains(logReasons, o.Reason) {
			return f, badInputf("--reason %s: not a termination reason (want one of %s)", strconv.Quote(o.Reason), strings.Join(logReasons, ", "))
		}
		f.Reason = o.Reason
	}
	switch {
	case o.Limit < 0:
		return f, badInputf("-n %d: want 0 (all) or more", o.Limit)
	case o.Limit == 0:
		f.Limit = -1 // the store's "no limit"
	}
	if o.Workspace != "" {
		if f.Workspace, err = workspaceKey(o.Workspace); err != nil {
			return f, badInputf("--workspace %s: %v", strconv.Quote(o.Workspace), err)
		}
	}
	return f, nil
}

// logReasons are the reasons --reason accepts: the run's termination
// reasons (react.Reason, as --json's termination_reason) and the store's
// "interrupted" for a run that never ended.
var logReasons = func() []string {
	var out []string
	for _, r := range react.Reasons {
		out = append(out, string(r))
	}
	return append(out, history.ReasonInterrupted)
}()

// workspaceKey is dir as the engine records a workspace (tools.NewEnv: the
// absolute path, symlinks evaluated). A directory that is gone keeps its
// absolute, clean path, so its old runs can still be listed.
func workspaceKey(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return abs, nil
}

// durationAgo is a whole number of days or weeks, which time.ParseDuration
// lacks.
var durationAgo = regexp.MustCompile(`^(\d{1,5})([dw])$`)

// parseLogTime reads --since/--until: a duration ago (Go's units, plus d
// and w), a date or a minute in local time, or RFC 3339. "" is the zero
// time (no bound).
func parseLogTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if m := durationAgo.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1]) // the pattern bounds it
		days := n
		if m[2] == "w" {
			days = 7 * n
		}
		return now.AddDate(0, 0, -days), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("a negative duration")
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("not a time (want a duration ago like 24h or 7d, a date like 2026-11-25, or RFC 3339)")
}

// logColumns are the list's columns, in order.
var logColumns = []string{"ID", "WHEN", "COMMAND", "WORKSPACE", "QUERY", "REASON", "EXIT", "DURATION", "TOKENS"}

// Indexes in logColumns; the query is cut to fit a terminal after the
// others give way (logLayout).
const (
	logCommandColumn   = 2
	logWorkspaceColumn = 3
	logQueryColumn     = 4
	logDurationColumn  = 7
	logTokensColumn    = 8
	workspaceCut       = 24
)

// longestCell is the most runes of column c in rows.
func longestCell(rows [][]string, c int) int {
	n := 0
	for _, row := range rows {
		n = max(n, len([]rune(row[c])))
	}
	return n
}

// clipLeft keeps the last n runes of s behind "…" when it is longer.
func clipLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-(n-1):])
}

// writeLogTable writes recs one a line. On a terminal: a header, aligned
// columns, the home directory as ~, every cell sanitized and the query cut
// to the terminal's width. Else tab-separated cells, no header, each on
// one line (runs of whitespace made one space) and otherwise whole.
func writeLogTable(w io.Writer, recs []history.Record, terminal bool, width int) error {
	home, _ := os.UserHomeDir()
	rows := make([][]string, len(recs))
	for i, r := range recs {
		rows[i] = logCells(r, terminal, home)
	}
	if !terminal {
		for _, row := range rows {
			if _, err := io.WriteString(w, strings.Join(row, "\t")+"\n"); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		return nil
	}
	cols, budget := logLayout(rows, width)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	pick := func(row []string) string {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = row[c]
		}
		return strings.Join(cells, "\t")
	}
	fmt.Fprintln(tw, pick(logColumns))
	for _, row := range rows {
		row[logQueryColumn] = text.Clip(row[logQueryColumn], budget)
		fmt.Fprintln(tw, pick(row))
	}
	return tw.Flush()
}

// logLayout is which columns a terminal of width shows, and how many runes
// of the query: the query is what a reader scans for, so before it is cut
// below its length (or wantQuery) long workspaces give up their beginning
// (/srv/customers/acme/app: …/acme/app), then TOKENS, DURATION, COMMAND
// and WORKSPACE give way, in that order. rows' workspaces may be cut.
func logLayout(rows [][]string, width int) (cols []int, budget int) {
	const wantQuery = 40
	for c := range logColumns {
		cols = append(cols, c)
	}
	want := min(longestCell(rows, logQueryColumn), wantQuery)
	budget = queryBudget(rows, cols, width)
	if width <= 0 || budget >= longestCell(rows, logQueryColumn) {
		return cols, budget
	}
	for _, row := range rows {
		row[logWorkspaceColumn] = clipLeft(row[logWorkspaceColumn], workspaceCut)
	}
	budget = queryBudget(rows, cols, width)
	for _, drop := range []int{logTokensColumn, logDurationColumn, logCommandColumn, logWorkspaceColumn} {
		if budget >= want {
			break
		}
		cols = slices.DeleteFunc(cols, func(c int) bool { return c == drop })
		budget = queryBudget(rows, cols, width)
	}
	return cols, budget
}

// queryBudget is how many runes of the query fit on a line of width
// beside the other columns of cols (at least 20; 50 when the width is
// unknown).
func queryBudget(rows [][]string, cols []int, width int) int {
	const minQuery, unknownWidth, gap = 20, 50, 2
	if width <= 0 {
		return unknownWidth
	}
	used := 0
	for _, c := range cols {
		if c == logQueryColumn {
			continue
		}
		used += max(len([]rune(logColumns[c])), longestCell(rows, c)) + gap
	}
	return max(minQuery, width-used-1)
}

// logCells are r's cells in logColumns order.
func logCells(r history.Record, terminal bool, home string) []string {
	cell := text.OneLine
	if terminal {
		cell = termCell
	}
	ws := r.Workspace
	if terminal && home != "" && (ws == home || strings.HasPrefix(ws, home+string(filepath.Separator))) {
		ws = "~" + ws[len(home):]
	}
	exit := "-"
	if r.Ended {
		exit = strconv.Itoa(r.ExitCode)
	}
	return []string{
		cell(r.ID),
		r.StartedAt.Local().Format("2006-01-02 15:04"),
		orDash(cell(r.Command)),
		orDash(cell(ws)),
		orDash(cell(r.Query)),
		orDash(cell(r.Reason)),
		exit,
		formatRunDuration(r.Duration),
		strconv.FormatInt(r.Usage.Prompt+r.Usage.Completion, 10),
	}
}

// orDash keeps an empty cell from vanishing from a row.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatRunDuration is d for the list: 45ms, 2.4s, 12s, 3m04s, 1h02m ("-"
// for none, as a run that never ended has).
func formatRunDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// logRecord is a run in tact log --json: every field of history.Record.
type logRecord struct {
	ID            string          `json:"id"`
	ParentID      string          `json:"parent_id"`
	ResumedFrom   string          `json:"resumed_from"`
	Command       string          `json:"command"`
	Workspace     string          `json:"workspace"`
	Query         string          `json:"query"`
	Plan          json.RawMessage `json:"plan"`
	Backend       string          `json:"backend"`
	Model         string          `json:"model"`
	Settings      json.RawMessage `json:"settings"`
	StartedAt     string          `json:"started_at"`
	Ended         bool            `json:"ended"`
	EndedAt       *string         `json:"ended_at"` // null: never ended
	Answer        string          `json:"answer"`
	Reason        string          `json:"reason"`
	ExitCode      *int            `json:"exit_code"` // null: never ended
	TokenUsage    logUsage        `json:"token_usage"`
	Steps         int             `json:"steps"`
	DurationMS    int64           `json:"duration_ms"`
	Result        json.RawMessage `json:"result"`
	DroppedEvents int64           `json:"dropped_events"`
}

type logUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
}

func newLogRecord(r history.Record) logRecord {
	out := logRecord{
		ID: r.ID, ParentID: r.ParentID, ResumedFrom: r.ResumedFrom, Command: r.Command, Workspace: r.Workspace,
		Query: r.Query, Plan: embedJSON(r.Plan), Backend: r.Backend, Model: r.Model, Settings: embedJSON(r.Settings),
		StartedAt: r.StartedAt.UTC().Format(time.RFC3339Nano), Ended: r.Ended, Answer: r.Answer, Reason: r.Reason,
		TokenUsage: logUsage{PromptTokens: r.Usage.Prompt, CompletionTokens: r.Usage.Completion, CachedTokens: r.Usage.Cached},
		Steps:      r.Steps, DurationMS: r.Duration.Milliseconds(), Result: embedJSON(r.Result), DroppedEvents: r.DroppedEvents,
	}
	if r.Ended {
		ended, code := r.EndedAt.UTC().Format(time.RFC3339Nano), r.ExitCode
		out.EndedAt, out.ExitCode = &ended, &code
	}
	return out
}

// embedJSON is stored JSON text as a value of the line: null when empty,
// compacted (a JSONL line has no newline), and a JSON string when the text
// is not JSON (the store keeps what it was given).
func embedJSON(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("null")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err == nil {
		return b.Bytes()
	}
	q, _ := text.JSON(s) // a string always encodes
	return q
}

func writeLogJSON(w io.Writer, recs []history.Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(newLogRecord(r)); err != nil {
			return err
		}
	}
	return nil
}

func logShowRun(ctx context.Context, o *logShowOptions) error {
	st, rec, err := openRun(ctx, o.DBPath, o.Run)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.Trace {
		return writeRunTrace(ctx, o, st, rec)
	}
	doc, err := runResult(ctx, st, rec)
	if err != nil {
		return err
	}
	if o.Terminal {
		doc = termJSON(doc)
	}
	_, err = o.IO.Out.Write(doc)
	return err
}

// writeRunTrace writes the run's trace events, one line each, a Write a
// line (a full disk leaves whole lines).
func writeRunTrace(ctx context.Context, o *logShowOptions, st *history.Store, rec history.Record) error {
	err := st.Events(ctx, rec.ID, func(line string) error {
		b := []byte(strings.TrimSuffix(line, "\n") + "\n")
		if o.Terminal {
			b = termJSON(b)
		}
		_, err := o.IO.Out.Write(b)
		return err
	})
	if err != nil {
		return historyError(err)
	}
	if rec.DroppedEvents > 0 {
		fmt.Fprintf(o.IO.ErrOut, "tact: warning: the trace of run %s is incomplete: %d events were dropped while it ran\n", rec.ID, rec.DroppedEvents)
	}
	return nil
}

// runResult is rec's --json result document, one line ending in a newline:
// as recorded when the run ended, else built from its steps.
func runResult(ctx context.Context, st *history.Store, rec history.Record) ([]byte, error) {
	if rec.Result != "" {
		return []byte(strings.TrimRight(rec.Result, "\n") + "\n"), nil
	}
	res, err := interruptedResult(ctx, st, rec)
	if err != nil {
		return nil, err
	}
	b, err := text.JSON(res)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// recordedResult is rec's result document decoded: the one recorded, else
// the one built from its steps.
func recordedResult(ctx context.Context, st *history.Store, rec history.Record) (*react.Result, error) {
	if rec.Result == "" {
		return interruptedResult(ctx, st, rec)
	}
	var res react.Result
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		return nil, fmt.Errorf("run %s: its recorded result is not a result document: %w", rec.ID, err)
	}
	return &res, nil
}

// interruptedResult is the result document of a run without one (it never
// ended): what the record and its steps hold, in --json's shape.
func interruptedResult(ctx context.Context, st *history.Store, rec history.Record) (*react.Result, error) {
	steps, err := st.Steps(ctx, rec.ID)
	if err != nil {
		return nil, historyError(err)
	}
	usage := rec.Usage
	if usage == (history.Usage{}) { // totals come with the end it never had
		for _, s := range steps {
			usage = usage.Add(s.Usage)
		}
	}
	res := &react.Result{
		RunID:             rec.ID,
		FinalAnswer:       rec.Answer,
		TerminationReason: react.Reason(rec.Reason),
		Iterations:        len(steps),
		TokenUsage:        llmUsage(usage),
		ExecutionTimeMS:   rec.Duration.Milliseconds(),
	}
	res.Trace.Steps = make([]react.StepTrace, 0, len(steps))
	for _, s := range steps {
		res.Trace.Steps = append(res.Trace.Steps, stepTrace(s))
	}
	return res, nil
}

// stepTrace is a stored step in the result document's trace.steps shape.
// The engine stores a step's index from 0 (agent.historyStep); a trace's
// iteration counts from 1.
func stepTrace(s history.Step) react.StepTrace {
	var args json.RawMessage
	if json.Valid([]byte(s.Args)) {
		args = json.RawMessage(s.Args)
	}
	return react.StepTrace{
		Iteration:   s.Index + 1,
		Thought:     s.Thought,
		Action:      react.ToolCall{Tool: s.Tool, Args: args},
		Observation: s.Observation,
		ExitCode:    s.ExitCode,
		Decision:    s.Decision,
		Timestamp:   s.StartedAt,
		TokenUsage:  llmUsage(s.Usage),
	}
}

func llmUsage(u history.Usage) llm.Usage {
	return llm.Usage{PromptTokens: int(u.Prompt), CompletionTokens: int(u.Completion), CachedTokens: int(u.Cached)}
}

// openHistory opens the run history for reading; (nil, nil) when there is
// none yet, which is not created just to be read. A store that cannot be
// opened is a usage error (exit 2) saying what is wrong with its path.
func openHistory(dbPath func() (string, error)) (*history.Store, error) {
	path, err := dbPath()
	if err != nil {
		return nil, badInput(err)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, badInputf("run history %s: %v", path, err)
	}
	st, err := history.Open(path, history.Options{})
	if err != nil {
		return nil, badInput(err)
	}
	return st, nil
}

// openRun opens the history and finds run (an id, a unique prefix, or
// "last"); the caller closes the store.
func openRun(ctx context.Context, dbPath func() (string, error), run string) (*history.Store, history.Record, error) {
	st, err := openHistory(dbPath)
	if err != nil {
		return nil, history.Record{}, err
	}
	if st == nil {
		return nil, history.Record{}, badInputf("run %s: no runs recorded yet", strconv.Quote(run))
	}
	rec, err := st.Get(ctx, run)
	if err != nil {
		st.Close()
		if errors.Is(err, history.ErrNotFound) {
			if run == history.LastRun {
				return nil, history.Record{}, badInputf("run %s: no runs recorded yet", strconv.Quote(run))
			}
			return nil, history.Record{}, badInputf("run %s: no such run (tact log lists them)", strconv.Quote(run))
		}
		return nil, history.Record{}, historyError(err)
	}
	return st, rec, nil
}

// historyError is a read's error: what is wrong with the store or the
// request is exit 2; anything else (an I/O error) is an internal error.
func historyError(err error) error {
	var amb *history.AmbiguousError
	switch {
	case errors.As(err, &amb), errors.Is(err, history.ErrNotFound), errors.Is(err, history.ErrCorrupt),
		errors.Is(err, history.ErrUnsafePath), errors.Is(err, history.ErrNewerSchema):
		return badInput(err)
	}
	return err
}
