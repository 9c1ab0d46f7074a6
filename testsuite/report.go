package testsuite

import (
	"math"
	"sort"
	"time"
)

// Usage is the tokens a trial's run spent, as its --json token_usage says.
type Usage struct {
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
	Cached     int64 `json:"cached_tokens"`
}

// Add is u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{Prompt: u.Prompt + v.Prompt, Completion: u.Completion + v.Completion, Cached: u.Cached + v.Cached}
}

// Total is prompt plus completion tokens (cached ones are part of the
// prompt's).
func (u Usage) Total() int64 { return u.Prompt + u.Completion }

// TrialResult is one trial of one case: what the runner (suiterun) saw.
type TrialResult struct {
	Case     string // the case's Name
	Trial    int    // 1-based
	RunID    string // the run's id in the history ("" when it did not start)
	ExitCode int    // the run's exit code
	Reason   string // the run's termination_reason
	// Failures are the case's checks that did not pass (Case.Check).
	Failures []Failure
	// Mismatches are replies of the cassette recorded for another prompt
	// than the one the replay asked with: one line each.
	Mismatches []string
	// Error is why the trial could not run at all (not the run's own
	// failure, which its checks judge): one line.
	Error    string
	Usage    Usage
	Duration time.Duration
}

// Passed says the trial ran, every check passed and the cassette matched.
func (t TrialResult) Passed() bool {
	return t.Error == "" && len(t.Failures) == 0 && len(t.Mismatches) == 0
}

// Status of a case in a report.
const (
	StatusPassed  = "passed"  // every trial passed
	StatusFailed  = "failed"  // some trial ran and failed a check or its cassette
	StatusError   = "error"   // the case is broken, or a trial could not run
	StatusSkipped = "skipped" // the case says skip
)

// CaseReport is one case's trials, summed.
type CaseReport struct {
	Case   *Case
	Status string
	// Trials are the case's trials in trial order; none for a broken or
	// skipped case.
	Trials []TrialResult
	Passed int // trials that passed
	// PassAt1 is Passed/len(Trials); PassAtK the unbiased estimate that at
	// least one of K trials passes (PassAtK), with K the report's.
	PassAt1, PassAtK float64
	Usage            Usage
	Duration         time.Duration
	// FailureCounts counts, per check (Failure.Check; "cassette" for a
	// mismatch, "error" for a trial that could not run), the trials it
	// failed in.
	FailureCounts map[string]int
}

// Report is a suite's results.
type Report struct {
	Suite string // the suite's path, as given
	// Mode is "replay" (cassettes, no model) or "live"; Model names the
	// model of a live run. Both only label the report.
	Mode, Model string
	K           int // trials per case asked for: pass@K's K
	Started     time.Time
	Duration    time.Duration // the whole suite's wall time
	Cases       []*CaseReport
}

// NewReport sums results (any order) into a report over the suite's cases
// in suite order; k is the trials per case asked for. A broken case (Err)
// is reported as an error, a skipped one as skipped, whether or not
// results name them; results for names the suite does not have are
// dropped.
func NewReport(s *Suite, k int, results []TrialResult) *Report {
	r := &Report{Suite: s.Path, K: max(k, 1)}
	byCase := map[string][]TrialResult{}
	for _, t := range results {
		byCase[t.Case] = append(byCase[t.Case], t)
	}
	for _, c := range s.Cases {
		cr := &CaseReport{Case: c, FailureCounts: map[string]int{}}
		r.Cases = append(r.Cases, cr)
		switch {
		case c.Err != nil:
			cr.Status = StatusError
			continue
		case c.Skip != "":
			cr.Status = StatusSkipped
			continue
		}
		ts := byCase[c.Name]
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].Trial < ts[j].Trial })
		cr.Trials = ts
		errored := false
		for _, t := range ts {
			cr.Usage = cr.Usage.Add(t.Usage)
			cr.Duration += t.Duration
			if t.Passed() {
				cr.Passed++
			}
			if t.Error != "" {
				errored = true
				cr.FailureCounts["error"]++
			}
			if len(t.Mismatches) > 0 {
				cr.FailureCounts["cassette"]++
			}
			seen := map[string]bool{}
			for _, f := range t.Failures {
				if !seen[f.Check] { // a trial counts once per check
					seen[f.Check] = true
					cr.FailureCounts[f.Check]++
				}
			}
		}
		n := len(ts)
		switch {
		case n == 0 || errored:
			cr.Status = StatusError
		case cr.Passed == n:
			cr.Status = StatusPassed
		default:
			cr.Status = StatusFailed
		}
		if n > 0 {
			cr.PassAt1 = float64(cr.Passed) / float64(n)
			cr.PassAtK = PassAtK(n, cr.Passed, r.K)
		}
	}
	return r
}

// PassAtK is the unbiased estimator of pass@k from n trials of which c
// passed (Chen et al. 2021, "Evaluating Large Language Models Trained on
// Code"): 1 - C(n-c, k) / C(n, k), the chance that k trials drawn from
// the n without replacement hold at least one pass. k above n is taken as
// n (the estimate needs k <= n). It is computed as a product, so large n
// neither overflows nor loses precision to huge binomials.
func PassAtK(n, c, k int) float64 {
	if n <= 0 || c <= 0 {
		return 0
	}
	c = min(c, n)
	k = min(max(k, 1), n)
	if n-c < k {
		return 1
	}
	// C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i)
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return math.Max(0, math.Min(1, 1-p))
}

// Totals are the report's sums over its cases.
type Totals struct {
	Cases, Passed, Failed, Errors, Skipped int
	Trials, TrialsPassed                   int
	Usage                                  Usage
}

// Totals sums the report.
func (r *Report) Totals() Totals {
	var t Totals
	for _, c := range r.Cases {
		t.Cases++
		switch c.Status {
		case StatusPassed:
			t.Passed++
		case StatusFailed:
			t.Failed++
		case StatusError:
			t.Errors++
		case StatusSkipped:
			t.Skipped++
		}
		t.Trials += len(c.Trials)
		t.TrialsPassed += c.Passed
		t.Usage = t.Usage.Add(c.Usage)
	}
	return t
}

// OK says every case passed or was skipped: the suite's exit 0.
func (r *Report) OK() bool {
	t := r.Totals()
	return t.Failed == 0 && t.Errors == 0
}
