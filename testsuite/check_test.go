package testsuite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doc is a run's --json document as tact run --json prints it (trimmed).
const doc = `{"run_id":"r1","success":true,"final_answer":"3 files","termination_reason":"success","iterations":2,` +
	`"token_usage":{"prompt_tokens":100,"cached_tokens":0,"completion_tokens":20},"execution_time_ms":5,` +
	`"trace":{"steps":[{"iteration":1,"action":{"tool":"list_dir","args":{"path":"."}},"exit_code":0},` +
	`{"iteration":2,"action":{"tool":"final_answer","args":{"answer":"3 files"}},"exit_code":0}]}}`

const schemaDoc = `{"run_id":"r2","success":true,"final_answer":{"count":3},"termination_reason":"success"}`

// TestCheck: each check kind passing and failing, one line each.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, line, doc string
		prepare         func(t *testing.T, ws string)
		want            []string // "CHECK: MESSAGE" substrings, in order; none: passes
	}{
		{name: "jq true", line: `"assert":[{"jq":".termination_reason == \"success\""}]`},
		{name: "jq tool order", line: `"assert":[{"jq":"[.trace.steps[].action.tool] == [\"list_dir\",\"final_answer\"]"}]`},
		{name: "jq false", line: `"assert":[{"jq":".iterations < 2","name":"quick"}]`, want: []string{"quick: yielded false, want true"}},
		{name: "jq not a boolean", line: `"assert":[{"jq":".termination_reason"}]`, want: []string{`jq .termination_reason: yielded "success", want true`}},
		{name: "jq truthy is not true", line: `"assert":[{"jq":"1"}]`, want: []string{`yielded 1, want true`}},
		{name: "jq nothing", line: `"assert":[{"jq":"empty"}]`, want: []string{"jq empty: yielded nothing, want true"}},
		{name: "jq many", line: `"assert":[{"jq":".trace.steps[] | .exit_code == 0"}]`, want: []string{"yielded 2 or more values (true, true), want exactly one, true"}},
		{name: "jq error", line: `"assert":[{"jq":"error(\"boom\")"}]`, want: []string{`jq error("boom"): jq: error: boom`}},
		{name: "jq type error", line: `"assert":[{"jq":".final_answer + 1 == 2"}]`, want: []string{"jq: cannot add"}},
		{name: "answer schema pass", line: `"answer_schema":{"type":"string","pattern":"files$"}`},
		{name: "answer schema fail", line: `"answer_schema":{"type":"object"}`, want: []string{`answer_schema: final_answer "3 files" does not validate: at /final_answer: got string, want object`}},
		{name: "answer schema value", doc: schemaDoc, line: `"answer_schema":{"type":"object","properties":{"count":{"type":"integer","maximum":2}}}`,
			want: []string{`answer_schema: final_answer {"count":3} does not validate: at /final_answer/count: maximum: got 3, want 2`}},
		{name: "answer missing", doc: `{"success":false}`, line: `"answer_schema":true`, want: []string{"answer_schema: the document has no final_answer"}},
		{name: "not a document", doc: `not json`, line: `"fixture":"fixtures/ok","assert":[{"jq":"true"}],"files":[{"path":"a.txt","exists":true}]`,
			want: []string{"document: the run's --json document is not a JSON object"}},
		{name: "exists", line: `"fixture":"fixtures/ok","files":[{"path":"a.txt","exists":true},{"path":"sub","exists":true}]`},
		{name: "exists missing", line: `"files":[{"path":"out.txt","exists":true}]`, want: []string{"out.txt exists: missing: no such file or directory"}},
		{name: "absent", line: `"files":[{"path":"gone.txt","absent":true}]`},
		{name: "absent present", line: `"fixture":"fixtures/ok","files":[{"path":"a.txt","absent":true,"name":"no a"}]`, want: []string{"no a: present (a file of 6 bytes), want absent"}},
		{name: "contains", line: `"fixture":"fixtures/ok","files":[{"path":"sub/b.txt","contains":"eta"}]`},
		{name: "contains not", line: `"fixture":"fixtures/ok","files":[{"path":"a.txt","contains":"beta"}]`, want: []string{`a.txt contains "beta": does not contain "beta" (6 bytes)`}},
		{name: "contains missing", line: `"files":[{"path":"a.txt","contains":"x"}]`, want: []string{`a.txt contains "x": no such file or directory`}},
		{name: "contains a directory", line: `"fixture":"fixtures/ok","files":[{"path":"sub","contains":"x"}]`, want: []string{"is a directory, not a regular file"}},
		{name: "unchanged", line: `"fixture":"fixtures/ok","files":[{"path":"a.txt","unchanged":true}]`},
		{name: "unchanged changed", line: `"fixture":"fixtures/ok","files":[{"path":"a.txt","unchanged":true}]`,
			prepare: func(t *testing.T, ws string) { write(t, filepath.Join(ws, "a.txt"), "alpha!\n") },
			want:    []string{"a.txt unchanged: changed: 7 bytes, the fixture's 6 (first difference at byte 5)"}},
		{name: "unchanged deleted", line: `"fixture":"fixtures/ok","files":[{"path":"a.txt","unchanged":true}]`,
			prepare: func(t *testing.T, ws string) { os.Remove(filepath.Join(ws, "a.txt")) },
			want:    []string{"a.txt unchanged: no such file or directory"}},
		{name: "link out of the workspace", line: `"files":[{"path":"link","contains":"root"}]`,
			prepare: func(t *testing.T, ws string) { os.Symlink("/etc/passwd", filepath.Join(ws, "link")) },
			want:    []string{"link contains \"root\": a link on the path leads out of the workspace: not followed"}},
		{name: "dir link out of the workspace", line: `"files":[{"path":"etc/passwd","exists":true},{"path":"etc/passwd","absent":true}]`,
			prepare: func(t *testing.T, ws string) { os.Symlink("/etc", filepath.Join(ws, "etc")) },
			want: []string{"etc/passwd exists: a link on the path leads out of the workspace: not followed",
				"etc/passwd absent: cannot tell: a link on the path leads out of the workspace: not followed"}},
		{name: "no checks: success", line: `"description":"smoke"`},
		{name: "no checks: failed run", doc: `{"success":false,"termination_reason":"timeout"}`, line: `"description":"smoke"`,
			want: []string{`success: the run ended as "timeout"; a case without assert, answer_schema or files passes when its run succeeds`}},
		{name: "several in order", line: `"assert":[{"jq":"false","name":"one"},{"jq":"true"},{"jq":"null","name":"three"}],"files":[{"path":"x","exists":true}]`,
			want: []string{"one: yielded false", "three: yielded null", "x exists: missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := suiteDir(t, `{"name":"c","query":"q",`+tc.line+`}`)
			s, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			c := s.Cases[0]
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			ws := workspace(t, c.Fixture)
			if tc.prepare != nil {
				tc.prepare(t, ws)
			}
			d := tc.doc
			if d == "" {
				d = doc
			}
			got := c.Check(context.Background(), []byte(d), ws)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d failures %+v, want %d %q", len(got), got, len(tc.want), tc.want)
			}
			for i, f := range got {
				line := f.Check + ": " + f.Message
				if !strings.Contains(line, tc.want[i]) {
					t.Errorf("failure %d: %q, want %q", i, line, tc.want[i])
				}
				if strings.Contains(line, "\n") {
					t.Errorf("failure %d is more than one line: %q", i, line)
				}
			}
		})
	}
}

// workspace copies the fixture (if any) into a fresh directory, as a
// trial's workspace starts.
func workspace(t *testing.T, fixture string) string {
	t.Helper()
	ws := t.TempDir()
	if fixture != "" {
		if err := os.CopyFS(ws, os.DirFS(fixture)); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckConcurrent: trials of one case check at once (suiterun's
// --parallel); run with -race.
func TestCheckConcurrent(t *testing.T) {
	dir := suiteDir(t, `{"name":"c","query":"q","fixture":"fixtures/ok","assert":[{"jq":".success"},{"jq":".iterations == 3","name":"three"}],`+
		`"answer_schema":{"type":"string"},"files":[{"path":"a.txt","unchanged":true}]}`)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	done := make(chan []Failure)
	for range 4 {
		ws := workspace(t, c.Fixture)
		go func() { done <- c.Check(context.Background(), []byte(doc), ws) }()
	}
	for range 4 {
		if got := <-done; len(got) != 1 || got[0].Check != "three" {
			t.Errorf("got %+v, want only three failing", got)
		}
	}
}

// Assertions take one of a few slots (each is a child process of up to
// 256 MiB): with all taken, one waits, here until its trial is cancelled.
func TestAssertSlots(t *testing.T) {
	for range cap(jqSlots) {
		jqSlots <- struct{}{}
	}
	defer func() {
		for range cap(jqSlots) {
			<-jqSlots
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if msg := evalAssert(ctx, "true", []byte(doc)); msg != "not evaluated: context canceled" {
		t.Fatalf("with no slot free: %q", msg)
	}
}
