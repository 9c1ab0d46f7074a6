package testsuite

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// The --json document of `tact test run` (docs/testing.md, "The report
// document"): one object, its field names fixed.
type jsonReport struct {
	Suite      string     `json:"suite"`
	Mode       string     `json:"mode,omitempty"`
	Model      string     `json:"model,omitempty"`
	K          int        `json:"k"`
	StartedAt  string     `json:"started_at,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	OK         bool       `json:"ok"`
	Totals     jsonTotals `json:"totals"`
	Cases      []jsonCase `json:"cases"`
}

type jsonTotals struct {
	Cases        int   `json:"cases"`
	Passed       int   `json:"passed"`
	Failed       int   `json:"failed"`
	Errors       int   `json:"errors"`
	Skipped      int   `json:"skipped"`
	Trials       int   `json:"trials"`
	TrialsPassed int   `json:"trials_passed"`
	TokenUsage   Usage `json:"token_usage"`
}

type jsonCase struct {
	Name          string         `json:"name"`
	File          string         `json:"file"`
	Line          int            `json:"line"`
	Description   string         `json:"description,omitempty"`
	Status        string         `json:"status"`
	Error         string         `json:"error,omitempty"`
	Skip          string         `json:"skip,omitempty"`
	Trials        int            `json:"trials"`
	Passed        int            `json:"passed"`
	PassAt1       *float64       `json:"pass_at_1"`
	PassAtK       *float64       `json:"pass_at_k"`
	TokenUsage    Usage          `json:"token_usage"`
	DurationMS    int64          `json:"duration_ms"`
	FailureCounts map[string]int `json:"failure_counts"`
	Results       []jsonTrial    `json:"results"`
}

type jsonTrial struct {
	Trial      int       `json:"trial"`
	RunID      string    `json:"run_id"`
	ExitCode   int       `json:"exit_code"`
	Reason     string    `json:"reason"`
	Passed     bool      `json:"passed"`
	Failures   []Failure `json:"failures"`
	Mismatches []string  `json:"mismatches"`
	Error      string    `json:"error,omitempty"`
	TokenUsage Usage     `json:"token_usage"`
	DurationMS int64     `json:"duration_ms"`
}

// Error is why a case with status error could not run: the case's own
// error, else the first trial's that could not run.
func (c *CaseReport) Error() string {
	if c.Case.Err != nil {
		return c.Case.Err.Error()
	}
	for _, t := range c.Trials {
		if t.Error != "" {
			return t.Error
		}
	}
	if c.Status == StatusError && len(c.Trials) == 0 {
		return "no trial ran"
	}
	return ""
}

// WriteJSON writes the report as one JSON object and a newline (`tact test
// run --json`).
func (r *Report) WriteJSON(w io.Writer) error {
	t := r.Totals()
	doc := jsonReport{Suite: r.Suite, Mode: r.Mode, Model: r.Model, K: r.K, DurationMS: r.Duration.Milliseconds(), OK: r.OK(),
		Totals: jsonTotals{Cases: t.Cases, Passed: t.Passed, Failed: t.Failed, Errors: t.Errors, Skipped: t.Skipped,
			Trials: t.Trials, TrialsPassed: t.TrialsPassed, TokenUsage: t.Usage},
		Cases: []jsonCase{}}
	if !r.Started.IsZero() {
		doc.StartedAt = r.Started.UTC().Format(time.RFC3339Nano)
	}
	for _, c := range r.Cases {
		jc := jsonCase{Name: c.Case.Name, File: c.Case.File, Line: c.Case.Line, Description: c.Case.Description,
			Status: c.Status, Error: c.Error(), Skip: c.Case.Skip, Trials: len(c.Trials), Passed: c.Passed,
			TokenUsage: c.Usage, DurationMS: c.Duration.Milliseconds(), FailureCounts: c.FailureCounts,
			Results: []jsonTrial{}}
		if len(c.Trials) > 0 {
			p1, pk := c.PassAt1, c.PassAtK
			jc.PassAt1, jc.PassAtK = &p1, &pk
		}
		for _, tr := range c.Trials {
			jt := jsonTrial{Trial: tr.Trial, RunID: tr.RunID, ExitCode: tr.ExitCode, Reason: tr.Reason, Passed: tr.Passed(),
				Failures: tr.Failures, Mismatches: tr.Mismatches, Error: tr.Error, TokenUsage: tr.Usage,
				DurationMS: tr.Duration.Milliseconds()}
			if jt.Failures == nil {
				jt.Failures = []Failure{}
			}
			if jt.Mismatches == nil {
				jt.Mismatches = []string{}
			}
			jc.Results = append(jc.Results, jt)
		}
		doc.Cases = append(doc.Cases, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// maxDetailTrials bounds the failure lines the table prints for one case:
// k failing trials of a flaky case say the same thing k times.
const maxDetailTrials = 3

// WriteTable writes the report for people (`tact test run`'s stderr): a
// row a case (pass@K only when K > 1), its failed checks with how often, then one line a failed
// check of the first failing trials, and a summary line.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// With one trial a case pass@K is pass@1: one column says it.
	passK, blankK := "", ""
	if r.K > 1 {
		passK, blankK = fmt.Sprintf("PASS@%d\t", r.K), "\t"
	}
	fmt.Fprintf(tw, "CASE\tRESULT\tPASS@1\t%sTOKENS\tTIME\tFAILED CHECKS\n", passK)
	for _, c := range r.Cases {
		switch c.Status {
		case StatusSkipped:
			fmt.Fprintf(tw, "%s\tskipped\t\t%s\t\t%s\n", c.Case.Name, blankK, oneLine(c.Case.Skip))
			continue
		case StatusError:
			if len(c.Trials) == 0 {
				fmt.Fprintf(tw, "%s\terror\t\t%s\t\t%s\n", c.Case.Name, blankK, oneLine(c.Error()))
				continue
			}
		}
		result := fmt.Sprintf("%d/%d", c.Passed, len(c.Trials))
		if c.Status == StatusError {
			result += " error"
		}
		pk := ""
		if r.K > 1 {
			pk = fmt.Sprintf("%.2f\t", c.PassAtK)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s%d\t%s\t%s\n", c.Case.Name, result, c.PassAt1, pk,
			c.Usage.Total(), seconds(c.Duration), countsLine(c.FailureCounts))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Cases {
		shownTrials := 0
		for _, t := range c.Trials {
			if t.Passed() {
				continue
			}
			if shownTrials++; shownTrials > maxDetailTrials {
				fmt.Fprintf(w, "%s: and %d more failing trials (--json has them all)\n", c.Case.Name, len(c.Trials)-c.Passed-maxDetailTrials)
				break
			}
			at := fmt.Sprintf("%s #%d", c.Case.Name, t.Trial)
			if t.Error != "" {
				fmt.Fprintf(w, "%s: could not run: %s\n", at, oneLine(t.Error))
			}
			for _, m := range t.Mismatches {
				fmt.Fprintf(w, "%s: cassette: %s\n", at, oneLine(m))
			}
			for _, f := range t.Failures {
				fmt.Fprintf(w, "%s: %s: %s\n", at, oneLine(f.Check), oneLine(f.Message))
			}
		}
	}
	t := r.Totals()
	_, err := fmt.Fprintf(w, "%d cases: %d passed, %d failed, %d errors, %d skipped; %d trials, %d passed; %d tokens (%d prompt, %d completion); %s\n",
		t.Cases, t.Passed, t.Failed, t.Errors, t.Skipped, t.Trials, t.TrialsPassed, t.Usage.Total(), t.Usage.Prompt, t.Usage.Completion, seconds(r.Duration))
	return err
}

// countsLine is "check (n), check (m)", most frequent first.
func countsLine(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", oneLine(k), counts[k])
	}
	return strings.Join(parts, ", ")
}

// seconds is d as "3.2s", rounded to 0.1 s (below 10 s) or 1 s.
func seconds(d time.Duration) string {
	s := d.Seconds()
	if s < 10 {
		return fmt.Sprintf("%.1fs", math.Round(s*10)/10)
	}
	return fmt.Sprintf("%.0fs", s)
}
