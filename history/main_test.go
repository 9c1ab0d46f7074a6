package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// childEnv selects a child-process role when the test binary re-executes
// itself (SIGKILL durability, many writers at once).
const childEnv = "HISTORY_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role, os.Getenv("HISTORY_TEST_DB")))
	}
	code := m.Run()
	cleanupBench()
	os.Exit(code)
}

// warnings collects what a store reports through Options.Warn.
type warnings struct {
	mu   sync.Mutex
	errs []error
	got  chan struct{} // receives once per warning
}

func newWarnings() *warnings { return &warnings{got: make(chan struct{}, 100)} }

func (w *warnings) warn(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
	select {
	case w.got <- struct{}{}:
	default:
	}
}

func (w *warnings) list() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.errs...)
}

// openTest opens a store in a fresh directory, closed at cleanup.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state", "tact", "runs.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func flush(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// at is a fixed instant plus d, so tests do not depend on the clock.
func at(d time.Duration) time.Time {
	return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(d)
}

// record writes one complete run with n steps through a Recorder.
func record(s *Store, run Run, n int, final Final) {
	rec := s.Begin(run)
	for i := range n {
		rec.Step(Step{Index: i, Thought: fmt.Sprintf("thought %d", i), Tool: "run", Args: `{"cmd":"ls"}`,
			Observation: fmt.Sprintf("observation %d", i), StartedAt: run.StartedAt.Add(time.Duration(i) * time.Second),
			Duration: time.Second, Usage: Usage{Prompt: 10, Completion: 2, Cached: 5}})
	}
	rec.End(final)
}

// runChild is a child process's body; its exit code is its verdict.
func runChild(role, path string) int {
	var warned []error
	var mu sync.Mutex
	s, err := Open(path, Options{Warn: func(err error) { mu.Lock(); warned = append(warned, err); mu.Unlock() }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch role {
	case "kill":
		// Three finished steps, committed; then wait to be killed.
		rec := s.Begin(Run{ID: "killed-run", Command: "run", Query: "count files"})
		for i := range 3 {
			rec.Step(Step{Index: i, Thought: "t", Observation: "o"})
		}
		if err := s.Flush(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "flush:", err)
			return 1
		}
		fmt.Println("ready")
		select {}
	case "many":
		for i := range 100 {
			record(s, Run{ID: fmt.Sprintf("p%d-run%03d", os.Getpid(), i), Command: "batch", Query: "many writers"}, 2,
				Final{Answer: "done", Reason: "answered"})
		}
		if err := s.Flush(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "flush:", err)
			return 1
		}
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			return 1
		}
		if d := s.Dropped(); d != (Drops{}) {
			fmt.Fprintf(os.Stderr, "dropped: %+v\n", d)
			return 1
		}
		mu.Lock()
		defer mu.Unlock()
		if len(warned) > 0 {
			fmt.Fprintln(os.Stderr, "warnings:", errors.Join(warned...))
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}

// privateDir is a fresh 0700 directory (t.TempDir's mode follows the umask).
func privateDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
