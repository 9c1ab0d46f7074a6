package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// outputFixture is a workspace, a script backend answering n queries at
// once, and a file of n queries.
func outputFixture(t *testing.T, n int) (dir string) {
	t.Helper()
	dir = t.TempDir()
	os.Mkdir(filepath.Join(dir, "ws"), 0o755)
	reply := `{"kind":"plan","text":"{\"plan\":[{\"thought\":\"answer right away\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"` +
		strings.Repeat("d", 300) + `\"}}]}"}` + "\n"
	var queries strings.Builder
	for i := range n {
		fmt.Fprintf(&queries, "query %d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "replies.jsonl"), []byte(strings.Repeat(reply, n)), 0o644)
	os.WriteFile(filepath.Join(dir, "q.txt"), []byte(queries.String()), 0o644)
	return dir
}

// exitOf runs a shell line in dir and returns its exit code and stderr.
func exitOf(t *testing.T, dir, line string) (int, string) {
	t.Helper()
	c := exec.Command("bash", "-c", line)
	c.Dir = dir
	var stderr strings.Builder
	c.Stderr = &stderr
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// wholeLines checks that every line of path is a complete JSON object.
func wholeLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s ends in a partial line: ...%q", filepath.Base(path), b[max(0, len(b)-40):])
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Errorf("%s line %d is not JSON: %v", filepath.Base(path), n+1, err)
		}
		n++
	}
	return n
}

// Item 13 of issue 23: stdout that fills up or closes. Every case exits 10
// (output failed), says so in one line, and leaves only whole lines.
func TestBatchOutputFailure(t *testing.T) {
	tact := e2eTact(t)
	dir := outputFixture(t, 40)
	batch := fmt.Sprintf("%q batch --workspace ws --script replies.jsonl --ordered q.txt", tact)

	// A regular file on a "full disk": bash's ulimit -f (KiB) makes writes
	// past 16 KiB fail with EFBIG, in the middle of a line.
	code, stderr := exitOf(t, dir, "ulimit -f 16; "+batch+" > out.jsonl")
	if code != exitOutput || !strings.Contains(stderr, "tact: writing standard output: file too large") {
		t.Errorf("full file: exit %d, stderr %q", code, stderr)
	}
	if n := wholeLines(t, filepath.Join(dir, "out.jsonl")); n == 0 || n >= 40 {
		t.Errorf("full file: %d whole lines", n)
	}
	// Appending (>>) to what was there keeps it.
	os.WriteFile(filepath.Join(dir, "app.jsonl"), []byte(`{"earlier":true}`+"\n"), 0o644)
	if code, _ := exitOf(t, dir, "ulimit -f 16; "+batch+" >> app.jsonl"); code != exitOutput {
		t.Errorf("appending: exit %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.jsonl")); !strings.HasPrefix(string(b), `{"earlier":true}`+"\n") {
		t.Errorf("appending lost the earlier line")
	}
	wholeLines(t, filepath.Join(dir, "app.jsonl"))

	// /dev/full: ENOSPC on the first write.
	code, stderr = exitOf(t, dir, batch+" > /dev/full")
	if code != exitOutput || !strings.Contains(stderr, "no space left on device") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("/dev/full: exit %d, stderr %q", code, stderr)
	}

	// A reader that closes the pipe: 10, not 141 (SIGPIPE), in silence
	// (docs/cli.md#a-reader-that-stops-early), and the producer stops;
	// pipefail shows tact's own code.
	code, stderr = exitOf(t, dir, "set -o pipefail; "+batch+" | head -c 1 >/dev/null")
	if code != exitOutput || stderr != "" {
		t.Errorf("closed pipe: exit %d, stderr %q", code, stderr)
	}
}

// run's answer and --json on a full stdout: 10 as well, whatever the run's
// own outcome.
func TestRunOutputFailure(t *testing.T) {
	tact := e2eTact(t)
	dir := outputFixture(t, 1)
	for _, flags := range []string{"", "--json"} {
		code, stderr := exitOf(t, dir, fmt.Sprintf("%q run %s --workspace ws --script replies.jsonl q > /dev/full", tact, flags))
		if code != exitOutput || !strings.Contains(stderr, "writing standard output") {
			t.Errorf("run %s: exit %d, stderr %q", flags, code, stderr)
		}
	}
}

// Item 14 of issue 23: a trace on a full disk is said at once (before the
// run ends), keeps whole events only, and makes the exit code 10.
func TestTraceOutputFailure(t *testing.T) {
	tact := e2eTact(t)
	dir := outputFixture(t, 40)
	// 8 KiB of file (bash counts KiB): the first events fit, the rest do
	// not. stdout goes to /dev/null, which has no size.
	code, stderr := exitOf(t, dir, fmt.Sprintf("ulimit -f 8; %q batch --workspace ws --script replies.jsonl --trace t.jsonl q.txt > /dev/null", tact))
	if code != exitOutput {
		t.Errorf("exit %d, want %d; stderr %q", code, exitOutput, stderr)
	}
	warn := strings.Index(stderr, "the trace cannot be written")
	last := strings.LastIndex(stderr, "tact: ")
	if warn < 0 || last < 0 || warn > last || strings.Count(stderr, "the trace cannot be written") != 1 {
		t.Errorf("want one warning when it happened and the reason at the end; stderr %q", stderr)
	}
	if n := wholeLines(t, filepath.Join(dir, "t.jsonl")); n == 0 {
		t.Error("no event was written")
	}
	var st syscall.Stat_t
	if syscall.Stat(filepath.Join(dir, "t.jsonl"), &st) == nil && st.Size > 8<<10 {
		t.Errorf("trace of %d bytes past the limit", st.Size)
	}
}
