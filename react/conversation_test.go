package react

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
)

func stepOf(tool, args, obs string, exit int, errText string) StepTrace {
	return StepTrace{Action: ToolCall{Tool: tool, Args: json.RawMessage(args)}, Observation: obs, ExitCode: exit, Error: errText}
}

func TestTurnEntry(t *testing.T) {
	var long []string
	for i := 1; i <= 20; i++ {
		long = append(long, fmt.Sprintf("file%02d.txt", i))
	}
	ok := &Result{TerminationReason: ReasonSuccess, FinalAnswer: "There are 20 files."}
	ok.Trace.Steps = []StepTrace{
		stepOf("list_files", `{"path":"."}`, strings.Join(long, "\n"), 0, ""),
		stepOf("read_file", `{"path":"nope.txt"}`, "no such file", 1, "no such file"),
		stepOf("final_answer", `{"answer":"There are 20 files."}`, "There are 20 files.", 0, ""),
	}
	cancelled := &Result{TerminationReason: ReasonCancelled, FinalAnswer: "No final answer"}
	stalled := &Result{TerminationReason: ReasonStalled, Message: "3 identical actions in a row", FinalAnswer: "partial"}
	for _, tc := range []struct {
		name   string
		res    *Result
		want   []string
		absent []string
	}{
		{"success", ok, []string{
			"Earlier turn 2 of this conversation:\nQuery: list the secret files",
			`- list_files {"path":"."} -> ok` + "\n    file01.txt\n",
			"    file08.txt\n    [... 12 more lines, 131 bytes, left out]",
			`- read_file {"path":"nope.txt"} -> failed (exit code 1): no such file`,
			"Answer: There are 20 files.",
		}, []string{"file09.txt", "final_answer", "hunter2"}},
		{"cancelled", cancelled, []string{"Query: list the", "(interrupted by the user before it finished; no answer)"}, []string{"Answer:"}},
		{"stalled", stalled, []string{"Answer: partial", "(ended without a proper answer: stalled: 3 identical actions in a row)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := TurnEntry(2, "list the hunter2 files", tc.res, func(s string) string { return strings.ReplaceAll(s, "hunter2", "secret") })
			if e.First != 2 || e.Last != 2 || e.Summary {
				t.Errorf("entry covers %d-%d summary %v", e.First, e.Last, e.Summary)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Text, w) {
					t.Errorf("missing %q in:\n%s", w, e.Text)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(e.Text, a) {
					t.Errorf("has %q in:\n%s", a, e.Text)
				}
			}
		})
	}
}

// A run given earlier turns shows them right after the system prompt and
// before its query, and reports them back unchanged when they fit.
func TestConversationInPrompt(t *testing.T) {
	h := newHarness(t, action(thought, "final_answer", `{"answer":"the second is b.txt"}`))
	h.ex.NoPlan = true
	first := &Result{TerminationReason: ReasonSuccess, FinalAnswer: "a.txt and b.txt"}
	first.Trace.Steps = []StepTrace{stepOf("echo", `{"msg":"ls"}`, "a.txt\nb.txt", 0, "")}
	h.ex.Conversation = []ConversationEntry{TurnEntry(1, "list the files", first, nil)}
	res := h.ex.Run(t.Context(), "now open the second one", nil)
	msgs := h.rec.reqs[0].Messages
	if len(msgs) < 4 || msgs[0].Role != llm.RoleSystem {
		t.Fatalf("messages: %+v", msgs)
	}
	if !strings.Contains(msgs[1].Content, "Earlier turn 1") || !strings.Contains(msgs[1].Content, "b.txt") {
		t.Errorf("message 1 is not the earlier turn: %q", msgs[1].Content)
	}
	if !strings.Contains(msgs[2].Content, "Query: now open the second one") {
		t.Errorf("message 2 is not the task: %q", msgs[2].Content)
	}
	if len(res.Conversation) != 1 || res.Conversation[0].Text != h.ex.Conversation[0].Text {
		t.Errorf("result conversation = %+v", res.Conversation)
	}
	if h.events(EventCompaction) != nil {
		t.Error("a conversation that fits was compacted")
	}
}

// The next turn's prompt starts with everything the previous turn's did
// but its query: the KV cache of the system prompt and the earlier turns
// is reused.
func TestConversationPrefixStable(t *testing.T) {
	var entries []ConversationEntry
	var prev []llm.Message
	for turn := 1; turn <= 3; turn++ {
		h := newHarness(t, action(thought, "echo", fmt.Sprintf(`{"msg":"t%d"}`, turn))+action(thought, "final_answer", `{"answer":"done"}`))
		h.ex.NoPlan = true
		h.ex.Conversation = entries
		q := fmt.Sprintf("query %d", turn)
		res := h.ex.Run(t.Context(), q, nil)
		msgs := h.rec.reqs[0].Messages
		// The previous turn's prompt up to its task message is a prefix of this one's.
		if prev != nil {
			for i := 0; i < len(prev)-2; i++ {
				if msgs[i] != prev[i] {
					t.Fatalf("turn %d: message %d changed", turn, i)
				}
			}
		}
		prev = msgs
		entries = append(res.Conversation, TurnEntry(turn, q, res, nil))
	}
}

// Earlier turns that would crowd the window are folded, oldest first, into
// one summary; the run reports the folded entries and a compaction event.
func TestConversationFolded(t *testing.T) {
	var entries []ConversationEntry
	for i := 1; i <= 12; i++ {
		res := &Result{TerminationReason: ReasonSuccess, FinalAnswer: fmt.Sprintf("answer %d: %s", i, strings.Repeat("word ", 60))}
		res.Trace.Steps = []StepTrace{stepOf("echo", fmt.Sprintf(`{"msg":"%d"}`, i), strings.Repeat("line of output\n", 8), 0, "")}
		entries = append(entries, TurnEntry(i, fmt.Sprintf("question %d", i), res, nil))
	}
	h := newHarness(t, action(thought, "final_answer", `{"answer":"ok"}`))
	h.ex.NoPlan = true
	h.ex.ContextSize = 2500
	h.ex.MaxTokens = 100
	h.ex.Conversation = entries
	res := h.ex.Run(t.Context(), "question 13", nil)
	if res.TerminationReason != ReasonSuccess {
		t.Fatalf("run: %s %s", res.TerminationReason, res.Message)
	}
	conv := res.Conversation
	if len(conv) == 0 || !conv[0].Summary || conv[0].First != 1 {
		t.Fatalf("not folded: %+v", conv)
	}
	last := conv[len(conv)-1]
	if last.Summary || last.Last != 12 {
		t.Errorf("the newest turn is not kept whole: %+v", last)
	}
	if !strings.Contains(conv[0].Text, `- turn 1: "question 1" (echo) -> answer 1:`) {
		t.Errorf("summary:\n%s", conv[0].Text)
	}
	evs := h.events(EventCompaction)
	if len(evs) != 1 || evs[0]["scope"] != "conversation" || evs[0]["first_turn"] != float64(1) {
		t.Fatalf("compaction events: %v", evs)
	}
	if before, after := evs[0]["tokens_before"].(float64), evs[0]["tokens_after"].(float64); after >= before {
		t.Errorf("tokens %v -> %v", before, after)
	}
	// Folding again what was folded changes nothing while it fits.
	h2 := newHarness(t, action(thought, "final_answer", `{"answer":"ok"}`))
	h2.ex.NoPlan, h2.ex.ContextSize, h2.ex.MaxTokens, h2.ex.Conversation = true, 2500, 100, conv
	res2 := h2.ex.Run(t.Context(), "question 13", nil)
	if len(res2.Conversation) != len(conv) || res2.Conversation[0].Text != conv[0].Text || h2.events(EventCompaction) != nil {
		t.Errorf("a fitting folded conversation was folded again")
	}
}

// A summary too long on its own loses its oldest lines.
func TestFoldEntriesCutsOldest(t *testing.T) {
	var entries []ConversationEntry
	for i := 1; i <= 50; i++ {
		entries = append(entries, TurnEntry(i, fmt.Sprintf("question number %d about something", i), &Result{TerminationReason: ReasonSuccess, FinalAnswer: "an answer"}, nil))
	}
	out, fold := fitConversation(entries, 200, llm.Counter{})
	if len(out) != 1 || fold == nil || fold.folded != 50 {
		t.Fatalf("out %d entries, fold %+v", len(out), fold)
	}
	if !strings.Contains(out[0].Text, "older lines left out)") || !strings.Contains(out[0].Text, "question number 50") || strings.Contains(out[0].Text, `"question number 1 `) {
		t.Errorf("summary:\n%s", out[0].Text)
	}
	if n := entryTokens(out[0], llm.Counter{}); n > 200 {
		t.Errorf("summary takes %d tokens, room 200", n)
	}
}

// Every tool call is announced by an action event before its step.
func TestActionEvent(t *testing.T) {
	h := newHarness(t, action(thought, "echo", `{"msg":"hi"}`)+action(thought, "final_answer", `{"answer":"x"}`))
	h.ex.NoPlan = true
	h.run("")
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(h.trace.String()), "\n") {
		var m map[string]any
		_ = json.Unmarshal([]byte(line), &m)
		if ev := m["event"]; ev == EventAction || ev == EventStep {
			order = append(order, ev.(string))
		}
	}
	if strings.Join(order, ",") != "action,step,step" {
		t.Errorf("events: %v (want an action before the echo step, none for final_answer)", order)
	}
	a := h.events(EventAction)[0]
	if a["tool"] != "echo" || a["iteration"] != float64(1) || fmt.Sprint(a["args"]) != "map[msg:hi]" {
		t.Errorf("action event: %v", a)
	}
}
