package agent

import (
	"context"
	"fmt"
	"github.com/tactcli/tact/agent/agenttest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/react"
)

// Every way a job cannot start is a typed error with its exit code.
func TestTypedErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		mod  func(*config.Settings)
		job  Job
		kind ErrorKind
		code int
		msg  string
	}{
		{"bad sandbox", func(s *config.Settings) { s.Sandbox = "nope" }, Job{Query: "q"}, ErrBadInput, 2, "--sandbox"},
		{"bad workspace", func(s *config.Settings) { s.Workspace = "/nonexistent/dir" }, Job{Query: "q"}, ErrBadInput, 2, "--workspace"},
		{"unknown tool", func(s *config.Settings) { s.AllowTools = []string{"nope"} }, Job{Query: "q"}, ErrBadInput, 2, `--allow-tools: unknown tool "nope"`},
		{"no model to plan", func(s *config.Settings) { s.Script, s.Backend = "", "none" }, Job{Query: "q"}, ErrNeedsModel, 2, "planning needs a model"},
		{"no model for --no-plan", func(s *config.Settings) { s.Script, s.Backend, s.NoPlan = "", "none", true }, Job{Query: "q"}, ErrNeedsModel, 2, "--no-plan needs a model"},
		{"bad plan line", nil, Job{PlanName: "p.jsonl", PlanData: []byte(`{"tool":"nope","args":{}}`)}, ErrBadInput, 2, "p.jsonl:1: unknown tool"},
		{"window too small", func(s *config.Settings) { s.CtxSize = 50 }, Job{Query: "q"}, ErrContextTooSmall, 2, "raise --ctx-size to at least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := agenttest.Settings(t, agenttest.AnswerPlan+"\n")
			if tc.mod != nil {
				tc.mod(s)
			}
			rt, err := Open(ctx, s, Options{Mode: "run"})
			if err == nil {
				defer rt.Close()
				_, err = rt.Run(ctx, tc.job)
			}
			if KindOf(err) != tc.kind || ExitCode(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v (kind %d, exit %d)", err, KindOf(err), ExitCode(err))
			}
		})
	}
	// A timeout while planning a plan-only job.
	s := agenttest.Settings(t, `{"kind":"plan","delay_ms":5000,"text":"{}"}`+"\n")
	s.Timeout = 100 * time.Millisecond
	rt, err := Open(ctx, s, Options{Mode: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, _, err := rt.Plan(ctx, Job{Query: "q"}); KindOf(err) != ErrTimeout || ExitCode(err) != 7 {
		t.Fatalf("timeout: %v", err)
	}
}

// Many jobs at once on one runtime (go test -race): each its own result
// and run id, every event of the shared trace tagged with one.
func TestConcurrentJobsOnOneRuntime(t *testing.T) {
	const n = 16
	s := agenttest.Settings(t, strings.Repeat(agenttest.AnswerPlan+"\n", n))
	s.Trace = filepath.Join(t.TempDir(), "trace.jsonl")
	rt, err := Open(context.Background(), s, Options{Mode: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	results := make([]*react.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := rt.Run(context.Background(), Job{ID: fmt.Sprintf("job-%d", i), Query: fmt.Sprintf("question %d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	for i, res := range results {
		if res == nil || res.TerminationReason != react.ReasonSuccess || res.RunID != fmt.Sprintf("job-%d", i) {
			t.Fatalf("job %d: %+v", i, res)
		}
	}
	trace, _ := os.ReadFile(s.Trace)
	for i := range n {
		id := fmt.Sprintf(`"run_id":"job-%d"`, i)
		if c := strings.Count(string(trace), id); c < 4 {
			t.Fatalf("job %d has %d events", i, c)
		}
	}
	if lines := strings.Count(string(trace), "\n"); strings.Count(string(trace), `"run_id":"job-`) != lines {
		t.Fatalf("events without a run id:\n%s", trace)
	}
}
