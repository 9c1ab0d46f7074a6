package agent

import (
	"context"
	"fmt"
	"github.com/tactcli/tact/agent/agenttest"
	"strings"
	"testing"

	"github.com/tactcli/tact/react"
)

// Jobs run with a Conversation are its turns: the planner and the executor
// see the earlier ones (the script fails a call whose prompt lacks what it
// expects), a cancelled turn is recorded as interrupted, Clear forgets.
func TestConversationTurns(t *testing.T) {
	script := `{"kind":"plan","expect_not":["Earlier turn"],"text":"{\"plan\":[{\"thought\":\"answer right away\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"forty-two\"}}]}"}
{"kind":"plan","expect":["This query continues a conversation","Earlier turn 1 of this conversation","Query: what is the answer?","Answer: forty-two"],"text":"{\"plan\":[{\"thought\":\"ask the model\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"\"}}]}"}
{"kind":"fill","expect":["Earlier turn 1 of this conversation","Query: and doubled?"],"text":"{\"answer\":\"eighty-four\"}"}
{"kind":"plan","delay_ms":5000,"text":"{\"plan\":[]}"}
{"kind":"plan","expect":["Earlier turn 3 of this conversation","interrupted by the user"],"text":"{\"plan\":[{\"thought\":\"answer right away\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"it was interrupted\"}}]}"}
{"kind":"plan","expect_not":["Earlier turn"],"text":"{\"plan\":[{\"thought\":\"answer right away\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"fresh\"}}]}"}
`
	s := agenttest.Settings(t, script)
	var starts []map[string]any
	rt, err := Open(context.Background(), s, Options{Mode: "chat", Events: react.SinkFunc(func(ev react.Event) {
		if ev.Type == react.EventRunStart {
			starts = append(starts, ev.Fields)
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	conv := NewConversation()
	turn := func(ctx context.Context, q, want string, reason react.Reason) {
		t.Helper()
		res, err := rt.Run(ctx, Job{Query: q, Conversation: conv})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if res.TerminationReason != reason || (want != "" && res.FinalAnswer != want) {
			t.Fatalf("%q: %s %q (%s)", q, res.TerminationReason, res.FinalAnswer, res.Message)
		}
	}
	turn(context.Background(), "what is the answer?", "forty-two", react.ReasonSuccess)
	turn(context.Background(), "and doubled?", "eighty-four", react.ReasonSuccess)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	turn(ctx, "a turn cut short", "", react.ReasonCancelled)
	turn(context.Background(), "did that finish?", "it was interrupted", react.ReasonSuccess)
	if conv.Turns() != 4 || len(conv.Texts()) != 4 || !strings.Contains(conv.Texts()[2], "interrupted by the user") {
		t.Fatalf("turns %d: %q", conv.Turns(), conv.Texts())
	}
	if conv.Tokens(rt.Backend) <= 0 {
		t.Error("the earlier turns take no tokens")
	}
	id := conv.ID()
	conv.Clear()
	if conv.ID() == id || conv.Turns() != 0 {
		t.Fatal("Clear kept the conversation")
	}
	turn(context.Background(), "start over", "fresh", react.ReasonSuccess)
	var turns []any
	for _, f := range starts {
		turns = append(turns, f["turn"])
	}
	if got := fmt.Sprint(turns); got != "[1 2 3 4 1]" {
		t.Errorf("run_start turns %s, want 1,2,3,4,1", got)
	}
	if starts[0]["conversation"] != starts[3]["conversation"] || starts[0]["conversation"] == starts[4]["conversation"] {
		t.Errorf("conversation ids: %v %v %v", starts[0]["conversation"], starts[3]["conversation"], starts[4]["conversation"])
	}
}
