package react

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
)

// Every model call marks only the system prompt (instructions and tools)
// persistable: the query, the plan, observations and replan transcripts
// live in later messages, so a backend's prompt cache on disk never holds
// them (llm.Request.PersistableMessages).
func TestOnlySystemPromptPersistable(t *testing.T) {
	const query = "QUERY-MARKER-7731"
	script := action(thought, "echo", `{"msg":"OBS-MARKER-1"}`) +
		planReply(planStep("echo", `{"msg":"PLAN-MARKER-2"}`), planStep("final_answer", `{"answer":"done"}`)) +
		action(thought, "fail", `{"msg":"OBS-MARKER-3"}`) +
		action(thought, "fail", `{"msg":"OBS-MARKER-4"}`) +
		`{"kind":"fallback","text":"{\"answer\":\"partial\"}"}` + "\n"
	h := newHarness(t, script)
	p := h.plan(`{"tool":"fail","args":{"msg":"OBS-MARKER-0"}}
{"tool":"fail","args":{"msg":"OBS-MARKER-5"}}`)
	h.ex.Run(context.Background(), query, p)
	if k := h.rec.kinds(); !slices.Contains(k, llm.KindAction) || !slices.Contains(k, llm.KindPlan) {
		t.Fatalf("model calls %v, want actions and a replan", k)
	}
	for i, req := range h.rec.reqs {
		if req.PersistableMessages != 1 || req.Messages[0].Role != llm.RoleSystem {
			t.Fatalf("call %d (%s): %d persistable messages, first %s; want the system prompt alone", i, req.Kind, req.PersistableMessages, req.Messages[0].Role)
		}
		var after strings.Builder
		for _, m := range req.Messages[1:] {
			after.WriteString(m.Content)
		}
		for _, m := range req.Messages[:req.PersistableMessages] {
			if strings.Contains(m.Content, "MARKER") {
				t.Errorf("call %d (%s): a persistable message holds run data:\n%s", i, req.Kind, m.Content)
			}
		}
		if !strings.Contains(after.String(), query) {
			t.Errorf("call %d (%s): the query is not in the messages after the persistable ones", i, req.Kind)
		}
	}
}
