package suiterun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/agent/agenttest"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/runrecord"
	"github.com/tactcli/tact/testsuite"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func loadSuite(t *testing.T, dir string) *testsuite.Suite {
	t.Helper()
	s, err := testsuite.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Cases {
		if c.Err != nil {
			t.Fatal(c.Err)
		}
	}
	return s
}

// Every trial gets a fresh copy of the fixture: a case that deletes a file
// passes in each of its trials, run at once, and the fixture is untouched.
func TestRunConcurrentFreshFixture(t *testing.T) {
	s := agenttest.Settings(t, "")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cases.jsonl": `{"name":"rm","plan":"plans/rm.jsonl","fixture":"fx","flags":{"yes":true},` +
			`"assert":[{"jq":".termination_reason == \"success\""}],"files":[{"path":"old.log","absent":true},{"path":"keep.txt","unchanged":true}]}` + "\n",
		"plans/rm.jsonl": `{"tool":"run_command","args":{"command":"rm old.log"}}` + "\n" + `{"tool":"final_answer","args":{"answer":"removed"}}` + "\n",
		"fx/old.log":     "old\n",
		"fx/keep.txt":    "keep\n",
	})
	opened := 0
	open := func(ctx context.Context, s *config.Settings, o agent.Options) (*agent.Runtime, error) {
		opened++
		return agent.Open(ctx, s, o)
	}
	tmp := t.TempDir() // where the trials' workspaces are made
	t.Setenv("TMPDIR", tmp)
	res, err := Run(context.Background(), loadSuite(t, dir), Options{Settings: s, Open: open, Trials: 5, Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 || opened != 1 {
		t.Fatalf("%d results, %d runtimes opened; want 5 and 1", len(res), opened)
	}
	for i, r := range res {
		if !r.Passed() || r.Trial != i+1 {
			t.Errorf("trial %d: %+v", i+1, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fx", "old.log")); err != nil {
		t.Fatalf("the fixture lost its file: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "tact-test-*")); len(left) > 0 {
		t.Errorf("trial workspaces left behind: %q", left)
	}
}

// Cases whose runtime flags differ get a runtime of their own; a case the
// suite cannot run is one result saying why, and the others run.
func TestRunGroupsAndErrors(t *testing.T) {
	s := agenttest.Settings(t, "")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cases.jsonl": `{"name":"a","plan":"plans/p.jsonl","assert":[{"jq":".success"}]}` + "\n" +
			`{"name":"b","plan":"plans/p.jsonl","flags":{"read_only":true},"assert":[{"jq":".success"}]}` + "\n" +
			`{"name":"c","query":"q","cassette":"cassettes/other.jsonl","assert":[{"jq":".success"}]}` + "\n" +
			`{"name":"d","query":"q","assert":[{"jq":".success"}]}` + "\n",
		"plans/p.jsonl":         `{"tool":"final_answer","args":{"answer":"ok"}}` + "\n",
		"cassettes/other.jsonl": `{"cassette":1,"case":"a","run":"r9"}` + "\n",
	})
	opened := 0
	open := func(ctx context.Context, s *config.Settings, o agent.Options) (*agent.Runtime, error) {
		opened++
		return agent.Open(ctx, s, o)
	}
	res, err := Run(context.Background(), loadSuite(t, dir), Options{Settings: s, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	if opened != 2 {
		t.Errorf("%d runtimes opened, want 2 (read_only apart)", opened)
	}
	byCase := map[string]testsuite.TrialResult{}
	for _, r := range res {
		byCase[r.Case] = r
	}
	if !byCase["a"].Passed() || !byCase["b"].Passed() {
		t.Errorf("a, b: %+v %+v", byCase["a"], byCase["b"])
	}
	if e := byCase["c"].Error; !strings.Contains(e, `cassette `) || !strings.Contains(e, `is the recording of case "a", run r9, not of this case`) {
		t.Errorf("c: %q", e)
	}
	d := byCase["d"]
	if d.Passed() || len(d.Mismatches) != 1 || !strings.Contains(d.Mismatches[0], "the case has no cassette") {
		t.Errorf("d: %+v", d)
	}
}

// A script-backend run recorded as a case replays and passes; the
// recording names what it left out.
func TestRecordReplay(t *testing.T) {
	const script = `{"kind":"plan","text":"{\"plan\":[{\"thought\":\"Read the log to find errors.\",\"tool\":\"read_file\",\"args\":{\"path\":\"app.log\"}},{\"thought\":\"Answer from the log lines.\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"\"}}]}"}` + "\n" +
		`{"kind":"fill","text":"{\"answer\":\"the disk is full\"}"}` + "\n"
	s := agenttest.Settings(t, script)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	writeFiles(t, s.Workspace, map[string]string{"app.log": "ERROR no space\n", "big.bin": strings.Repeat("x", 100)})
	s.ProjectInstructions = false
	ctx := context.Background()
	rt, err := agent.Open(ctx, s, agent.Options{Mode: "run", History: true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := rt.Run(ctx, agent.Job{Query: "why is the disk full?"}); err != nil || !res.Success {
		t.Fatalf("run: %+v %v", res, err)
	}
	rt.Close()

	book, rec, err := runrecord.OpenRun(ctx, history.DefaultPath, history.LastRun)
	if err != nil {
		t.Fatal(err)
	}
	defer book.Close()
	suite := filepath.Join(t.TempDir(), "suite")
	out, err := Record(ctx, book, rec, RecordOptions{Suite: suite, Name: "disk"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Calls != 2 || len(out.Files) != 1 || out.Files[0] != "app.log" {
		t.Fatalf("recorded %+v", out)
	}
	if _, err := Record(ctx, book, rec, RecordOptions{Suite: suite, Name: "disk"}); err == nil || !strings.Contains(err.Error(), `case "disk" exists already`) {
		t.Fatalf("a second record of the name: %v", err)
	}
	if _, err := Record(ctx, book, rec, RecordOptions{Suite: suite, Name: "Bad Name"}); err == nil {
		t.Fatal("a bad name was taken")
	}
	// A run that never ended is refused before anything is written.
	unended := rec
	unended.Ended = false
	if _, err := Record(ctx, book, unended, RecordOptions{Suite: filepath.Join(suite, "new"), Name: "x"}); err == nil || !strings.Contains(err.Error(), "never ended") {
		t.Fatalf("an unended run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(suite, "new")); err == nil {
		t.Fatal("a refused record made its suite")
	}

	replay := *s
	replay.Script = ""
	res, err := Run(ctx, loadSuite(t, suite), Options{Settings: &replay, Open: agent.Open})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !res[0].Passed() {
		t.Fatalf("replay: %+v", res)
	}
	// The replay costs what the recording did.
	if res[0].Usage.Prompt != int64(rec.Usage.Prompt) || res[0].Usage.Completion != int64(rec.Usage.Completion) {
		t.Errorf("replay usage %+v, recorded %+v", res[0].Usage, rec.Usage)
	}

	// The replay's trial is the newest run in the history, but "last"
	// skips trials: it is still the run recorded above.
	if b, newest, err := runrecord.OpenRun(ctx, history.DefaultPath, history.LastRun); err != nil || newest.Command != trialCommand {
		t.Fatalf("the newest run: %+v %v, want a trial", newest, err)
	} else {
		b.Close()
	}
	b, last, err := OpenRun(ctx, history.DefaultPath, history.LastRun)
	if err != nil || last.ID != rec.ID {
		t.Fatalf("last = %s (%s), %v; want the recorded run %s", last.ID, last.Command, err, rec.ID)
	}
	b.Close()

	// Records at once into one suite: one of a name wins, the others are
	// refused; each of several names gets its whole line.
	par := filepath.Join(t.TempDir(), "par")
	writeFiles(t, par, map[string]string{"cases.jsonl": `{"name":"hand","query":"q"}`}) // no newline at its end
	errs := make(chan error, 12)
	for i := range 12 {
		name := "same"
		if i >= 4 {
			name = fmt.Sprintf("n%d", i)
		}
		go func() {
			_, err := Record(ctx, book, rec, RecordOptions{Suite: par, Name: name})
			errs <- err
		}()
	}
	failed := 0
	for range 12 {
		if err := <-errs; err != nil {
			if !strings.Contains(err.Error(), `case "same" exists already`) {
				t.Errorf("record: %v", err)
			}
			failed++
		}
	}
	if failed != 3 {
		t.Errorf("%d records failed, want the 3 extra ones of the name same", failed)
	}
	got := loadSuite(t, par)
	if len(got.Cases) != 10 {
		t.Fatalf("%d cases after the records, want 10 (hand, same, n4..n11)", len(got.Cases))
	}

	// A suite whose case file or folders are links out of it (a cloned
	// suite may hold them), or whose case file is a FIFO: one error naming
	// it, nothing written outside, no hang.
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"hostname": "vm\n"})
	for _, tc := range []struct {
		name, want string
		make       func(suite string) error
	}{
		{"case file link", "a link on the path leads out of the suite", func(suite string) error {
			return os.Symlink(filepath.Join(outside, "hostname"), filepath.Join(suite, "cases.jsonl"))
		}},
		{"fixtures link", "a link on the path leads out of the suite", func(suite string) error {
			return os.Symlink(outside, filepath.Join(suite, "fixtures"))
		}},
		{"cassettes link", "a link on the path leads out of the suite", func(suite string) error {
			return os.Symlink(outside, filepath.Join(suite, "cassettes"))
		}},
		{"case file fifo", "not a regular file", func(suite string) error {
			return syscall.Mkfifo(filepath.Join(suite, "cases.jsonl"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suite := filepath.Join(t.TempDir(), "s")
			if err := os.Mkdir(suite, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(suite); err != nil {
				t.Fatal(err)
			}
			_, err := Record(ctx, book, rec, RecordOptions{Suite: suite, Name: "x"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), suite) {
				t.Fatalf("err = %v, want one naming %s and %q", err, suite, tc.want)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "hostname")); string(b) != "vm\n" {
				t.Errorf("the file outside became %q", b)
			}
			if left, _ := os.ReadDir(outside); len(left) != 1 {
				t.Errorf("written outside the suite: %v", left)
			}
		})
	}
}

func TestReadFilesCap(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "aaaa", "big.txt": strings.Repeat("b", 50), "d/x.txt": "x", "d/y.txt": "yy"})
	res := resultWithSteps(`{"tool":"read_file","args":{"path":"a.txt"}}`, `{"tool":"read_file","args":{"path":"big.txt"}}`,
		`{"tool":"list_files","args":{"path":"d"}}`, `{"tool":"write_file","args":{"path":"new.txt","content":"n"}}`,
		`{"tool":"read_file","args":{"path":"../outside"}}`, `{"tool":"read_file","args":{"path":"gone.txt"}}`)
	redact := func(s string) string { return strings.ReplaceAll(s, "yy", "[REDACTED]") }
	files, notes := readFiles(res, ws, RecordOptions{MaxFile: 10, MaxTotal: 6, Redact: redact})
	var got []string
	for _, f := range files {
		got = append(got, f.rel)
	}
	if strings.Join(got, ",") != "a.txt,d/x.txt" {
		t.Errorf("files %q", got)
	}
	files, notes2 := readFiles(resultWithSteps(`{"tool":"read_file","args":{"path":"d/y.txt"}}`), ws, RecordOptions{MaxFile: 100, MaxTotal: 100, Redact: redact})
	if len(files) != 1 || string(files[0].data) != "[REDACTED]" || len(notes2) != 1 || !strings.Contains(notes2[0], "redacted secrets in d/y.txt") {
		t.Errorf("redacted: %v %q", files, notes2)
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{"left out big.txt: 50 bytes, over the 10-byte cap", "left out d/y.txt: the fixture would pass its 6-byte cap", "left out gone.txt: not in the workspace now"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if strings.Contains(all, "new.txt") || strings.Contains(all, "outside") {
		t.Errorf("notes %q name a written or outside file", notes)
	}
}

// A listed directory's keys, credentials and dotenv files stay out of the
// fixture (a suite is committed), each named in a note; a big tree stops
// being walked at the cap, with one note, not one a file.
func TestReadFilesLeavesSecrets(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"p/a.txt": "a", "p/.env": "TOKEN=x", "p/.env.example": "TOKEN=", "p/.ssh/id_rsa": "k",
		"p/cert.PEM": "c", "p/config.json": "{}", "p/.git-credentials": "g"})
	files, notes := readFiles(resultWithSteps(`{"tool":"list_files","args":{"path":"p"}}`), ws, RecordOptions{MaxFile: 100, MaxTotal: 100})
	var got []string
	for _, f := range files {
		got = append(got, f.rel)
	}
	if strings.Join(got, ",") != "p/.env.example,p/a.txt,p/config.json" {
		t.Errorf("files %q", got)
	}
	all := strings.Join(notes, "\n")
	for _, name := range []string{"p/.env", "p/.ssh/id_rsa", "p/cert.PEM", "p/.git-credentials"} {
		if !strings.Contains(all, "left out "+name+": its name says it holds a secret") {
			t.Errorf("notes %q do not name %s", notes, name)
		}
	}

	big := t.TempDir()
	many := map[string]string{}
	for i := range 200 {
		many[fmt.Sprintf("d/f%03d.txt", i)] = "0123456789"
	}
	writeFiles(t, big, many)
	files, notes = readFiles(resultWithSteps(`{"tool":"list_files","args":{"path":"."}}`), big, RecordOptions{MaxFile: 100, MaxTotal: 50})
	if len(files) != 5 || len(notes) > 2 {
		t.Errorf("%d files, notes %q; want 5 files and at most 2 notes", len(files), notes)
	}
}

// A suite kept inside the workspace: a record of a run that listed the
// whole workspace leaves the suite's own files out of the fixture.
func TestReadFilesSkipsTheSuite(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "a", "suite/cases.jsonl": "{}", "suite/fixtures/old/a.txt": "a"})
	files, _ := readFiles(resultWithSteps(`{"tool":"list_files","args":{"path":"."}}`), ws, RecordOptions{MaxFile: 100, MaxTotal: 100, Suite: filepath.Join(ws, "suite")})
	if len(files) != 1 || files[0].rel != "a.txt" {
		t.Errorf("files %+v, want a.txt alone", files)
	}
}
