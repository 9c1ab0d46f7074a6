package react

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/schema"
)

// Context-window management: every prompt is counted before it is sent
// (the backend's tokenizer, else llm's estimate), observations are cut to
// the room a step has, and when a prompt would pass CompactAt of the window
// the older steps are replaced by a summary. The pinned prefix (system
// prompt with the tools, then the query and plan) is never rewritten, so a
// backend with a KV cache still reuses it after a compaction.

// Defaults of the context options.
const (
	DefaultCompactAt = 0.8
	DefaultKeepSteps = 3
	minObservation   = 32   // tokens an observation keeps however full the window
	maxSummaryRoom   = 1024 // tokens a compaction summary may take at most
)

// histKind tells the messages of the model's view apart for compaction.
type histKind int

const (
	histPinned  histKind = iota // system prompt, task: never rewritten
	histStep                    // a turn's messages: request, action, observation, notes
	histSummary                 // the summary of compacted steps
	histPlan                    // a revised plan: kept whole when its turn is compacted
)

// histMsg is one message of the model's view. Content is redacted when the
// message is added: the conversation only ever goes to the model.
type histMsg struct {
	llm.Message
	turn int
	kind histKind
}

// window is a run's context budget, fixed when the run starts.
type window struct {
	size      int // tokens; 0: unknown, no limit
	count     llm.Counter
	compactAt float64
	keep      int
	reply     int // room kept for each reply
	pinned    int // tokens of the pinned prefix
	// bytesPerToken of the pinned prefix: turns a token target into a
	// first byte cut before counting exactly.
	bytesPerToken float64
}

// historyRoom is what the window leaves for everything after the pinned
// prefix, the reply's room apart.
func (w *window) historyRoom() int { return w.size - w.pinned - w.reply }

// summaryRoom is the most a compaction summary may take: a quarter of the
// history room, within a reply's room (--max-tokens) and maxSummaryRoom.
func (w *window) summaryRoom() int {
	return min(max(w.historyRoom()/4, minObservation), maxSummaryRoom, max(w.reply, minObservation))
}

// observationLimit is the most tokens one observation may take: the smaller
// of --max-observation-tokens and an even share of the history room among
// the kept steps (each with its request and action), so that after a
// compaction the summary and the last KeepSteps steps always fit.
func (w *window) observationLimit(maxObs int) int {
	if w.size <= 0 {
		return maxObs
	}
	share := (w.historyRoom() - w.summaryRoom()) / (2 * (w.keep + 1))
	return min(maxObs, max(share, minObservation))
}

// contextFullError is a prompt that no compaction can make fit.
type contextFullError struct {
	prompt, reply, size int
}

func (e *contextFullError) Error() string {
	return fmt.Sprintf("context window full: the prompt needs %d tokens and the reply %d, the context holds %d, and nothing more can be compacted (raise --ctx-size, or lower --max-tokens, --keep-steps or --max-observation-tokens)",
		e.prompt, e.reply, e.size)
}

func (e *contextFullError) Unwrap() error { return llm.ErrContextFull }

// CheckContext reports whether the prompt every model call starts with (the
// system prompt with the tools, the query and the plan) fits the context
// window with room for a reply: a *llm.ContextTooSmallError when it cannot.
// Runs that never call a model (no backend) always fit.
func (e *Executor) CheckContext(query string, plan *planner.Plan) error {
	r := e.newRun(context.Background(), "", query, plan, false)
	if !llm.HasModel(e.Backend) || r.win.size <= 0 {
		return nil
	}
	probe := append(r.messages(), llm.Message{Role: llm.RoleUser, Content: prompt.Render("next", prompt.Next{Reason: "Choose the first action.", Remaining: r.st.MaxSteps})})
	n := r.win.count.Prompt(probe)
	if n+r.win.reply > r.win.size {
		what := "the system prompt with the tools and the query"
		if r.plan != nil {
			what = "the system prompt with the tools, the query and the plan"
		}
		return &llm.ContextTooSmallError{What: what, Prompt: n, Reply: r.win.reply, Context: r.win.size}
	}
	return nil
}

// initWindow sizes the run's window once the pinned prefix is known.
func (r *run) initWindow() {
	e := r.e
	w := &r.win
	w.count = llm.CounterFor(e.Backend)
	w.size = e.ContextSize
	if w.size <= 0 {
		w.size = llm.ContextSizeOf(e.Backend)
	}
	w.compactAt, w.keep = e.CompactAt, e.KeepSteps
	w.reply = e.MaxTokens
	if w.reply <= 0 {
		w.reply = planner.DefaultReplyRoom
	}
	if w.size > 0 {
		w.reply = min(w.reply, w.size)
	}
	msgs := r.messages()
	w.pinned = w.count.Prompt(msgs)
	bytes := 0
	for _, m := range msgs {
		bytes += len(m.Content)
	}
	w.bytesPerToken = float64(llm.EstimateBytesPerToken)
	if w.pinned > 0 {
		w.bytesPerToken = max(float64(bytes)/float64(w.pinned), 1)
	}
}

// contextInfo is the window as the trace's execute_start shows it.
func (r *run) contextInfo() map[string]any {
	counting := "estimate"
	if r.win.count.Exact() {
		counting = "exact"
	}
	return map[string]any{"size": r.win.size, "counting": counting, "pinned_tokens": r.win.pinned,
		"reply_tokens": r.win.reply, "compact_at": r.win.compactAt, "keep_steps": r.win.keep,
		"observation_tokens": r.win.observationLimit(r.e.MaxObservationTokens)}
}

// addMsg appends a message of the current turn, redacted.
//
// The prompt's redaction is the backend's (llm.Redacting, applied where the
// runtime opens it); the history is redacted here as well because the
// executor cuts its text (a compaction's extract, a summary cut to room),
// and a cut of raw text could keep part of a secret the backend's
// redaction no longer recognises. The backend's second pass finds no
// secret left here, and is deterministic like this one, so the prompt
// prefix stays stable.
func (r *run) addMsg(role llm.Role, content string) { r.addHist(role, content, histStep) }

func (r *run) addHist(role llm.Role, content string, kind histKind) {
	r.hist = append(r.hist, histMsg{Message: llm.Message{Role: role, Content: r.e.Redact(content)}, turn: r.turn, kind: kind})
}

// messages is the model's view of the conversation.
func (r *run) messages() []llm.Message {
	out := make([]llm.Message, len(r.hist))
	for i, m := range r.hist {
		out[i] = m.Message
	}
	return out
}

// prepared is a prompt ready to send: counted, and with its reply's limit.
type prepared struct {
	kind      llm.Kind
	msgs      []llm.Message
	tokens    int
	maxTokens int
}

// prepare builds the prompt of a call: the conversation plus extra
// (redacted here), compacted first when it would pass CompactAt of the
// window or leave no room for the reply. A prompt that still does not fit
// is a *contextFullError.
func (r *run) prepare(kind llm.Kind, extra ...llm.Message) (prepared, error) {
	extra = llm.RedactMessages(extra, r.e.Redact)
	build := func() prepared {
		msgs := append(r.messages(), extra...)
		return prepared{msgs: msgs, tokens: r.win.count.Prompt(msgs)}
	}
	p := build()
	w := &r.win
	if w.size > 0 {
		over := func() bool { return float64(p.tokens) > w.compactAt*float64(w.size) || p.tokens+w.reply > w.size }
		// Compact the steps before the last KeepSteps; only when even that
		// leaves no room for the reply are kept steps compacted too, the
		// newest last.
		for keep := w.keep; keep >= 0 && over(); keep-- {
			if keep < w.keep && p.tokens+w.reply <= w.size {
				break
			}
			c, ok := r.compact(keep)
			if !ok {
				continue
			}
			before := p.tokens
			p = build()
			r.emit(EventCompaction, map[string]any{"tokens_before": before, "tokens_after": p.tokens,
				"steps_compacted": c.steps, "first_iteration": c.first, "last_iteration": c.last,
				"kept_steps": keep, "method": c.method, "summary_tokens": c.summaryTokens,
				"context_size": w.size, "compact_at": w.compactAt, "reason": c.why, "token_usage": c.usage})
			r.progress("compacted steps %d-%d (%d -> %d tokens)", c.first, c.last, before, p.tokens)
		}
		if p.tokens+w.reply > w.size {
			return p, &contextFullError{prompt: p.tokens, reply: w.reply, size: w.size}
		}
	}
	p.maxTokens = r.e.MaxTokens
	if w.size > 0 && (p.maxTokens <= 0 || p.maxTokens > w.size-p.tokens) {
		p.maxTokens = w.size - p.tokens
	}
	p.kind = kind
	return p, nil
}

// send makes the call p was prepared for, recording it as a model_call
// event first (only calls that are made are recorded).
func (r *run) send(p prepared, schema json.RawMessage) (llm.Response, error) {
	r.emit(EventModelCall, map[string]any{"kind": p.kind, "prompt_tokens": p.tokens, "max_tokens": p.maxTokens, "context_size": r.win.size})
	return r.complete(llm.Request{Kind: p.kind, Messages: p.msgs, Schema: schema, Sampling: r.e.Sampling, MaxTokens: p.maxTokens,
		PersistableMessages: r.persistable()})
}

// persistable is how many leading messages of every prompt a backend may
// keep on disk across runs (llm.Request.PersistableMessages): the system
// prompt with the tools, which holds only configuration. The rest of the
// pinned prefix never: the task message holds the query and the plan.
func (r *run) persistable() int {
	if len(r.hist) > 0 && r.hist[0].kind == histPinned && r.hist[0].Role == llm.RoleSystem {
		return 1
	}
	return 0
}

// compaction describes one compaction for its trace event.
type compaction struct {
	steps         int // trace steps summarized by this compaction
	first, last   int // iterations the summary now covers
	method        string
	why           string // why the model's summary was not used, if it was not
	summaryTokens int
	usage         llm.Usage
}

// compact replaces every step turn before the current turn and its keep
// predecessors with one summary message right after the pinned prefix (the
// summary of an earlier compaction is folded in). false: nothing to compact.
func (r *run) compact(keep int) (compaction, bool) {
	var turns []int // completed step turns, oldest first
	for _, m := range r.hist {
		if m.kind == histStep && m.turn < r.turn && !slices.Contains(turns, m.turn) {
			turns = append(turns, m.turn)
		}
	}
	if len(turns) <= keep {
		return compaction{}, false
	}
	firstKept := r.turn
	if keep > 0 {
		firstKept = turns[len(turns)-keep]
	}
	pinnedEnd := 0
	for pinnedEnd < len(r.hist) && r.hist[pinnedEnd].kind == histPinned {
		pinnedEnd++
	}
	cut := pinnedEnd
	for cut < len(r.hist) && !(r.hist[cut].kind == histStep && r.hist[cut].turn >= firstKept) {
		cut++
	}
	old := r.hist[pinnedEnd:cut]
	var plan *histMsg
	for i := range old {
		if old[i].kind == histPlan {
			plan = &old[i]
		}
	}
	c := compaction{first: 1, last: r.summarizedTo}
	var steps []StepTrace
	for i, st := range r.res.Trace.Steps {
		if t := r.traceTurn[i]; t < firstKept && st.Iteration > r.summarizedTo {
			steps = append(steps, st)
			c.last = st.Iteration
		}
	}
	c.steps = len(steps)
	room := r.win.summaryRoom()
	text, method, why, usage := r.modelSummary(r.hist[:cut], room)
	c.usage = usage
	if text == "" {
		text, method = r.extractiveSummary(old, steps, room), "extractive"
	}
	c.method, c.why = method, why
	c.summaryTokens = r.win.count.Text(text)
	note := prompt.Render("compact_note", prompt.CompactNote{First: c.first, Last: max(c.last, c.first), Method: methodNote(method), Summary: text})

	kept := append([]histMsg(nil), r.hist[:pinnedEnd]...)
	kept = append(kept, histMsg{Message: llm.Message{Role: llm.RoleUser, Content: r.e.Redact(note)}, turn: firstKept - 1, kind: histSummary})
	if plan != nil {
		kept = append(kept, *plan)
	}
	r.hist = append(kept, r.hist[cut:]...)
	r.summarizedTo = max(c.last, r.summarizedTo)
	r.st.Compactions++
	return c, true
}

func methodNote(method string) string {
	if method == "model" {
		return "written by you"
	}
	return "extracted from the observations"
}

// modelSummary asks the model to summarize the conversation up to the cut
// (the KV cache already holds that prefix). It returns "" with why when no
// model summary can be had: no model, no room, a failed call or a reply
// that is not a valid summary.
func (r *run) modelSummary(upto []histMsg, room int) (text, method, why string, usage llm.Usage) {
	if !llm.HasModel(r.e.Backend) {
		return "", "", "no model", usage
	}
	if r.ctx.Err() != nil {
		return "", "", "cancelled", usage
	}
	msgs := make([]llm.Message, 0, len(upto)+1)
	for _, m := range upto {
		msgs = append(msgs, m.Message)
	}
	words := int(float64(room) * r.win.bytesPerToken / 6) // about six bytes a word
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: prompt.Render("compact_request", prompt.CompactRequest{Words: max(words, 10)})})
	n := r.win.count.Prompt(msgs)
	if n+room > r.win.size {
		return "", "", fmt.Sprintf("the summary request (%d tokens) does not fit", n), usage
	}
	maxLen := int(float64(room) * r.win.bytesPerToken * 0.9)
	resp, err := r.complete(llm.Request{Kind: llm.KindSummary, Messages: msgs, Schema: schema.Summary(maxLen), Sampling: r.e.Sampling, MaxTokens: room,
		PersistableMessages: r.persistable()})
	r.addUsage(resp.Usage)
	if err != nil {
		r.e.Log.Warn("compaction: the model's summary failed; extracting one", "err", err)
		return "", "", "summary call failed: " + err.Error(), resp.Usage
	}
	var reply struct {
		Summary string `json:"summary"`
	}
	if json.Unmarshal([]byte(resp.Text), &reply) != nil || strings.TrimSpace(reply.Summary) == "" {
		return "", "", "the model's reply was not a summary", resp.Usage
	}
	text = r.e.Redact(strings.TrimSpace(reply.Summary))
	if r.win.count.Text(text) > room {
		text = r.cutToTokens(text, room, nil)
	}
	return text, "model", "", resp.Usage
}

// extractiveSummary is the model-free summary: the previous summary, then a
// line per compacted step (tool, arguments, outcome, size, first line of
// output), the oldest lines dropped when it would pass room tokens.
func (r *run) extractiveSummary(old []histMsg, steps []StepTrace, room int) string {
	var lines []string
	for _, m := range old {
		if m.kind == histSummary {
			if _, prev, ok := strings.Cut(m.Content, "\nSummary:\n"); ok {
				lines = append(lines, strings.Split(prev, "\n")...)
			}
		}
	}
	for _, st := range steps {
		lines = append(lines, stepLine(st))
	}
	dropped := 0
	text := strings.Join(lines, "\n")
	for len(lines) > 1 && r.win.count.Text(text) > room {
		lines = lines[1:]
		dropped++
		text = fmt.Sprintf("(%d older lines left out)\n%s", dropped, strings.Join(lines, "\n"))
	}
	if r.win.count.Text(text) > room {
		text = r.cutToTokens(text, room, nil)
	}
	return text
}

// stepLine is one step in an extractive summary.
func stepLine(st StepTrace) string {
	args := string(st.Action.Args)
	if len(args) > 80 {
		args = clip(args, 80)
	}
	var outcome string
	obs := strings.TrimSpace(st.Observation)
	switch {
	case st.SkipReason != "":
		outcome = "skipped (" + st.SkipReason + "): " + clip(firstLine(obs), 100)
	case st.Error != "" || st.ExitCode != 0:
		outcome = fmt.Sprintf("failed, exit code %d: %s", st.ExitCode, clip(firstLine(cmpOr(st.Error, obs)), 120))
	default:
		outcome = fmt.Sprintf("ok, %d lines, %d bytes", strings.Count(obs, "\n")+1, len(obs))
		if first := strings.TrimSpace(firstLine(obs)); first != "" {
			outcome += ": " + clip(first, 100)
		}
	}
	return fmt.Sprintf("- step %d: %s %s -> %s", st.Iteration, cmpOr(st.Action.Tool, "(no action)"), args, outcome)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// clip keeps about n bytes of s, whole runes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	var whole *redact.Redactor // nil: cuts only keep runes whole
	return s[:whole.CutBefore(s, n-3)] + "..."
}

var errBudget = errors.New("token budget reached")
