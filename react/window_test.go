package react

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/tools"
)

// dumpTool prints n copies of a numbered line: a tool with a big output.
type dumpTool struct{ calls *int }

func (dumpTool) Name() string        { return "dump" }
func (dumpTool) Description() string { return "print n lines" }
func (dumpTool) Class() tools.Class  { return tools.ClassRead }
func (dumpTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"},"n":{"type":"integer"}},"required":["msg"],"additionalProperties":false}`)
}
func (d dumpTool) Run(_ context.Context, _ *tools.Env, args json.RawMessage) tools.Result {
	if d.calls != nil {
		*d.calls++
	}
	var a struct {
		Msg string `json:"msg"`
		N   int    `json:"n"`
	}
	_ = json.Unmarshal(args, &a)
	var b strings.Builder
	for i := 1; i <= a.N; i++ {
		fmt.Fprintf(&b, "%s line %04d of the output\n", a.Msg, i)
	}
	return tools.Result{Output: b.String()}
}

// windowHarness is a free-mode harness with the dump tool, the script
// backend's estimated counts and a context window of size tokens.
func windowHarness(t *testing.T, script string, size int) *harness {
	t.Helper()
	h := newHarness(t, script)
	h.ex.Registry = tools.NewRegistry(tools.FinalAnswerTool{}, dumpTool{calls: &h.calls}, fakeTool{name: "echo", class: tools.ClassRead, calls: &h.calls}, fakeTool{name: "poke", class: tools.ClassWrite, calls: &h.calls})
	h.ex.Planner = nil
	h.ex.NoPlan = true
	h.ex.ContextSize = size
	h.ex.MaxTokens = 100
	return h
}

func dumpActions(n, lines int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(action(thought, "dump", fmt.Sprintf(`{"msg":"part%d","n":%d}`, i, lines)))
	}
	return b.String()
}

func summaries(n int, text string) string {
	var b strings.Builder
	for range n {
		e, _ := json.Marshal(map[string]any{"kind": "summary", "text": text})
		b.Write(e)
		b.WriteByte('\n')
	}
	return b.String()
}

// A 40-step run on a small window: compaction repeats, the pinned prefix
// is never rewritten, the last KeepSteps steps stay whole, every prompt
// fits with its reply, the summary is in the history, and the trace and
// state count the compactions.
func TestCompactionOverLongRun(t *testing.T) {
	const size = 3000
	h := windowHarness(t, dumpActions(40, 12)+summaries(40, `{"summary":"read parts so far; each printed numbered lines"}`), size)
	h.ex.MaxIterations = 40
	res := h.ex.Run(context.Background(), "read every part", nil)
	if res.TerminationReason != ReasonMaxIterations || res.Iterations != 40 {
		t.Fatalf("%s after %d: %s", res.TerminationReason, res.Iterations, res.Message)
	}
	events := h.events("compaction")
	if res.State.Compactions < 4 || len(events) != res.State.Compactions {
		t.Fatalf("compactions: state %d, events %d", res.State.Compactions, len(events))
	}
	for _, ev := range events {
		if ev["method"] != "model" || ev["tokens_after"].(float64) >= ev["tokens_before"].(float64) {
			t.Fatalf("compaction event %v", ev)
		}
	}
	var pinned []llm.Message
	compacted := false
	actionCall := 0
	for _, req := range h.rec.reqs {
		if n := llm.EstimatePrompt(req.Messages); n+req.MaxTokens > size || req.MaxTokens > 100 {
			t.Fatalf("%s prompt %d + reply %d does not fit %d", req.Kind, n, req.MaxTokens, size)
		}
		if pinned == nil {
			pinned = req.Messages[:2]
		}
		if req.Messages[0] != pinned[0] || req.Messages[1] != pinned[1] {
			t.Fatalf("pinned prefix rewritten in a %s call", req.Kind)
		}
		if req.Kind != llm.KindAction {
			continue
		}
		actionCall++
		if strings.Contains(req.Messages[2].Content, "were compacted") {
			compacted = true
			if !strings.Contains(req.Messages[2].Content, "read parts so far") {
				t.Fatalf("summary missing from the note: %q", req.Messages[2].Content)
			}
		}
		// The last three steps are whole: their observations with every line.
		all := joinContents(req.Messages)
		for k := max(actionCall-3, 1); k < actionCall; k++ {
			if !strings.Contains(all, fmt.Sprintf("part%d line 0012 of the output", k)) {
				t.Fatalf("action call %d: step %d not kept whole", actionCall, k)
			}
		}
		if compacted && strings.Contains(all, "part1 line 0001") && actionCall > 5 {
			t.Fatalf("action call %d still holds step 1's output", actionCall)
		}
	}
	if !compacted {
		t.Fatal("no prompt carried the compaction note")
	}
	// The call after a compaction reuses (the script backend's simulated
	// cache) at least the pinned prefix.
	pinnedTokens := llm.EstimatePrompt(pinned) - 3
	afterCompaction := compactedIterations(h)
	for _, st := range res.Trace.Steps {
		if afterCompaction[st.Iteration] && st.TokenUsage.CachedTokens < pinnedTokens {
			t.Fatalf("step %d after a compaction: cached %d < pinned %d", st.Iteration, st.TokenUsage.CachedTokens, pinnedTokens)
		}
		if st.ContextTokens <= 0 || st.ContextTokens > size {
			t.Fatalf("step %d context_tokens %d", st.Iteration, st.ContextTokens)
		}
	}
	var out struct {
		State map[string]any `json:"state"`
	}
	b, _ := json.Marshal(res)
	if json.Unmarshal(b, &out) != nil || out.State["compactions"] != float64(res.State.Compactions) {
		t.Fatalf("--json state: %s", b)
	}
}

// compactedIterations are the iterations whose action call followed a compaction.
func compactedIterations(h *harness) map[int]bool {
	out := map[int]bool{}
	iter := 0
	pending := false
	for _, line := range strings.Split(strings.TrimSpace(h.trace.String()), "\n") {
		var m map[string]any
		_ = json.Unmarshal([]byte(line), &m)
		switch m["event"] {
		case "compaction":
			pending = true
		case "step":
			iter++
			if pending {
				out[iter] = true
				pending = false
			}
		}
	}
	return out
}

func joinContents(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// Without a usable summary from the model (a reply that is not one), the
// summary is extracted from the observations: tool, arguments, outcome.
func TestCompactionExtractiveWhenModelSummaryFails(t *testing.T) {
	h := windowHarness(t, dumpActions(10, 12)+summaries(10, "this is not JSON"), 2000)
	h.ex.MaxIterations = 10
	res := h.ex.Run(context.Background(), "read every part", nil)
	if res.State.Compactions == 0 {
		t.Fatalf("no compaction (%s)", res.TerminationReason)
	}
	ev := h.events("compaction")[0]
	if ev["method"] != "extractive" || !strings.Contains(ev["reason"].(string), "not a summary") {
		t.Fatalf("event %v", ev)
	}
	var note string
	for _, req := range h.rec.reqs {
		if len(req.Messages) > 2 && strings.Contains(req.Messages[2].Content, "were compacted") {
			note = req.Messages[2].Content
			break
		}
	}
	if !regexp.MustCompile(`- step 1: dump \{"msg":"part1","n":12\} -> ok, 12 lines, \d+ bytes: part1 line 0001 of the output`).MatchString(note) {
		t.Fatalf("extractive note:\n%s", note)
	}
}

// With no model at all the extractive summary is made directly.
func TestCompactionWithoutModelIsExtractive(t *testing.T) {
	r := &run{e: &Executor{Backend: llm.None{}, Redact: func(s string) string { return s }}}
	text, method, why, _ := r.modelSummary(nil, 100)
	if text != "" || method != "" || why != "no model" {
		t.Fatalf("%q %q %q", text, method, why)
	}
}

// An output far larger than the free context is cut to the step's share,
// head and tail kept, with a marker saying what was cut.
func TestObservationCutToTheRoomLeft(t *testing.T) {
	h := windowHarness(t, action(thought, "dump", `{"msg":"big","n":5000}`)+action(thought, "final_answer", `{"answer":"done"}`), 2000)
	res := h.ex.Run(context.Background(), "q", nil)
	if res.TerminationReason != ReasonSuccess {
		t.Fatalf("%s: %s", res.TerminationReason, res.Message)
	}
	r := h.ex.newRun(context.Background(), "", "q", nil, false)
	limit := r.win.observationLimit(h.ex.MaxObservationTokens)
	obs := res.Trace.Steps[0].Observation
	if limit >= 2000 || llm.EstimateText(obs) > limit {
		t.Fatalf("observation %d tokens, limit %d", llm.EstimateText(obs), limit)
	}
	if !strings.HasPrefix(obs, "big line 0001") || !strings.HasSuffix(obs, "big line 5000 of the output\n") || !regexp.MustCompile(`\[\.\.\. lines \d+-\d+ cut \(\d+ bytes, about \d+ tokens\) \.\.\.\]`).MatchString(obs) {
		t.Fatalf("observation:\n%s", obs)
	}
	if n := llm.EstimatePrompt(h.rec.reqs[1].Messages); n+h.rec.reqs[1].MaxTokens > 2000 {
		t.Fatalf("next prompt %d tokens", n)
	}
}

// read_file's cut marker names the offset that reads on: that call's
// first line is the first line the observation left out.
func TestReadFileCutHintReadsOn(t *testing.T) {
	h, ws := realHarness(t, action(thought, "final_answer", `{"answer":"done"}`))
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "row %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(ws, "rows.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ex.ContextSize = 1500
	h.ex.MaxTokens = 100
	res := h.run(`{"tool":"read_file","args":{"path":"rows.txt","offset":100}}`)
	obs := res.Trace.Steps[0].Observation
	m := regexp.MustCompile(`they are lines (\d+)-(\d+) of the file; read them with read_file (\{.*?\})`).FindStringSubmatch(obs)
	if m == nil {
		t.Fatalf("no hint:\n%s", obs)
	}
	head := strings.Split(obs, "\n[...")[0]
	lines := strings.Split(strings.TrimSpace(head), "\n")
	lastShown := lines[len(lines)-1]
	if m[1] != fmt.Sprint(atoiAfter(t, lastShown, "row ")+1) {
		t.Fatalf("hint starts at line %s, last line shown %q", m[1], lastShown)
	}
	more := tools.ReadFile{}.Run(context.Background(), h.ex.Env, json.RawMessage(m[3]))
	if !strings.HasPrefix(more.Output, "row "+m[1]+"\n") {
		t.Fatalf("read_file %s gave %.40q", m[3], more.Output)
	}
}

func atoiAfter(t *testing.T, s, prefix string) int {
	var n int
	if _, err := fmt.Sscanf(strings.TrimPrefix(s, prefix), "%d", &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// When even a full compaction leaves no room for the reply, the run ends
// as token_budget (exit 6) with the fallback answer, never as an error.
func TestNothingMoreFitsEndsAsTokenBudget(t *testing.T) {
	h := windowHarness(t, dumpActions(5, 40)+summaries(5, `{"summary":"`+strings.Repeat("long summary ", 40)+`"}`), 0)
	r := h.ex.newRun(context.Background(), "", "read every part", nil, false)
	probe := append(r.messages(), llm.Message{Role: llm.RoleUser, Content: "Choose the first action.\nAttempts left: 10. Reply with the next action as one JSON object."})
	// Room for the first prompt and its reply, and barely more.
	h.ex.ContextSize = llm.EstimatePrompt(probe) + 100 + 40
	if err := h.ex.CheckContext("read every part", nil); err != nil {
		t.Fatal(err)
	}
	res := h.ex.Run(context.Background(), "read every part", nil)
	if res.TerminationReason != ReasonTokenBudget || res.ExitCode() != 6 || !strings.Contains(res.Message, "context window full") {
		t.Fatalf("%s (%d): %s", res.TerminationReason, res.ExitCode(), res.Message)
	}
	if !strings.Contains(res.FinalAnswer, "Steps run:") {
		t.Fatalf("fallback answer %q", res.FinalAnswer)
	}
}

// A window that cannot hold the system prompt, tools and query is a
// usage error naming the tokens needed.
func TestContextTooSmallForThePinnedPrompt(t *testing.T) {
	h := windowHarness(t, dumpActions(1, 1), 200)
	err := h.ex.CheckContext("q", nil)
	var small *llm.ContextTooSmallError
	if !errors.As(err, &small) || small.Context != 200 || small.Need() <= 200 || !errors.Is(err, llm.ErrContextFull) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%d tokens needed", small.Need())) {
		t.Fatalf("message %q", err)
	}
	// No model: nothing is ever sent, so any window fits.
	h.ex.Backend = llm.None{}
	if err := h.ex.CheckContext("q", nil); err != nil {
		t.Fatalf("no model: %v", err)
	}
}

// --token-budget: the action chosen by the reply that crosses the budget
// is recorded but never run.
func TestTokenBudgetCrossingReplyDoesNotRun(t *testing.T) {
	h := windowHarness(t, action(thought, "poke", `{"msg":"x"}`)+action(thought, "poke", `{"msg":"y"}`), 0)
	h.ex.TokenBudget = 50 // the first prompt alone is far more
	res := h.ex.Run(context.Background(), "q", nil)
	if res.TerminationReason != ReasonTokenBudget || res.ExitCode() != 6 {
		t.Fatalf("%s: %s", res.TerminationReason, res.Message)
	}
	if h.calls != 0 {
		t.Fatalf("the tool ran %d times", h.calls)
	}
	if len(res.Trace.Steps) != 1 || res.Trace.Steps[0].ExitCode != ExitCodeNotRun || !strings.Contains(res.Trace.Steps[0].Observation, "not run") {
		t.Fatalf("steps %+v", res.Trace.Steps)
	}
}

// A replan's transcript is shortened to fit the window; a planning prompt
// that cannot fit at all is a ContextTooSmallError.
func TestPlannerFitsTheWindow(t *testing.T) {
	reg := tools.NewRegistry(tools.FinalAnswerTool{}, dumpTool{})
	sc, _ := llm.ParseScript(strings.NewReader(strings.Repeat(planReply(planStep("final_answer", `{"answer":"x"}`)), 2)), "s")
	rec := &recorder{b: sc}
	p := &planner.Planner{Backend: rec, Registry: reg, Tools: reg.Names(), MaxTokens: 100}
	var tr []planner.TranscriptEntry
	for i := 1; i <= 20; i++ {
		tr = append(tr, planner.TranscriptEntry{Step: i, Tool: "dump", Args: json.RawMessage(`{}`), Stdout: strings.Repeat(fmt.Sprintf("out%d\n", i), 200)})
	}
	p.ContextSize = 1500
	if _, _, err := p.Plan(context.Background(), "q", tr, nil); err != nil {
		t.Fatal(err)
	}
	req := rec.reqs[0]
	if n := llm.EstimatePrompt(req.Messages); n+req.MaxTokens > 1500 || req.MaxTokens != 100 {
		t.Fatalf("replan prompt %d + %d", n, req.MaxTokens)
	}
	user := req.Messages[1].Content
	if !strings.Contains(user, "- step 20: dump") || !strings.Contains(user, "out1 [rest left out to fit the context window]") || strings.Count(user, "out20") != 200 {
		t.Fatalf("transcript not shortened from the oldest:\n%s", user)
	}
	// Tighter: the oldest entries go.
	p.ContextSize = 900
	if _, _, err := p.Plan(context.Background(), "q", tr, nil); err != nil {
		t.Fatal(err)
	}
	user = rec.reqs[1].Messages[1].Content
	if !regexp.MustCompile(`\(\d+ earlier steps left out to fit the context window\)`).MatchString(user) || strings.Contains(user, "- step 1: dump") || !strings.Contains(user, "- step 20: dump") {
		t.Fatalf("oldest entries not dropped:\n%s", user)
	}
	if n := llm.EstimatePrompt(rec.reqs[1].Messages); n+rec.reqs[1].MaxTokens > 900 {
		t.Fatalf("replan prompt %d", n)
	}
	p.ContextSize = 100
	_, _, err := p.Plan(context.Background(), "q", nil, nil)
	var small *llm.ContextTooSmallError
	if !errors.As(err, &small) || !strings.Contains(err.Error(), "planning prompt") {
		t.Fatalf("err = %v", err)
	}
}
