package react

import (
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
)

// The project instructions ride in the system message, the pinned prefix
// the llama backend persists (Request.PersistableMessages): its prompt
// cache entry is named by a hash of that prefix's tokens, so instructions
// that change make another entry, never a stale hit.
func TestProjectInstructionsInPinnedSystemPrompt(t *testing.T) {
	h := newHarness(t, action("I can answer this right away.", "final_answer", `{"answer":"done"}`))
	h.ex.NoPlan = true
	h.ex.ProjectInstructions = "From AGENTS.md:\nAlways answer in French."
	if res := h.run(""); res.TerminationReason != ReasonSuccess {
		t.Fatalf("%s %s", res.TerminationReason, res.Message)
	}
	req := h.rec.reqs[0]
	if req.PersistableMessages != 1 || req.Messages[0].Role != llm.RoleSystem {
		t.Fatalf("pinned prefix: %d messages, first %s", req.PersistableMessages, req.Messages[0].Role)
	}
	if !strings.Contains(req.Messages[0].Content, "From AGENTS.md:\nAlways answer in French.") {
		t.Errorf("system prompt lacks the instructions:\n%s", req.Messages[0].Content)
	}
	for _, m := range req.Messages[1:] {
		if strings.Contains(m.Content, "French") {
			t.Errorf("instructions outside the system prompt: %s", m.Content)
		}
	}

	before := h.ex.SystemMessage().Content
	h.ex.ProjectInstructions = "From AGENTS.md:\nAlways answer in German."
	after := h.ex.SystemMessage().Content
	if before == after || !strings.Contains(after, "German") {
		t.Errorf("the pinned system message did not follow the instructions")
	}
	h.ex.ProjectInstructions = ""
	if strings.Contains(h.ex.SystemMessage().Content, "Project instructions") {
		t.Error("no instructions, yet the system message names them")
	}
}
