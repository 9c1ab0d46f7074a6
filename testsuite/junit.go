package testsuite

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// JUnit XML as CI systems read it. The elements and attributes are those
// of the Jenkins xUnit plugin's junit-10.xsd (testsuite/testdata/junit-10.xsd,
// which the tests validate every report against): a <testsuite> a case,
// holding a <testcase> a trial, so a CI page groups a case's trials and
// counts each trial.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	File       string          `xml:"file,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string         `xml:"name,attr"`
	Classname string         `xml:"classname,attr"`
	Time      string         `xml:"time,attr"`
	Skipped   *junitProblem  `xml:"skipped"`
	Error     *junitProblem  `xml:"error"`
	Failure   *junitProblem  `xml:"failure"`
	SystemOut *junitCharData `xml:"system-out"`
}

type junitProblem struct {
	Type    string `xml:"type,attr,omitempty"`
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

type junitCharData struct {
	Text string `xml:",chardata"`
}

// Failure types in the JUnit file.
const (
	junitInvalidCase = "invalid_case"      // the case did not load (Case.Err)
	junitCouldNotRun = "could_not_run"     // TrialResult.Error
	junitCheck       = "check_failed"      // a check did not pass
	junitMismatch    = "cassette_mismatch" // the replay's prompt differs from the recording's
)

// WriteJUnit writes the report as JUnit XML (`tact test run --junit
// FILE`): a <testsuite> a case with its pass@1, pass@k and tokens as
// properties, and a <testcase> a trial (named CASE, or CASE #N with
// several trials) whose <failure> names the failed checks, <error> says
// why the trial could not run, <skipped> the case's skip reason, and
// whose <system-out> holds the run's id, exit code, reason and tokens.
func (r *Report) WriteJUnit(w io.Writer) error {
	doc := junitSuites{Name: "tact test " + r.Suite, Time: secs(r.Duration)}
	for _, c := range r.Cases {
		s := c.junitSuite(r)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Suites = append(doc.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func (c *CaseReport) junitSuite(r *Report) junitSuite {
	s := junitSuite{Name: c.Case.Name, Time: secs(c.Duration), File: fmt.Sprintf("%s:%d", c.Case.File, c.Case.Line)}
	if !r.Started.IsZero() {
		s.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(name, value string) {
		if value != "" {
			s.Properties = append(s.Properties, junitProperty{name, value})
		}
	}
	prop("description", c.Case.Description)
	prop("mode", r.Mode)
	prop("model", r.Model)
	prop("status", c.Status)
	if len(c.Trials) > 0 {
		prop("trials", strconv.Itoa(len(c.Trials)))
		prop("passed", strconv.Itoa(c.Passed))
		prop("pass_at_1", strconv.FormatFloat(c.PassAt1, 'f', 4, 64))
		if r.K > 1 { // with one trial pass@K is pass@1: one property says it
			prop("pass_at_"+strconv.Itoa(r.K), strconv.FormatFloat(c.PassAtK, 'f', 4, 64))
		}
		prop("prompt_tokens", strconv.FormatInt(c.Usage.Prompt, 10))
		prop("completion_tokens", strconv.FormatInt(c.Usage.Completion, 10))
		prop("cached_tokens", strconv.FormatInt(c.Usage.Cached, 10))
	}
	class := strings.TrimSuffix(filepath.Base(c.Case.File), filepath.Ext(c.Case.File))
	switch {
	case c.Case.Err != nil:
		s.Cases = []junitCase{{Name: c.Case.Name, Classname: class, Time: secs(0),
			Error: &junitProblem{Type: junitInvalidCase, Message: c.Case.Err.Error()}}}
		s.Tests, s.Errors = 1, 1
		return s
	case c.Status == StatusSkipped:
		s.Cases = []junitCase{{Name: c.Case.Name, Classname: class, Time: secs(0),
			Skipped: &junitProblem{Message: c.Case.Skip}}}
		s.Tests, s.Skipped = 1, 1
		return s
	}
	for _, t := range c.Trials {
		name := c.Case.Name
		if r.K > 1 || len(c.Trials) > 1 {
			name = fmt.Sprintf("%s #%d", c.Case.Name, t.Trial)
		}
		jc := junitCase{Name: name, Classname: class, Time: secs(t.Duration), SystemOut: &junitCharData{trialOut(t)}}
		switch {
		case t.Error != "":
			jc.Error = &junitProblem{Type: junitCouldNotRun, Message: t.Error}
			s.Errors++
		case !t.Passed():
			jc.Failure = failureOf(t)
			s.Failures++
		}
		s.Tests++
		s.Cases = append(s.Cases, jc)
	}
	return s
}

// failureOf is a failed trial's one <failure>: some consumers keep only
// one a test case, so its message is the first failed check and its text
// every one, a line each.
func failureOf(t TrialResult) *junitProblem {
	var lines []string
	typ := junitCheck
	for _, m := range t.Mismatches {
		lines = append(lines, "cassette: "+oneLine(m))
		typ = junitMismatch
	}
	for _, f := range t.Failures {
		lines = append(lines, f.Check+": "+oneLine(f.Message))
	}
	msg := lines[0]
	if len(lines) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(lines)-1)
	}
	return &junitProblem{Type: typ, Message: msg, Body: strings.Join(lines, "\n")}
}

// trialOut is a trial's <system-out>: what identifies its run.
func trialOut(t TrialResult) string {
	return fmt.Sprintf("run_id: %s\nexit_code: %d\nreason: %s\ntokens: %d prompt, %d completion, %d cached\n",
		t.RunID, t.ExitCode, t.Reason, t.Usage.Prompt, t.Usage.Completion, t.Usage.Cached)
}

// secs is d in seconds with millisecond precision, as JUnit's time
// attributes take it ("1.250").
func secs(d time.Duration) string { return strconv.FormatFloat(max(d, 0).Seconds(), 'f', 3, 64) }
