package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRecorderRoundTrip(t *testing.T) {
	s := openTest(t, Options{})
	run := Run{ID: "run-1", ParentID: "batch-1", ResumedFrom: "run-0", Command: "exec", Workspace: "/w", Query: "list the files",
		Plan: `{"steps":["ls"]}`, Backend: "llama", Model: "qwen", Settings: `{"temperature":0}`, StartedAt: at(0)}
	steps := []Step{
		{Index: 0, Thought: "look", Tool: "run", Args: `{"cmd":"ls"}`, Decision: "act", Observation: "a b", ExitCode: 0,
			StartedAt: at(time.Second), Duration: 2 * time.Second, Usage: Usage{Prompt: 100, Completion: 10, Cached: 80}},
		{Index: 1, Thought: "done", Decision: "answer", Observation: "", ExitCode: 2,
			StartedAt: at(3 * time.Second), Duration: time.Second, Usage: Usage{Prompt: 120, Completion: 5}},
	}
	rec := s.Begin(run)
	for _, p := range steps {
		rec.Step(p)
	}
	events := []string{`{"ev":"start"}`, `{"ev":"step"}`, `{"ev":"end"}`}
	for _, e := range events {
		rec.Event(e)
	}
	rec.End(Final{Answer: "a, b", Reason: "answered", ExitCode: 0, EndedAt: at(5 * time.Second), Result: `{"answer":"a, b"}`})
	flush(t, s)

	ctx := context.Background()
	got, err := s.Get(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Record{Run: run, Ended: true, Answer: "a, b", Reason: "answered", EndedAt: at(5 * time.Second),
		Usage: Usage{Prompt: 220, Completion: 15, Cached: 80}, Steps: 2, Duration: 5 * time.Second, Result: `{"answer":"a, b"}`}
	if !equalRecords(got, want) {
		t.Errorf("Get:\n got %+v\nwant %+v", got, want)
	}
	gotSteps, err := s.Steps(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(gotSteps) != len(steps) {
		t.Fatalf("Steps: %d, want %d", len(gotSteps), len(steps))
	}
	for i := range steps {
		if !gotSteps[i].StartedAt.Equal(steps[i].StartedAt) {
			t.Errorf("step %d start %v, want %v", i, gotSteps[i].StartedAt, steps[i].StartedAt)
		}
		gotSteps[i].StartedAt = steps[i].StartedAt
		if !reflect.DeepEqual(gotSteps[i], steps[i]) {
			t.Errorf("step %d:\n got %+v\nwant %+v", i, gotSteps[i], steps[i])
		}
	}
	var gotEvents []string
	if err := s.Events(ctx, "run-1", func(line string) error { gotEvents = append(gotEvents, line); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotEvents, events) {
		t.Errorf("Events = %q, want %q", gotEvents, events)
	}
	if _, err := s.Steps(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Steps of an unknown run: %v, want ErrNotFound", err)
	}
}

// equalRecords compares records, times by instant.
func equalRecords(a, b Record) bool {
	if !a.StartedAt.Equal(b.StartedAt) || !a.EndedAt.Equal(b.EndedAt) {
		return false
	}
	a.StartedAt, a.EndedAt = b.StartedAt, b.EndedAt
	return reflect.DeepEqual(a, b)
}

func TestRunWithoutEndReadsInterrupted(t *testing.T) {
	s := openTest(t, Options{})
	rec := s.Begin(Run{ID: "open-run", StartedAt: at(0)})
	rec.Step(Step{Index: 0})
	record(s, Run{ID: "done-run", StartedAt: at(time.Minute)}, 1, Final{Reason: "answered", ExitCode: 0})
	flush(t, s)
	got, err := s.Get(context.Background(), "open-run")
	if err != nil {
		t.Fatal(err)
	}
	if got.Ended || got.Reason != ReasonInterrupted || got.Steps != 0 {
		t.Errorf("open run: Ended %v, Reason %q, Steps %d; want false, interrupted, 0", got.Ended, got.Reason, got.Steps)
	}
	assertIDs(t, s, Filter{Reason: ReasonInterrupted}, []string{"open-run"})
	zero := 0
	assertIDs(t, s, Filter{Exit: &zero}, []string{"done-run"})
}

// TestRecorderQueuePolicy: with the writer stalled, trace events stop at
// 3/4 of the queue, steps at 15/16, Begin and End at full; nothing blocks.
func TestRecorderQueuePolicy(t *testing.T) {
	s := &Store{opts: Options{Now: time.Now}, ops: make(chan op, 32)} // no writer
	rec := s.Begin(Run{ID: "r"})                                      // 1 queued
	for range 40 {
		rec.Event("e") // 23 fit (up to 24), 17 dropped
	}
	for i := range 10 {
		rec.Step(Step{Index: i}) // 6 fit (up to 30), 4 dropped
	}
	rec.Event("late") // dropped: steps are queued
	rec.End(Final{})  // 31
	s.Begin(Run{ID: "r2"})
	s.Begin(Run{ID: "r3"}) // full: dropped
	want := Drops{Events: 18, Steps: 4, Runs: 1}
	if got := s.Dropped(); got != want {
		t.Errorf("Dropped = %+v, want %+v", got, want)
	}
	if len(s.ops) != cap(s.ops) {
		t.Errorf("queued %d, want %d", len(s.ops), cap(s.ops))
	}
	var end op
	for len(s.ops) > 0 {
		if o := <-s.ops; o.kind == opEnd {
			end = o
		}
	}
	if end.dropped != 18 {
		t.Errorf("End carries %d dropped events, want 18", end.dropped)
	}
}

func TestDroppedEventsAreRecorded(t *testing.T) {
	s := openTest(t, Options{})
	rec := s.Begin(Run{ID: "r", StartedAt: at(0)})
	rec.droppedEvents.Store(7) // as if the queue had been full
	rec.End(Final{Reason: "answered"})
	flush(t, s)
	got, err := s.Get(context.Background(), "r")
	if err != nil || got.DroppedEvents != 7 {
		t.Fatalf("Get: DroppedEvents %d, %v; want 7", got.DroppedEvents, err)
	}
}

func TestNilStoreRecordsNothing(t *testing.T) {
	var s *Store
	rec := s.Begin(Run{ID: "x"})
	rec.Step(Step{})
	rec.Event("e")
	rec.End(Final{})
	if err := s.Flush(context.Background()); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestDuplicateRunIDWarnsAndKeepsWriting(t *testing.T) {
	w := newWarnings()
	s := openTest(t, Options{Warn: w.warn})
	record(s, Run{ID: "same", Query: "first", StartedAt: at(0)}, 1, Final{Reason: "answered"})
	record(s, Run{ID: "same", Query: "second", StartedAt: at(time.Second)}, 1, Final{Reason: "answered"})
	record(s, Run{ID: "other", StartedAt: at(2 * time.Second)}, 1, Final{Reason: "answered"})
	flush(t, s)
	if errs := w.list(); len(errs) != 1 || !errors.Is(errs[0], errDuplicateRun) {
		t.Errorf("warnings %v, want one duplicate-id warning", errs)
	}
	got, err := s.Get(context.Background(), "same")
	if err != nil || got.Query != "first" {
		t.Errorf("Get(same) = %q, %v; want the first run", got.Query, err)
	}
	assertIDs(t, s, Filter{}, []string{"other", "same"})
}

// TestStoreErrorWarnsOnce fills a small tmpfs: the writer reports one
// warning, stops writing, and the recorder keeps accepting calls.
func TestStoreErrorWarnsOnce(t *testing.T) {
	dir := mountTmpfs(t, "size=256k,mode=0700")
	w := newWarnings()
	s, err := Open(filepath.Join(dir, "runs.db"), Options{Warn: w.warn})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := strings.Repeat("observation text ", 1000)
	var storeErr error
	for i := 0; storeErr == nil; i++ {
		if i == 100 {
			t.Fatal("100 runs of 17 KB fit in a 256 KB file system")
		}
		rec := s.Begin(Run{ID: fmt.Sprint("run", i)})
		rec.Step(Step{Observation: big})
		rec.End(Final{Reason: "answered"})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		storeErr = s.Flush(ctx)
		cancel()
	}
	t.Logf("store error: %v", storeErr)
	if !strings.Contains(storeErr.Error(), "full") {
		t.Errorf("store error %v, want disk full", storeErr)
	}
	// Later calls are accepted and ignored.
	for i := range 10 {
		rec := s.Begin(Run{ID: fmt.Sprint("after", i)})
		rec.Step(Step{Observation: big})
		rec.Event("e")
		rec.End(Final{})
	}
	flushErr := s.Flush(context.Background())
	if !errors.Is(flushErr, storeErr) && flushErr.Error() != storeErr.Error() {
		t.Errorf("Flush after the failure: %v", flushErr)
	}
	mustDo(t, s.Close())
	if errs := w.list(); len(errs) != 1 || errs[0].Error() != storeErr.Error() {
		t.Errorf("warnings %v, want exactly the store error once", errs)
	}
}

// TestReadOnlyDirectory: a store that cannot be opened for writing is one
// warning from OpenBestEffort, and its nil Store's recorders accept calls.
func TestReadOnlyDirectory(t *testing.T) {
	var dir string
	if os.Geteuid() == 0 {
		// root writes through permission bits: use a read-only mount.
		dir = mountTmpfs(t, "size=1m,mode=0700")
	} else {
		dir = privateDir(t)
	}
	path := filepath.Join(dir, "runs.db")
	s, err := Open(path, Options{})
	mustDo(t, err)
	record(s, Run{ID: "before", StartedAt: at(0)}, 1, Final{Reason: "answered"})
	mustDo(t, s.Close())
	if os.Geteuid() == 0 {
		if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
			t.Skipf("remount read-only: %v: %s", err, out)
		}
	} else {
		mustDo(t, os.Chmod(dir, 0o500))
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
	}
	w := newWarnings()
	s = OpenBestEffort(path, Options{Warn: w.warn})
	if s != nil {
		// Opened after all (nothing had to be created): writing must fail
		// once instead.
		rec := s.Begin(Run{ID: "after"})
		rec.End(Final{})
		if err := s.Flush(context.Background()); err == nil {
			t.Fatal("writing to a read-only directory succeeded")
		}
	}
	rec := s.Begin(Run{ID: "more"})
	rec.Step(Step{})
	rec.Event("e")
	rec.End(Final{})
	mustDo(t, s.Close())
	if errs := w.list(); len(errs) != 1 {
		t.Errorf("warnings %v, want one", errs)
	} else {
		t.Logf("warning: %v", errs[0])
	}
}

// mountTmpfs mounts a tmpfs with opts on a fresh directory (root only),
// unmounted at cleanup.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// child starts this test binary as a child process in role on path.
func child(t *testing.T, role, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "HISTORY_TEST_DB="+path)
	return cmd
}

// TestKilledRunKeepsFinishedSteps: a process killed with SIGKILL after
// three steps leaves those steps, and its run reads as interrupted.
func TestKilledRunKeepsFinishedSteps(t *testing.T) {
	path := filepath.Join(privateDir(t), "runs.db")
	cmd := child(t, "kill", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	mustDo(t, err)
	mustDo(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v; stderr: %s", line, err, stderr.String())
	}
	mustDo(t, cmd.Process.Signal(syscall.SIGKILL))
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed", err)
	}

	s, err := Open(path, Options{})
	mustDo(t, err)
	defer s.Close()
	ctx := context.Background()
	got, err := s.Get(ctx, "killed-run")
	mustDo(t, err)
	if got.Ended || got.Reason != ReasonInterrupted {
		t.Errorf("killed run: Ended %v, Reason %q; want interrupted", got.Ended, got.Reason)
	}
	steps, err := s.Steps(ctx, "killed-run")
	mustDo(t, err)
	if len(steps) != 3 {
		t.Errorf("killed run has %d steps, want 3", len(steps))
	}
}

// TestManyProcessesAtOnce: 8 processes × 100 runs on one new database: all
// 800 runs complete, no process sees a lock error or drops anything.
func TestManyProcessesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	path := filepath.Join(privateDir(t), "runs.db")
	type result struct {
		err    error
		stderr string
	}
	results := make(chan result)
	for range 8 {
		cmd := child(t, "many", path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		mustDo(t, cmd.Start())
		go func() {
			err := cmd.Wait()
			results <- result{err, stderr.String()}
		}()
	}
	for range 8 {
		if r := <-results; r.err != nil || r.stderr != "" {
			t.Errorf("child: %v: %s", r.err, r.stderr)
		}
	}
	s, err := Open(path, Options{})
	mustDo(t, err)
	defer s.Close()
	runs, err := s.List(context.Background(), Filter{Limit: -1})
	mustDo(t, err)
	complete, steps := 0, 0
	for _, r := range runs {
		if r.Ended && r.Reason == "answered" {
			complete++
		}
		steps += r.Steps
	}
	if len(runs) != 800 || complete != 800 || steps != 1600 {
		t.Errorf("%d runs, %d complete, %d steps; want 800, 800, 1600", len(runs), complete, steps)
	}
}

// TestCloseIsBounded: Close gives up on a writer held up by another
// process's lock after FlushTimeout, reports the loss, and warns nothing.
func TestCloseIsBounded(t *testing.T) {
	w := newWarnings()
	path := filepath.Join(privateDir(t), "runs.db")
	s, err := Open(path, Options{Warn: w.warn, BusyTimeout: time.Hour, FlushTimeout: 50 * time.Millisecond})
	mustDo(t, err)
	blocker := rawDB(t, path)
	defer blocker.Close()
	tx, err := blocker.Begin() // BEGIN IMMEDIATE: holds the write lock
	mustDo(t, err)
	defer tx.Rollback()

	rec := s.Begin(Run{ID: "stuck"})
	rec.Step(Step{})
	err = s.Close()
	if err == nil || !strings.Contains(err.Error(), "flush did not finish") {
		t.Errorf("Close: %v; want a flush timeout", err)
	}
	if errs := w.list(); len(errs) != 0 {
		t.Errorf("warnings after Close: %v", errs)
	}
}

// The latest checkpoint is kept while a run may be resumed, and dropped
// when it succeeds.
func TestCheckpointKeptUntilSuccess(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		id   string
		exit int
		want string
	}{{"ok", 0, ""}, {"timed-out", 7, "second"}, {"killed", -1, "second"}} {
		rec := s.Begin(Run{ID: tc.id})
		rec.Step(Step{Index: 0, Tool: "read_file"})
		rec.Checkpoint("first")
		rec.Checkpoint("second")
		flush(t, s)
		if cp, err := s.Checkpoint(ctx, tc.id); err != nil || cp != "second" {
			t.Fatalf("%s before End: %q, %v", tc.id, cp, err)
		}
		if tc.exit >= 0 {
			rec.End(Final{Reason: "x", ExitCode: tc.exit})
			flush(t, s)
		}
		if cp, err := s.Checkpoint(ctx, tc.id); err != nil || cp != tc.want {
			t.Errorf("%s: checkpoint %q (%v), want %q", tc.id, cp, err, tc.want)
		}
	}
	if _, err := s.Checkpoint(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}
