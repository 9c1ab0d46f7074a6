package stepapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/server/prose"
	"github.com/tactcli/tact/tools"
)

// maxToolNodes bounds the subschemas of a request's tools once their
// $refs are inlined for the grammar (each tool's expansion is bounded
// too, by schema.Normalize): the reply's schema and grammar are built
// from them on every step.
const maxToolNodes = 32768

// compileTools compiles the client's tool schemas and normalizes them
// for the grammar: the costly part of checking a request, so it runs once
// the request holds a sequence (Answer), not while decoding. A schema that
// does not compile, or tools too large together, are ErrBadInput.
func (c *stepCall) compileTools() error {
	c.validators = map[string]*schema.Validator{}
	nodes := 0
	for i, t := range c.req.Tools {
		at := fmt.Sprintf("tools[%d].parameters", i)
		v, err := schema.Compile(t.schema())
		if err != nil {
			return badInputf("%s: %s", at, c.redact(text.OneLine(err.Error())))
		}
		n, err := schema.NormalizeArgsCached(t.schema())
		if err != nil {
			return badInputf("%s: %s", at, c.redact(err.Error()))
		}
		c.validators[t.Name] = v
		nodes += n.Nodes
	}
	if nodes > maxToolNodes {
		return badInputf("tools: the tools' schemas come to %d subschemas once their $refs are expanded, at most %d: send fewer or smaller tools", nodes, maxToolNodes)
	}
	return nil
}

// stepCall is one step being answered.
type stepCall struct {
	rt        *agent.Runtime
	req       *Request
	redact    func(string) string
	left      int
	proseForm bool // no tools: the prose form
	sigs      prose.Signatures
	thought   schema.ThoughtOptions
	// validators check a tool's arguments against its whole schema: the
	// reply's schema holds the normalized ones, which may allow more.
	validators map[string]*schema.Validator
}

// Answer answers one step on rt. A reply the model got wrong, or a failed
// model call, is a response with status "error"; the error is set only
// when the step could not be answered at all, typed (agent.KindOf): no
// model (ErrNeedsModel), a conversation too long for the window
// (ErrContextTooSmall), ctx's end (ErrTimeout, ErrCancelled).
func Answer(ctx context.Context, rt *agent.Runtime, req *Request) (*Response, error) {
	if err := rt.RequireModel("a step"); err != nil {
		return nil, err
	}
	c := &stepCall{rt: rt, req: req, left: cmp.Or(rt.S.MaxIterations, 10), proseForm: len(req.Tools) == 0,
		thought: schema.ThoughtOptions{Required: rt.S.RequireThought, MinLength: rt.S.MinThoughtLength}}
	keys := redactWith(req.secrets())
	c.redact = func(s string) string { return keys(rt.Redactor.Redact(s)) }
	if req.IterationsLeft != nil {
		c.left = *req.IterationsLeft
	}
	if c.proseForm {
		c.sigs = prose.ParseSignatures(req.ToolsPrompt)
	}
	if err := c.compileTools(); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	resp := &Response{SessionID: req.SessionID, Status: StatusError, IterationsRemaining: c.left}
	if resp.SessionID == "" {
		resp.SessionID = newUUID()
	}
	resp.History = c.history(now)

	msgs, err := c.messages(ctx, resp.History)
	if err != nil {
		return nil, err
	}
	sch := c.replySchema()
	out, err := rt.Complete(ctx, "a step", llm.Request{Kind: llm.KindAction, Messages: msgs, Schema: sch,
		Sampling: c.sampling(), MaxTokens: c.maxTokens()})
	resp.Usage = out.Usage
	switch kind := agent.KindOf(err); {
	case err == nil:
	case kind == agent.ErrContextTooSmall:
		return nil, &agent.Error{Kind: agent.ErrContextTooSmall, Err: fmt.Errorf("conversation_history: %v", err)}
	case kind != agent.ErrInternal: // the end of ctx, no model
		return nil, err
	default:
		resp.Error = c.redact("model call failed: " + err.Error())
		return resp, nil
	}
	c.answer(resp, out.Text, sch, now)
	return resp, nil
}

// history is the request's conversation, secrets hidden, every turn with a
// timestamp, and the query as the last user turn.
func (c *stepCall) history(now time.Time) []Turn {
	stamp := now.Format("2006-01-02T15:04:05.000Z07:00")
	out := make([]Turn, 0, len(c.req.History)+2)
	for _, t := range c.req.History {
		t.Content = c.redact(t.Content)
		if t.ToolCall != nil {
			tc := *t.ToolCall
			tc.Parameters = redact.RedactJSONWith(tc.Parameters, c.redact)
			t.ToolCall = &tc
		}
		if t.ToolResult != nil {
			tr := *t.ToolResult
			tr.Result = redact.RedactJSONWith(tr.Result, c.redact)
			t.ToolResult = &tr
		}
		if t.Timestamp == "" {
			t.Timestamp = stamp
		}
		out = append(out, t)
	}
	if strings.TrimSpace(c.req.UserQuery) != "" {
		out = append(out, Turn{Role: RoleUser, Content: c.redact(c.req.UserQuery), Timestamp: stamp})
	}
	return out
}

// answer reads the model's reply into resp.
func (c *stepCall) answer(resp *Response, reply string, sch json.RawMessage, now time.Time) {
	var thought, tool, answer string
	var args json.RawMessage
	if sch != nil {
		act, err := react.ParseAction([]byte(reply), sch, c.thought)
		if err != nil {
			resp.Error = c.redact("the model's reply is not a valid action: " + err.Error())
			return
		}
		thought, tool, args = act.Thought, act.Tool, act.Args
		if v := c.validators[tool]; v != nil {
			if _, err := v.ValidateJSON(args); err != nil {
				resp.Error = c.redact(fmt.Sprintf("the model's reply is not a valid action: arguments for %s: %v", tool, err))
				return
			}
		} else if tool == askUser.Name() {
			if err := checkQuestion(args); err != nil {
				resp.Error = c.redact("the model's reply is not a valid action: " + err.Error())
				return
			}
		}
		if tool == tools.FinalAnswer {
			var a struct {
				Answer string `json:"answer"`
			}
			_ = json.Unmarshal(act.Args, &a)
			tool, answer = "", a.Answer
		}
	} else {
		pr, err := prose.Parse(reply, c.sigs)
		if err != nil {
			resp.Error = c.redact("the model's reply has no readable action or answer: " + err.Error())
			return
		}
		thought, tool, args, answer = pr.Thought, pr.Tool, pr.Args, pr.Answer
	}
	resp.Thought = c.redact(thought)
	resp.IterationsRemaining = max(c.left-1, 0)
	stamp := now.Format("2006-01-02T15:04:05.000Z07:00")
	if tool == "" {
		a := c.redact(answer)
		resp.Status, resp.DirectResponse = StatusDirectResponse, &a
		resp.History = append(resp.History, Turn{Role: RoleAssistant, Content: a, Timestamp: stamp})
		return
	}
	args = redact.RedactJSONWith(args, c.redact)
	resp.Status = StatusActionProposed
	resp.ActionDetails = &ActionDetails{ToolName: tool, ToolArgs: args, RawActionString: "Action: " + prose.FormatAction(tool, args)}
	resp.History = append(resp.History, Turn{Role: RoleAssistant, Content: resp.Thought,
		ToolCall: &ToolCall{Name: tool, Parameters: args}, Timestamp: stamp})
}

// askUser is the question tact offers the model besides the client's
// tools: a step that calls it is an action the client handles as any
// other (it asks its user and sends the answer back as the tool's
// result).
var askUser tools.Tool = tools.AskUserTool{}

// asks reports whether the step offers ask_user: unless --no-ask, the
// prose form (the client's own tool list), or a client tool of that name
// (the client's wins). Not the steps left: the system prompt stays the
// same from step to step (the reply schema of the last step is
// final_answer alone).
func (c *stepCall) asks() bool {
	if c.rt.S.NoAsk || c.proseForm {
		return false
	}
	for _, t := range c.req.Tools {
		if t.Name == askUser.Name() {
			return false
		}
	}
	return true
}

// replySchema constrains the reply: the client's tools and final_answer;
// only final_answer when no steps are left; none for the prose form.
func (c *stepCall) replySchema() json.RawMessage {
	final := schema.Tool{Name: tools.FinalAnswer, Schema: tools.FinalAnswerTool{}.Schema()}
	if c.left <= 0 {
		return schema.Action([]schema.Tool{final}, c.thought, false)
	}
	if c.proseForm {
		return nil
	}
	tools := []schema.Tool{final}
	if c.asks() {
		tools = append(tools, schema.Tool{Name: askUser.Name(), Schema: askUser.Schema()})
	}
	for _, t := range c.req.Tools {
		tools = append(tools, schema.Tool{Name: t.Name, Schema: t.schema()})
	}
	return schema.Action(tools, c.thought, false)
}

func (c *stepCall) sampling() llm.Sampling {
	sm := agent.Sampling(c.rt.S)
	if lc := c.req.LLMConfig; lc != nil && lc.Temperature != nil {
		sm.Temperature = float32(*lc.Temperature)
	}
	return sm
}

// maxTokens is the reply's room: the client's reservedOutputTokens, at
// most the server's --max-tokens.
func (c *stepCall) maxTokens() int {
	n := c.rt.S.MaxTokens
	if lc := c.req.LLMConfig; lc != nil && lc.ReservedOutputTokens > 0 && (n == 0 || lc.ReservedOutputTokens < n) {
		n = lc.ReservedOutputTokens
	}
	return n
}

// window is the tokens prompt and reply may take: the backend's window,
// at most the client's tokenLimit (0: no bound known).
func (c *stepCall) window() (int, string) {
	w, what := llm.ContextSizeOf(c.rt.Backend), "the server's context window (--ctx-size)"
	if w == 0 {
		w = c.rt.S.CtxSize
	}
	if lc := c.req.LLMConfig; lc != nil && lc.TokenLimit > 0 && (w == 0 || lc.TokenLimit < w) {
		w, what = lc.TokenLimit, "llm_config.tokenLimit"
	}
	return w, what
}

// messages lays the prompt out for prefix reuse: the system prompt (tools),
// the context, the conversation's turns as the model wrote and saw them,
// and last the one message that changes every step (the steps left).
// Context that does not fit the window is left out; a conversation that
// does not fit is an ErrContextTooSmall error.
func (c *stepCall) messages(ctx context.Context, history []Turn) ([]llm.Message, error) {
	head := []llm.Message{{Role: llm.RoleSystem, Content: c.systemPrompt()}}
	var ctxMsg []llm.Message
	if parts := c.contextParts(ctx); len(parts) > 0 {
		ctxMsg = []llm.Message{{Role: llm.RoleUser, Content: prompt.Render("step_context", parts)}}
	}
	var turns []llm.Message
	lastTool := ""
	for _, t := range history {
		m := c.turnMessage(t, lastTool)
		if t.ToolCall != nil {
			lastTool = t.ToolCall.Name
		}
		turns = append(turns, m)
	}
	next := llm.Message{Role: llm.RoleUser, Content: prompt.Render("step_next", map[string]any{"Left": c.left, "JSON": !c.proseForm})}
	build := func(withContext bool) []llm.Message {
		out := append([]llm.Message(nil), head...)
		if withContext {
			out = append(out, ctxMsg...)
		}
		out = append(append(out, turns...), next)
		// Redacted here, not only by the runtime's backend (llm.Redacting):
		// the request's own secrets are known to this call alone, and the
		// window counts and cuts these messages before they are sent.
		for i := range out {
			out[i].Content = c.redact(out[i].Content)
		}
		return out
	}
	msgs := build(true)
	window, what := c.window()
	if window <= 0 {
		return msgs, nil
	}
	counter := llm.CounterFor(c.rt.Backend)
	reply := c.maxTokens()
	n := counter.Prompt(msgs)
	if n+reply <= window {
		return msgs, nil
	}
	if err := c.toolsFit(counter, next, reply, window, what); err != nil {
		return nil, err
	}
	if ctxMsg != nil {
		// As the document says of context building failures: fall back to
		// the minimal context.
		msgs = build(false)
		msgs[len(msgs)-1].Content = "(The context for the query was left out: it does not fit the context window.)\n" + msgs[len(msgs)-1].Content
		if m := counter.Prompt(msgs); m+reply <= window {
			return msgs, nil
		} else {
			n = m
		}
	}
	return nil, &agent.Error{Kind: agent.ErrContextTooSmall, Err: fmt.Errorf(
		"conversation_history: the prompt takes %d tokens and the reply needs room for %d, but %s holds %d: send fewer or shorter turns, or start a new session",
		n, reply, what, window)}
}

// toolsFit is an ErrContextTooSmall error naming the tools when the
// prompt without any conversation or context (the system prompt with the
// tools, and the last message) leaves the reply no room, though it would
// without the tools: no conversation can then fit, and the tools are what
// to cut.
func (c *stepCall) toolsFit(counter llm.Counter, next llm.Message, reply, window int, what string) error {
	if len(c.req.Tools) == 0 && strings.TrimSpace(c.req.ToolsPrompt) == "" {
		return nil
	}
	prompt := func(system string) int {
		return counter.Prompt([]llm.Message{{Role: llm.RoleSystem, Content: c.redact(system)}, {Role: next.Role, Content: c.redact(next.Content)}})
	}
	with := prompt(c.systemPrompt())
	if with+reply <= window {
		return nil
	}
	without := prompt(c.systemPromptWith(false))
	if without+reply > window {
		return nil // the window is too small whatever the tools: said as for a conversation
	}
	field := "tools"
	switch {
	case len(c.req.Tools) == 0:
		field = "available_tools_prompt_segment"
	case strings.TrimSpace(c.req.ToolsPrompt) != "":
		field = "tools and available_tools_prompt_segment"
	}
	return &agent.Error{Kind: agent.ErrContextTooSmall, Err: fmt.Errorf(
		"%s: the tools take %d tokens of the prompt (%d with the system prompt) and the reply needs room for %d, but %s holds %d: send fewer tools, or shorter descriptions and schemas",
		field, with-without, with, reply, what, window)}
}

func (c *stepCall) systemPrompt() string { return c.systemPromptWith(true) }

// systemPromptWith is the system prompt, with the client's tools or
// without them (to count what they take).
func (c *stepCall) systemPromptWith(withTools bool) string {
	tp := c.rt.S.ThoughtPrompt
	if tp == "" {
		tp = prompt.DefaultThoughtPrompt
	}
	data := map[string]any{"Segment": "", "ThoughtPrompt": tp,
		"RequireThought": c.thought.Required, "MinThought": c.thought.MinLength}
	if withTools {
		data["Segment"] = strings.TrimSpace(c.req.ToolsPrompt)
	}
	if !c.proseForm {
		list := []prompt.Tool{}
		own := []tools.Tool{tools.FinalAnswerTool{}}
		if c.asks() {
			own = append(own, askUser)
		}
		for _, t := range tools.PromptTools(own) {
			list = append(list, t)
		}
		for _, t := range c.req.Tools {
			if !withTools {
				break
			}
			list = append(list, prompt.Tool{Name: t.Name, Description: text.OneLine(t.Description), Schema: schema.Outline(t.schema(), tools.PromptSchemaBudget)})
		}
		data["Tools"] = list
	}
	return prompt.Render("step_system", data)
}

// turnMessage is a turn as the model saw or wrote it: an assistant turn in
// the reply form it was asked for, so a conversation that comes back
// matches what the model generated.
func (c *stepCall) turnMessage(t Turn, lastTool string) llm.Message {
	switch t.Role {
	case RoleAssistant:
		if c.proseForm {
			if t.ToolCall != nil {
				return llm.Message{Role: llm.RoleAssistant, Content: "Thought: " + t.Content + "\nAction: " + prose.FormatAction(t.ToolCall.Name, params(t.ToolCall))}
			}
			return llm.Message{Role: llm.RoleAssistant, Content: "Final Answer: " + t.Content}
		}
		act := map[string]any{"thought": t.Content, "tool": tools.FinalAnswer, "args": map[string]string{"answer": t.Content}}
		if t.ToolCall != nil {
			act["tool"], act["args"] = t.ToolCall.Name, params(t.ToolCall)
		} else {
			delete(act, "thought")
		}
		return llm.Message{Role: llm.RoleAssistant, Content: actionJSON(act)}
	case RoleToolObservation:
		var b strings.Builder
		b.WriteString("Observation")
		if lastTool != "" {
			fmt.Fprintf(&b, " (%s)", lastTool)
		}
		if t.ToolResult != nil && !t.ToolResult.Success {
			b.WriteString(" ERROR")
		}
		b.WriteString(":")
		if t.Content != "" {
			b.WriteString("\n" + c.cut(t.Content))
		}
		if t.ToolResult != nil && len(t.ToolResult.Result) > 0 && string(t.ToolResult.Result) != "null" {
			var s string
			if json.Unmarshal(t.ToolResult.Result, &s) != nil {
				s = string(t.ToolResult.Result)
			}
			if s != t.Content {
				b.WriteString("\nResult:\n" + c.cut(s))
			}
		}
		return llm.Message{Role: llm.RoleUser, Content: b.String()}
	}
	return llm.Message{Role: llm.RoleUser, Content: prompt.Render("task", prompt.Task{Query: t.Content})}
}

func params(tc *ToolCall) json.RawMessage {
	if len(tc.Parameters) == 0 || string(tc.Parameters) == "null" {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	if json.Compact(&b, tc.Parameters) != nil {
		return json.RawMessage(`{}`)
	}
	return b.Bytes()
}

// actionJSON writes an action as the action schema orders it (thought,
// tool, args), which is how the model wrote it.
func actionJSON(act map[string]any) string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for _, k := range []string{"thought", "tool", "args"} {
		v, ok := act[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := text.JSON(k)
		var vb []byte
		if raw, ok := v.(json.RawMessage); ok {
			vb = raw
		} else {
			vb, _ = text.JSON(v)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.String()
}

// cut bounds one observation or context item to about
// --max-observation-tokens tokens (by the four-bytes-a-token estimate, so
// the same text is always cut the same way: the prefix stays stable).
func (c *stepCall) cut(s string) string {
	limit := c.rt.S.MaxObservationTokens * llm.EstimateBytesPerToken
	if limit <= 0 || len(s) <= limit {
		return s
	}
	// Redact first: a cut must not leave part of a secret.
	s = c.redact(s)
	if len(s) <= limit {
		return s
	}
	keep := text.RuneStart(s, limit)
	return s[:keep] + fmt.Sprintf("\n[cut: %d of %d bytes shown]", keep, len(s))
}

// contextParts reads the context the request names: explicit paths and
// pinned ids (workspace files or directories, read with the file tools'
// confinement), the last focused file, and search results. A path that
// cannot be read is named with the reason instead of failing the step.
func (c *stepCall) contextParts(ctx context.Context) []string {
	var parts []string
	seen := map[string]bool{}
	file := func(label, path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		body, err := c.readContext(ctx, path)
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s %s: not included (%v)", label, path, err))
			return
		}
		parts = append(parts, fmt.Sprintf("%s %s:\n%s", label, path, c.cut(body)))
	}
	for _, p := range c.req.ContextPaths {
		file("File", p)
	}
	for _, id := range c.req.PinnedIDs {
		file("Pinned", id)
	}
	if ic := c.req.Implicit; ic != nil && ic.LastFocusedFilePath != "" {
		file("Last focused file", ic.LastFocusedFilePath)
	}
	for i, r := range c.req.VectorResults {
		var s string
		if json.Unmarshal(r, &s) != nil {
			var b bytes.Buffer
			if json.Compact(&b, r) != nil {
				continue
			}
			s = b.String()
		}
		parts = append(parts, fmt.Sprintf("Search result %d:\n%s", i+1, c.cut(s)))
	}
	return parts
}

// readContext reads a workspace file with read_file, or lists a directory
// with list_files: the tools' own confinement (no path out of the
// workspace, no symlink leading out, regular files only, size caps).
func (c *stepCall) readContext(ctx context.Context, path string) (string, error) {
	args, _ := json.Marshal(map[string]string{"path": path})
	res := tools.ReadFile{}.Run(ctx, c.rt.Env, args)
	if res.Err == nil {
		return res.Output, nil
	}
	if dir := (tools.ListFiles{}).Run(ctx, c.rt.Env, args); dir.Err == nil {
		return dir.Output, nil
	}
	return "", errors.New(strings.TrimPrefix(res.Err.Error(), "read_file: "))
}

// newUUID is a random (version 4) UUID for a new session.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// checkQuestion checks an ask_user call's arguments as a run does: the
// question, its options, its answer schema compiled.
func checkQuestion(args json.RawMessage) error {
	q, err := tools.ParseQuestion(args)
	if err != nil {
		return err
	}
	if len(q.Schema) > 0 {
		if _, err := schema.CompileAnswer(q.Schema); err != nil {
			return fmt.Errorf("ask_user: the answer schema: %v", err)
		}
	}
	return nil
}
