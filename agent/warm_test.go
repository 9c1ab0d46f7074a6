package agent

import (
	"context"
	"github.com/tactcli/tact/agent/agenttest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tactcli/tact/llm"
)

// warmRecorder is a backend that can warm: it records what it was asked
// to ready and the calls made after.
type warmRecorder struct {
	llm.Backend
	mu     sync.Mutex
	warmed []llm.Message
	calls  []llm.Request
}

func (w *warmRecorder) Warm(_ context.Context, msgs []llm.Message) (llm.Usage, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warmed = append(w.warmed, msgs...)
	return llm.Usage{PromptTokens: 10}, nil
}

func (w *warmRecorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	w.mu.Lock()
	w.calls = append(w.calls, req)
	w.mu.Unlock()
	return w.Backend.Complete(ctx, req)
}

// Warm readies exactly the system messages the jobs' first calls start
// with, redacted as they send them: the planner's and, for a run without
// a plan, the executor's. Without the capability it does nothing.
func TestWarmReadiesTheFirstCallsSystemPrompt(t *testing.T) {
	const secret = "s3cr3t-value-123"
	script := agenttest.AnswerPlan + "\n" + `{"kind":"action","text":"{\"thought\":\"done\",\"action\":\"final_answer\",\"args\":{\"answer\":\"ok\"}}"}` + "\n"
	for _, noPlan := range []bool{false, true} {
		s := agenttest.Settings(t, script)
		s.NoPlan = noPlan
		s.ThoughtPrompt = "Think it through; the deploy key is " + secret + "."
		rt, err := Open(context.Background(), s, Options{Mode: "serve", Secrets: []string{secret}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		if done, err := rt.Warm(context.Background()); err != nil || done != nil {
			t.Fatalf("the script backend cannot warm: %v, %v", done, err)
		}
		rec := &warmRecorder{Backend: rt.Backend}
		rt.Backend = llm.Redacting(rec, rt.Redactor.Redact)
		rt.planner.Backend = rt.Backend

		done, err := rt.Warm(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"executor", "planner"}
		if noPlan {
			want = want[:1]
		}
		var got []string
		for _, w := range done {
			got = append(got, w.Prompt)
		}
		if !reflect.DeepEqual(got, want) || len(rec.warmed) != len(want) {
			t.Fatalf("warmed %v (%d messages), want %v", got, len(rec.warmed), want)
		}
		for _, m := range rec.warmed {
			if m.Role != llm.RoleSystem || strings.Contains(m.Content, secret) {
				t.Fatalf("warmed a %s message, or one holding the secret", m.Role)
			}
		}
		if _, err := rt.Run(context.Background(), Job{Query: "answer " + secret}); err != nil {
			t.Fatal(err)
		}
		first := map[llm.Kind]llm.Message{}
		for _, c := range rec.calls {
			if _, ok := first[c.Kind]; !ok {
				first[c.Kind] = c.Messages[0]
			}
		}
		if !noPlan && first[llm.KindPlan] != rec.warmed[1] {
			t.Errorf("the planner's first message differs from the warmed one:\n%q\n%q", first[llm.KindPlan].Content, rec.warmed[1].Content)
		}
		if noPlan && first[llm.KindAction] != rec.warmed[0] {
			t.Errorf("the executor's first message differs from the warmed one:\n%q\n%q", first[llm.KindAction].Content, rec.warmed[0].Content)
		}
	}
}
