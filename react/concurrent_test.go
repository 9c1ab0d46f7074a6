package react

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/tools"
)

// answerBackend answers every action call with final_answer naming the
// query it saw; safe for concurrent calls.
type answerBackend struct{}

func (answerBackend) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	task := req.Messages[1].Content
	return llm.Response{Text: fmt.Sprintf(`{"thought":"the answer is known now","tool":"final_answer","args":{"answer":%q}}`, "answer to "+strings.TrimPrefix(task, "Query: ")),
		Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
}
func (answerBackend) Close() error { return nil }

// Many runs at once on one Executor: no data race (go test -race), each run
// gets its own answer and state, every event carries its run id, and the
// Executor is left as it was.
func TestConcurrentRunsShareOneExecutor(t *testing.T) {
	var trace bytes.Buffer
	ex := &Executor{
		Options:  Options{NoPlan: true, MaxIterations: 3, ContextSize: 100000},
		Registry: tools.NewRegistry(tools.FinalAnswerTool{}, fakeTool{name: "echo", class: tools.ClassRead}),
		Env:      &tools.Env{Workspace: t.TempDir()},
		Backend:  answerBackend{},
	}
	ex.Events = NewTraceWriter(&trace, nil)
	before := *ex
	const n = 24
	results := make([]*Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = ex.RunWithID(context.Background(), fmt.Sprintf("run-%02d", i), fmt.Sprintf("question %d", i), nil)
		}()
	}
	wg.Wait()
	if !reflect.DeepEqual(before.Options, ex.Options) || ex.Gate != nil || ex.Log != nil || ex.Redact != nil {
		t.Fatalf("Run changed the executor: %+v", ex.Options)
	}
	for i, res := range results {
		if res.TerminationReason != ReasonSuccess || res.FinalAnswer != fmt.Sprintf("answer to question %d", i) || res.RunID != fmt.Sprintf("run-%02d", i) || res.Iterations != 1 {
			t.Fatalf("run %d: %s %q %s", i, res.TerminationReason, res.FinalAnswer, res.RunID)
		}
	}
	perRun := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(trace.String()), "\n") {
		var ev struct {
			Event string `json:"event"`
			RunID string `json:"run_id"`
			Query string `json:"query"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.RunID == "" {
			t.Fatalf("trace line %q: %v", line, err)
		}
		perRun[ev.RunID] = append(perRun[ev.RunID], ev.Event)
		if ev.Event == EventExecuteStart && ev.Query != fmt.Sprintf("question %s", strings.TrimLeft(strings.TrimPrefix(ev.RunID, "run-"), "0")) && ev.RunID != "run-00" {
			t.Fatalf("run %s started with query %q", ev.RunID, ev.Query)
		}
	}
	if len(perRun) != n {
		t.Fatalf("%d runs in the trace", len(perRun))
	}
	for id, evs := range perRun {
		if got := strings.Join(evs, ","); got != "execute_start,model_call,step,termination" {
			t.Fatalf("run %s events %s", id, got)
		}
	}
}
