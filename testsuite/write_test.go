package testsuite

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"
)

// sampleReport is a report with every kind of case: one passing in all 3
// trials, a flaky one (2 of 3, a check failing once, the cassette once),
// one whose trial could not run, a broken case, a skipped one.
func sampleReport(t *testing.T) *Report {
	t.Helper()
	dir := suiteDir(t,
		`{"name":"good","query":"q","description":"always passes","assert":[{"jq":".success","name":"succeeds"}]}`,
		`{"name":"flaky","query":"q","assert":[{"jq":".success","name":"succeeds"}]}`,
		`{"name":"unrunnable","query":"q","cassette":"cassettes/other.jsonl"}`,
		`{"name":"broken","query":"q","assert":[{"jq":".a |"}]}`,
		`{"name":"later","query":"q","skip":"needs a bigger model"}`,
	)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	u := func(p, c int64) Usage { return Usage{Prompt: p, Completion: c, Cached: p / 2} }
	results := []TrialResult{
		{Case: "flaky", Trial: 3, RunID: "f3", Reason: "success", Usage: u(100, 10), Duration: time.Second},
		{Case: "good", Trial: 1, RunID: "g1", Reason: "success", Usage: u(100, 10), Duration: time.Second},
		{Case: "good", Trial: 2, RunID: "g2", Reason: "success", Usage: u(100, 10), Duration: time.Second},
		{Case: "good", Trial: 3, RunID: "g3", Reason: "success", Usage: u(100, 10), Duration: time.Second},
		{Case: "flaky", Trial: 1, RunID: "f1", ExitCode: 3, Reason: "failure", Usage: u(200, 20), Duration: 2 * time.Second,
			Failures: []Failure{{Check: "succeeds", Message: "yielded false, want true"}, {Check: "out.txt exists", Message: "missing: no such file or directory"}}},
		{Case: "flaky", Trial: 2, RunID: "f2", ExitCode: 0, Reason: "success", Usage: u(100, 10), Duration: time.Second,
			Mismatches: []string{"reply 2 was recorded for another prompt: the system prompt differs at byte 120"}},
		{Case: "unrunnable", Trial: 1, Error: "cassette cassettes/other.jsonl was recorded for case \"other\""},
		{Case: "nosuch", Trial: 1, RunID: "x"},
	}
	r := NewReport(s, 3, results)
	r.Mode, r.Model, r.Started, r.Duration = "live", "tiny.gguf", time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 9*time.Second
	return r
}

func TestNewReport(t *testing.T) {
	r := sampleReport(t)
	want := []struct {
		name, status   string
		trials, passed int
		p1, pk         float64
		tokens         int64
	}{
		{"good", StatusPassed, 3, 3, 1, 1, 330},
		{"flaky", StatusFailed, 3, 1, 1.0 / 3, 1, 440},
		{"unrunnable", StatusError, 1, 0, 0, 0, 0},
		{"broken", StatusError, 0, 0, 0, 0, 0},
		{"later", StatusSkipped, 0, 0, 0, 0, 0},
	}
	if len(r.Cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(r.Cases), len(want))
	}
	for i, w := range want {
		c := r.Cases[i]
		if c.Case.Name != w.name || c.Status != w.status || len(c.Trials) != w.trials || c.Passed != w.passed ||
			c.PassAt1 != w.p1 || c.PassAtK != w.pk || c.Usage.Total() != w.tokens {
			t.Errorf("case %d: %s %s %d trials %d passed pass@1 %v pass@k %v tokens %d, want %+v",
				i, c.Case.Name, c.Status, len(c.Trials), c.Passed, c.PassAt1, c.PassAtK, c.Usage.Total(), w)
		}
	}
	flaky := r.Cases[1]
	if flaky.Trials[0].Trial != 1 || flaky.Trials[2].Trial != 3 {
		t.Errorf("trials not in order: %+v", flaky.Trials)
	}
	if got := countsLine(flaky.FailureCounts); got != "cassette (1), out.txt exists (1), succeeds (1)" {
		t.Errorf("failure counts %q", got)
	}
	tot := r.Totals()
	if tot.Cases != 5 || tot.Passed != 1 || tot.Failed != 1 || tot.Errors != 2 || tot.Skipped != 1 ||
		tot.Trials != 7 || tot.TrialsPassed != 4 || tot.Usage.Total() != 770 {
		t.Errorf("totals %+v", tot)
	}
	if r.OK() {
		t.Error("OK with failures")
	}
	if !NewReport(&Suite{Cases: []*Case{r.Cases[0].Case}}, 1, []TrialResult{{Case: "good", Trial: 1}}).OK() {
		t.Error("a passing report is not OK")
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport(t).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"CASE        RESULT     PASS@1  PASS@3  TOKENS  TIME  FAILED CHECKS\n",
		"good        3/3        1.00    1.00    330     3.0s",
		"flaky       1/3        0.33    1.00    440     4.0s  cassette (1), out.txt exists (1), succeeds (1)\n",
		"unrunnable  0/1 error  0.00    0.00    0       0.0s  error (1)\n",
		"broken      error",
		"assert[0].jq: does not compile",
		"later       skipped",
		"needs a bigger model",
		"flaky #1: succeeds: yielded false, want true\n",
		"flaky #1: out.txt exists: missing: no such file or directory\n",
		"flaky #2: cassette: reply 2 was recorded for another prompt",
		`unrunnable #1: could not run: cassette cassettes/other.jsonl was recorded for case "other"`,
		"5 cases: 1 passed, 1 failed, 2 errors, 1 skipped; 7 trials, 4 passed; 770 tokens (700 prompt, 70 completion); 9.0s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport(t).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b.Bytes(), []byte("\n")) != 1 {
		t.Errorf("not one line: %s", b.String())
	}
	var doc struct {
		Suite, Mode, Model string
		K                  int
		StartedAt          string `json:"started_at"`
		DurationMS         int64  `json:"duration_ms"`
		OK                 bool
		Totals             map[string]any
		Cases              []map[string]any
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Mode != "live" || doc.K != 3 || doc.OK || doc.StartedAt != "2026-11-29T07:00:00Z" || doc.DurationMS != 9000 || len(doc.Cases) != 5 {
		t.Errorf("document head: %+v", doc)
	}
	if doc.Totals["trials_passed"] != 4.0 || doc.Totals["token_usage"].(map[string]any)["prompt_tokens"] != 700.0 {
		t.Errorf("totals %v", doc.Totals)
	}
	flaky := doc.Cases[1]
	if flaky["status"] != "failed" || flaky["pass_at_1"].(float64) < 0.33 || flaky["pass_at_k"] != 1.0 ||
		flaky["failure_counts"].(map[string]any)["succeeds"] != 1.0 {
		t.Errorf("flaky %v", flaky)
	}
	res := flaky["results"].([]any)[0].(map[string]any)
	if res["run_id"] != "f1" || res["passed"] != false || len(res["failures"].([]any)) != 2 {
		t.Errorf("flaky trial 1 %v", res)
	}
	broken := doc.Cases[3]
	if broken["status"] != "error" || broken["pass_at_1"] != nil || !strings.Contains(broken["error"].(string), "assert[0].jq: does not compile") {
		t.Errorf("broken %v", broken)
	}
	if doc.Cases[4]["skip"] != "needs a bigger model" {
		t.Errorf("skipped %v", doc.Cases[4])
	}
}

// junitFile writes the sample report's JUnit XML to a file.
func junitFile(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := sampleReport(t).WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestJUnitValidates: the JUnit file validates against the Jenkins xUnit
// plugin's published schema (testdata/junit-10.xsd), checked by xmllint.
// CI installs xmllint (scripts/install-deps.sh): there a missing one fails.
func TestJUnitValidates(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is not installed (apt libxml2-utils; scripts/install-deps.sh installs it)")
		}
		t.Skip("xmllint is not installed (apt libxml2-utils)")
	}
	p := junitFile(t)
	out, err := exec.Command("xmllint", "--noout", "--schema", "testdata/junit-10.xsd", p).CombinedOutput()
	if err != nil {
		raw, _ := os.ReadFile(p)
		t.Fatalf("xmllint: %v\n%s\n%s", err, out, raw)
	}
	// The check can fail: a file without a required attribute does not
	// validate.
	bad := filepath.Join(t.TempDir(), "bad.xml")
	if err := os.WriteFile(bad, []byte(`<testsuites><testsuite name="x" tests="1"><testcase name="a"/></testsuite></testsuites>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("xmllint", "--noout", "--schema", "testdata/junit-10.xsd", bad).CombinedOutput(); err == nil {
		t.Fatalf("xmllint accepted a testsuite without failures and errors:\n%s", out)
	}
}

// TestJUnitConsumer: a real JUnit reader (github.com/joshdk/go-junit, as
// CI reporters use) reads the counts, names, statuses and messages the
// report has.
func TestJUnitConsumer(t *testing.T) {
	suites, err := junit.IngestFile(junitFile(t))
	if err != nil {
		t.Fatal(err)
	}
	type test struct{ name, status, message string }
	want := map[string][]test{
		"good": {{"good #1", "passed", ""}, {"good #2", "passed", ""}, {"good #3", "passed", ""}},
		"flaky": {
			{"flaky #1", "failed", "succeeds: yielded false, want true (and 1 more)"},
			{"flaky #2", "failed", "cassette: reply 2 was recorded for another prompt: the system prompt differs at byte 120"},
			{"flaky #3", "passed", ""}},
		"unrunnable": {{"unrunnable #1", "error", `cassette cassettes/other.jsonl was recorded for case "other"`}},
		"broken":     {{"broken", "error", "assert[0].jq: does not compile"}},
		"later":      {{"later", "skipped", "needs a bigger model"}},
	}
	if len(suites) != len(want) {
		t.Fatalf("%d suites, want %d", len(suites), len(want))
	}
	var total junit.Totals
	for _, s := range suites {
		w, ok := want[s.Name]
		if !ok || len(s.Tests) != len(w) {
			t.Errorf("suite %q: %d tests, want %d", s.Name, len(s.Tests), len(w))
			continue
		}
		for i, tc := range s.Tests {
			if tc.Name != w[i].name || string(tc.Status) != w[i].status || !strings.Contains(tc.Message, w[i].message) {
				t.Errorf("%s test %d: %q %s %q, want %+v", s.Name, i, tc.Name, tc.Status, tc.Message, w[i])
			}
			if tc.Classname != "cases" {
				t.Errorf("%s: classname %q", tc.Name, tc.Classname)
			}
		}
		total.Tests += s.Totals.Tests
		total.Passed += s.Totals.Passed
		total.Failed += s.Totals.Failed
		total.Error += s.Totals.Error
		total.Skipped += s.Totals.Skipped
		total.Duration += s.Totals.Duration
	}
	if total.Tests != 9 || total.Passed != 4 || total.Failed != 2 || total.Error != 2 || total.Skipped != 1 || total.Duration != 7*time.Second {
		t.Errorf("totals %+v", total)
	}
	flaky := suites[1]
	if flaky.Properties["pass_at_3"] != "1.0000" || flaky.Properties["pass_at_1"] != "0.3333" || flaky.Properties["prompt_tokens"] != "400" ||
		flaky.Properties["model"] != "tiny.gguf" {
		t.Errorf("flaky properties %v", flaky.Properties)
	}
	if out := flaky.Tests[0].SystemOut; !strings.Contains(out, "run_id: f1\nexit_code: 3\nreason: failure") {
		t.Errorf("system-out %q", out)
	}
}

// TestWriteTableOneTrial: with one trial a case, pass@K is pass@1 and
// gets no column of its own.
func TestWriteTableOneTrial(t *testing.T) {
	s, err := Load(suiteDir(t, `{"name":"a","query":"q"}`, `{"name":"b","query":"q","skip":"later"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReport(s, 1, []TrialResult{{Case: "a", Trial: 1, Usage: Usage{Prompt: 90, Completion: 10}, Duration: 1500 * time.Millisecond}})
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := "CASE  RESULT   PASS@1  TOKENS  TIME  FAILED CHECKS\n" +
		"a     1/1      1.00    100     1.5s  \n" +
		"b     skipped                        later\n" +
		"2 cases: 1 passed, 0 failed, 0 errors, 1 skipped; 1 trials, 1 passed; 100 tokens (90 prompt, 10 completion); 0.0s\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// The table goes to a terminal: a control character in a check's name or
// message (an edited case file, a model's answer) is written escaped.
func TestTableEscapesControls(t *testing.T) {
	r := &Report{K: 1, Cases: []*CaseReport{{Case: &Case{Name: "c"}, Status: StatusFailed,
		Trials:        []TrialResult{{Case: "c", Trial: 1, Failures: []Failure{{Check: "red \x1b[31m", Message: "nul \x00 bidi \u202e"}}}},
		FailureCounts: map[string]int{"red \x1b[31m": 1}}}}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x00\u202e") {
		t.Fatalf("raw control characters in the table: %q", out)
	}
	for _, want := range []string{`red \u001b[31m (1)`, `c #1: red \u001b[31m: nul \u0000 bidi \u202e`} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// With one trial a case, the JUnit file names pass@1 once (pass@K is it).
func TestJUnitOneTrialOnePassAt(t *testing.T) {
	s, err := Load(suiteDir(t, `{"name":"a","query":"q"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReport(s, 1, []TrialResult{{Case: "a", Trial: 1}})
	var b bytes.Buffer
	if err := r.WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `name="pass_at_1"`); n != 1 {
		t.Errorf("%d pass_at_1 properties, want 1:\n%s", n, b.String())
	}
}
