package runplan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runplan"
	"github.com/tactcli/tact/sandbox"
	"github.com/tactcli/tact/tools"
)

// TestMain lets this test binary serve as run_command's sandbox helper,
// which re-executes the running program.
func TestMain(m *testing.M) {
	sandbox.ServeHelper()
	os.Exit(m.Run())
}

// counting is a backend that keeps the kind of every call.
type counting struct {
	mu    sync.Mutex
	b     llm.Backend
	kinds []llm.Kind
}

func (c *counting) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	c.mu.Lock()
	c.kinds = append(c.kinds, req.Kind)
	c.mu.Unlock()
	return c.b.Complete(ctx, req)
}
func (c *counting) Close() error { return nil }

func script(t *testing.T, lines ...string) *counting {
	t.Helper()
	sc, err := llm.ParseScript(strings.NewReader(strings.Join(lines, "\n")), "test.script")
	if err != nil {
		t.Fatal(err)
	}
	return &counting{b: sc}
}

// action is a script-backend reply choosing a tool call.
func action(thought, tool string, args map[string]any) string {
	text, _ := json.Marshal(map[string]any{"thought": thought, "tool": tool, "args": args})
	line, _ := json.Marshal(map[string]string{"kind": "action", "text": string(text)})
	return string(line)
}

func executor(t *testing.T, ws string, backend llm.Backend) *react.Executor {
	t.Helper()
	env, err := tools.NewEnv(ws)
	if err != nil {
		t.Fatal(err)
	}
	return &react.Executor{
		Options: react.Options{
			MaxIterations: 10, RetryBuffer: 2, ReplanThreshold: 2, RequireThought: true, MinThoughtLength: 10,
			StallThreshold: 3, MaxObservationTokens: 2000,
		},
		Registry: tools.DefaultRegistry(), Env: env, Backend: backend,
	}
}

// calls are a trace's tool runs (tool and resolved arguments), final
// answer included.
func calls(t *testing.T, res *react.Result) []any {
	t.Helper()
	var out []any
	for _, st := range res.Trace.Steps {
		var args any
		if err := json.Unmarshal(st.Action.Args, &args); err != nil {
			t.Fatal(err)
		}
		out = append(out, []any{st.Action.Tool, args})
	}
	return out
}

// TestReplayRecordedRun records a free run whose second step reads the path
// the first printed, builds a plan from it, and runs the plan again on the
// same workspace: with AnswerJQ without any model, and with the answer left
// to one model call.
func TestReplayRecordedRun(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes", "todo.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const query = "what is on my todo list?"
	model := script(t,
		action("Find where the todo list is kept.", "run_command", map[string]any{"command": `printf 'notes/todo.txt\n'`}),
		action("Read the todo list that was found.", "read_file", map[string]any{"path": "notes/todo.txt"}),
		action("The list has one item, answer now.", "final_answer", map[string]any{"answer": "buy milk"}),
	)
	rec := executor(t, ws, model)
	rec.NoPlan = true
	recorded := rec.Run(context.Background(), query, nil)
	if !recorded.Success {
		t.Fatalf("recorded run: %s: %s", recorded.TerminationReason, recorded.Message)
	}
	want := calls(t, recorded)[:2] // the tool runs; each replay has its own answer

	cases := []struct {
		name     string
		answerJQ string
		backend  func(t *testing.T) *counting // nil: no model
		answer   string
		kinds    []llm.Kind
	}{
		{"no model", ".steps[-1].output", nil, "buy milk\n", nil},
		{"answer filled by one model call", "", func(t *testing.T) *counting {
			return script(t, `{"kind":"fill","text":"{\"answer\":\"buy milk\"}"}`)
		}, "buy milk", []llm.Kind{llm.KindFill}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, omitted, err := runplan.Build(query, recorded.Trace.Steps, runplan.Options{RunID: "run-1", AnswerJQ: c.answerJQ})
			if err != nil {
				t.Fatal(err)
			}
			if len(omitted) != 0 {
				t.Fatalf("omitted %v", omitted)
			}
			if kind, _ := planner.ClassifyArg(p.Steps[1].Args["path"]); kind != planner.ArgJQ {
				t.Fatalf("read_file path = %s, want a $jq reference", p.Steps[1].Args["path"])
			}
			var buf bytes.Buffer
			if err := p.WriteJSONL(&buf); err != nil {
				t.Fatal(err)
			}
			t.Logf("plan:\n%s", buf.String())
			saved, err := planner.Parse(&buf, "plan.jsonl", tools.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			var backend llm.Backend = llm.None{}
			var model *counting
			if c.backend != nil {
				model = c.backend(t)
				backend = model
			}
			res := executor(t, ws, backend).Run(context.Background(), saved.Query(), saved)
			if !res.Success || res.FinalAnswer != c.answer {
				t.Fatalf("replay: %s (%s), answer %q, want %q", res.TerminationReason, res.Message, res.FinalAnswer, c.answer)
			}
			got := calls(t, res)
			if len(got) != 3 || !reflect.DeepEqual(got[:2], want) {
				t.Fatalf("replayed calls %v\nwant %v then final_answer", got, want)
			}
			if model != nil && !reflect.DeepEqual(model.kinds, c.kinds) {
				t.Fatalf("model calls %v, want %v", model.kinds, c.kinds)
			}
		})
	}
}
