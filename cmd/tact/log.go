package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/outfile"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/runrecord"
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
	book, err := runrecord.Open(o.DBPath)
	if err != nil || book == nil {
		return err // nil, nil: no history yet, so no runs
	}
	defer book.Close()
	recs, err := book.List(ctx, filter)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if o.JSON {
		err = runrecord.WriteJSONL(&buf, recs)
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
	if f.Since, err = runrecord.ParseTime(o.Since, now); err != nil {
		return f, badInputf("--since %s: %v", strconv.Quote(o.Since), err)
	}
	if f.Until, err = runrecord.ParseTime(o.Until, now); err != nil {
		return f, badInputf("--until %s: %v", strconv.Quote(o.Until), err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, badInputf("--since %s is not before --until %s", strconv.Quote(o.Since), strconv.Quote(o.Until))
	}
	if o.Reason != "" {
		if !slices.Contains(runrecord.Reasons, o.Reason) {
			return f, badInputf("--reason %s: not a termination reason (want one of %s)", strconv.Quote(o.Reason), strings.Join(runrecord.Reasons, ", "))
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
		if f.Workspace, err = runrecord.WorkspaceKey(o.Workspace); err != nil {
			return f, badInputf("--workspace %s: %v", strconv.Quote(o.Workspace), err)
		}
	}
	return f, nil
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

func logShowRun(ctx context.Context, o *logShowOptions) error {
	book, rec, err := runrecord.OpenRun(ctx, o.DBPath, o.Run)
	if err != nil {
		return err
	}
	defer book.Close()
	if o.Trace {
		return writeRunTrace(ctx, o, book, rec)
	}
	doc, err := book.ResultJSON(ctx, rec)
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
func writeRunTrace(ctx context.Context, o *logShowOptions, book *runrecord.Book, rec history.Record) error {
	err := book.Events(ctx, rec.ID, func(line string) error {
		b := []byte(strings.TrimSuffix(line, "\n") + "\n")
		if o.Terminal {
			b = termJSON(b)
		}
		_, err := o.IO.Out.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if rec.DroppedEvents > 0 {
		fmt.Fprintf(o.IO.ErrOut, "tact: warning: the trace of run %s is incomplete: %d events were dropped while it ran\n", rec.ID, rec.DroppedEvents)
	}
	return nil
}
