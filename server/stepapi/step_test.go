package stepapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tactcli/tact/agent/agenttest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/schema"
)

// recorder keeps every request a step sends to the model.
type recorder struct {
	llm.Backend
	mu   sync.Mutex
	reqs []llm.Request
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Backend.Complete(ctx, req)
}

func (r *recorder) last() llm.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

func stepRuntime(t *testing.T, mod func(*config.Settings), replies ...string) (*agent.Runtime, *recorder) {
	t.Helper()
	s := agenttest.Settings(t, agenttest.ScriptLines(replies...))
	if mod != nil {
		mod(s)
	}
	rt, err := agent.Open(context.Background(), s, agent.Options{Mode: "serve"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	rec := &recorder{Backend: rt.Backend}
	rt.Backend = rec
	return rt, rec
}

func decode(t *testing.T, body string) *Request {
	t.Helper()
	req, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Every malformed request is a bad-input error naming the field.
func TestDecodeStepRequestErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"invalid JSON", `{"user_query": `, "request: invalid JSON"},
		{"trailing data", `{"user_query": "q"} {}`, "trailing data"},
		{"not an object", `[]`, "request: got array, want object"},
		{"unknown field", `{"user_query": "q", "extra": 1}`, "extra: unknown field"},
		{"unknown nested field", `{"user_query": "q", "llm_config": {"model": "x"}}`, "llm_config.model: unknown field"},
		{"unknown role", `{"conversation_history": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "t"}, {"role": "tool", "content": "x"}]}`,
			`conversation_history[2].role: unknown role "tool" (want user, assistant or tool_observation)`},
		{"role missing", `{"user_query": "q", "conversation_history": [{"content": "x"}]}`, "conversation_history[0].role: missing"},
		{"wrong type", `{"user_query": "q", "conversation_history": [{"role": "user", "content": 3}]}`, "conversation_history[0].content: got number, want"},
		{"tool call on a user turn", `{"conversation_history": [{"role": "user", "content": "q", "toolCall": {"name": "x"}}]}`, "conversation_history[0].toolCall: only an assistant turn"},
		{"tool result on an assistant turn", `{"user_query": "q", "conversation_history": [{"role": "assistant", "toolResult": {"success": true}}]}`, "conversation_history[0].toolResult: only a tool_observation"},
		{"tool result without success", `{"user_query": "q", "conversation_history": [{"role": "tool_observation", "toolResult": {"result": 1}}]}`, "conversation_history[0].toolResult.success: missing"},
		{"bad timestamp", `{"conversation_history": [{"role": "user", "content": "q", "timestamp": "yesterday"}]}`, `conversation_history[0].timestamp: "yesterday" is not an ISO 8601 time`},
		{"no query", `{"user_query": "", "conversation_history": [{"role": "assistant", "content": "hi"}]}`, "user_query: empty, and conversation_history holds no user turn"},
		{"negative iterations", `{"user_query": "q", "max_iterations_left": -1}`, "max_iterations_left: minimum: got -1, want 0"},
		{"fractional iterations", `{"user_query": "q", "max_iterations_left": 1.5}`, "max_iterations_left: got number, want null or integer"},
		{"temperature too high", `{"user_query": "q", "llm_config": {"temperature": 11}}`, "llm_config.temperature: maximum: got 11, want 10"},
		{"key not a string", `{"user_query": "q", "user_api_keys": {"llmKey": 5}}`, "user_api_keys.llmKey: got number, want string"},
		{"empty context path", `{"user_query": "q", "explicit_context_paths": [""]}`, "explicit_context_paths[0]: minLength"},
		{"final_answer is reserved", `{"user_query": "q", "tools": [{"name": "final_answer"}]}`, "tools[0].name: final_answer is tact's own"},
		{"bad tool name", `{"user_query": "q", "tools": [{"name": "rm -rf"}]}`, `tools[0].name: "rm -rf" is not a tool name`},
		{"tool twice", `{"user_query": "q", "tools": [{"name": "a"}, {"name": "a"}]}`, `tools[1].name: "a" is given twice`},
		{"parameters not an object schema", `{"user_query": "q", "tools": [{"name": "a", "parameters": {"type": "string"}}]}`, `tools[0].parameters: the arguments must be an object`},
		{"parameters nest too deep", `{"user_query": "q", "tools": [{"name": "a", "parameters": ` + nestedSchema(2500) + `}]}`, `tools[0].parameters: the schema nests 5001 levels deep, at most 64`},
		{"parameters too big", `{"user_query": "q", "tools": [{"name": "a", "parameters": {"type": "object", "description": "` + strings.Repeat("x", schema.MaxToolSchemaBytes) + `"}}]}`, `tools[0].parameters: the schema takes 65573 bytes, at most 65536`},
		{"several problems", `{"a": 1, "b": 2, "c": 3, "d": 4}`, "a: unknown field; b: unknown field; c: unknown field; and 1 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.body))
			if err == nil || agent.KindOf(err) != agent.ErrBadInput || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A key never shows in a message, even where a field's value would.
	_, err := Decode([]byte(`{"user_api_keys": {"llmKey": "sk-live-123456"}, "conversation_history": [{"role": "sk-live-123456"}]}`))
	if err == nil || strings.Contains(err.Error(), "sk-live-123456") || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("err = %v", err)
	}
	_, err = Decode([]byte(`{"user_api_keys": {"llmKey": "sk-live-123456"}, "user_query": "q", "conversation_history": [{"role": "sk-live-123456", "content": 1}]}`))
	if err == nil || strings.Contains(err.Error(), "sk-live-123456") {
		t.Fatalf("err = %v", err)
	}
}

// nestedSchema is an object schema nesting n objects (2n+1 levels of JSON).
func nestedSchema(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// Client tool schemas are compiled after decoding (in Step, once the
// request holds a sequence): one that does not compile is a bad-input
// error naming the tool; one just under the limits is answered.
func TestStepToolSchemaChecks(t *testing.T) {
	rt, _ := stepRuntime(t, nil, `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"ok"}}`)
	req := decode(t, `{"user_query": "q", "tools": [{"name": "a"}, {"name": "b", "parameters": {"type": "object", "properties": {"x": {"type": 7}}}}]}`)
	if _, err := Answer(context.Background(), rt, req); agent.KindOf(err) != agent.ErrBadInput || !strings.HasPrefix(err.Error(), "tools[1].parameters: schema:") {
		t.Fatalf("err = %v", err)
	}
	under := nestedSchema(schema.MaxToolSchemaDepth/2 - 1)
	resp, err := Answer(context.Background(), rt, decode(t, `{"user_query": "q", "tools": [{"name": "deep", "parameters": `+under+`}]}`))
	if err != nil || resp.Status != StatusDirectResponse {
		t.Fatalf("%+v %v", resp, err)
	}
}

// Tool schemas as clients write them: a pydantic $ref, a property with
// only a description. The reply's schema holds them normalized (no $ref
// left to dangle once embedded), actions valid for them are proposed, and
// arguments are checked against the client's whole schema, whatever the
// grammar's schema loosened.
func TestStepRealWorldToolSchemas(t *testing.T) {
	const refTool = `{"name": "where", "parameters": {"$defs": {"W": {"type": "object", "properties": {"city": {"type": "string", "pattern": "^[A-Z]"}}, "required": ["city"]}}, "type": "object", "properties": {"w": {"$ref": "#/$defs/W"}}, "required": ["w"]}}`
	const anyTool = `{"name": "set", "parameters": {"type": "object", "properties": {"value": {"description": "any value"}}, "required": ["value"]}}`
	for _, tc := range []struct {
		name, reply, status, err string
	}{
		{"ref", `{"thought":"look the city up first","tool":"where","args":{"w":{"city":"Paris"}}}`, StatusActionProposed, ""},
		{"described only", `{"thought":"set the value as asked","tool":"set","args":{"value":{"any":[1,"x"]}}}`, StatusActionProposed, ""},
		{"against the whole schema", `{"thought":"look the city up first","tool":"where","args":{"w":{"city":"paris"}}}`, StatusError, "arguments for where: at /w/city"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, rec := stepRuntime(t, nil, tc.reply)
			resp, err := Answer(context.Background(), rt, decode(t, `{"user_query": "q", "tools": [`+refTool+`, `+anyTool+`]}`))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tc.status || !strings.Contains(resp.Error, tc.err) {
				t.Fatalf("%+v", resp)
			}
			sch := rec.last().Schema
			if strings.Contains(string(sch), "$ref") || strings.Contains(string(sch), "$defs") {
				t.Fatalf("the reply's schema keeps a $ref: %s", sch)
			}
			if _, err := schema.Compile(sch); err != nil {
				t.Fatal(err)
			}
			// The prompt shows the client's own schema.
			if !strings.Contains(rec.last().Messages[0].Content, `"$ref":"#/$defs/W"`) {
				t.Fatalf("system prompt: %s", rec.last().Messages[0].Content)
			}
		})
	}
}

// Tools too large for the window are named as such, not blamed on the
// conversation.
func TestStepToolsTooLarge(t *testing.T) {
	rt, _ := stepRuntime(t, func(s *config.Settings) { s.MaxTokens = 50 })
	big := `{"name": "big", "description": "` + strings.Repeat("a long description ", 200) + `", "parameters": {"type": "object"}}`
	_, err := Answer(context.Background(), rt, decode(t, `{"user_query": "q", "tools": [`+big+`], "llm_config": {"tokenLimit": 800}}`))
	if agent.KindOf(err) != agent.ErrContextTooSmall || !strings.HasPrefix(err.Error(), "tools: the tools take ") || !strings.Contains(err.Error(), "but llm_config.tokenLimit holds 800") {
		t.Fatalf("err = %v", err)
	}
	_, err = Answer(context.Background(), rt, decode(t, `{"user_query": "q", "available_tools_prompt_segment": "`+strings.Repeat("tool(x): does a thing. ", 200)+`", "llm_config": {"tokenLimit": 800}}`))
	if agent.KindOf(err) != agent.ErrContextTooSmall || !strings.HasPrefix(err.Error(), "available_tools_prompt_segment: the tools take ") {
		t.Fatalf("err = %v", err)
	}
}

// docSegment is the document's tools prompt segment (the prose form).
const docSegment = `You have access to the following tools:
- code_search(query="search terms") - Search for code matching the query
- read_file(path="file/path") - Read the contents of a specific file
- write_file(path="file/path", content="new content") - Write content to a file

Format: Action: tool_name(param="value")`

const searchTool = `{"name": "code_search", "description": "Search the code.", "parameters": {"type": "object", "properties": {"query": {"type": "string", "minLength": 1}}, "required": ["query"], "additionalProperties": false}}`
const readTool = `{"name": "read_file", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}}`

func stepBody(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A conversation of several steps: the client posts its observations
// back, the steps left count down, and the last step is a direct answer;
// each prompt extends the previous one (the KV cache's prefix).
func TestStepConversation(t *testing.T) {
	rt, rec := stepRuntime(t, nil,
		`{"thought":"search for the login code first","tool":"code_search","args":{"query":"login"}}`,
		`{"thought":"read the file the search found","tool":"read_file","args":{"path":"auth.js"}}`,
		`{"thought":"the file shows how login works","tool":"final_answer","args":{"answer":"Login checks the password hash in auth.js."}}`,
	)
	tools := []json.RawMessage{json.RawMessage(searchTool), json.RawMessage(readTool)}
	ctx := context.Background()
	var history []Turn
	var prompts [][]llm.Message
	query := "How does login work?"
	wantStatus := []string{StatusActionProposed, StatusActionProposed, StatusDirectResponse}
	for step, left := range []int{2, 1, 0} {
		req := decode(t, stepBody(t, map[string]any{"session_id": "s-1", "user_query": query, "conversation_history": history,
			"tools": tools, "max_iterations_left": left}))
		resp, err := Answer(ctx, rt, req)
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, rec.last().Messages)
		if resp.Status != wantStatus[step] || resp.SessionID != "s-1" || resp.IterationsRemaining != max(left-1, 0) {
			t.Fatalf("step %d: %+v", step+1, resp)
		}
		if resp.Status == StatusActionProposed {
			if resp.DirectResponse != nil || resp.ActionDetails == nil || resp.Thought == "" {
				t.Fatalf("step %d: %+v", step+1, resp)
			}
			// tool_args validate against the client's schema.
			var tool struct {
				Parameters json.RawMessage `json:"parameters"`
			}
			_ = json.Unmarshal(tools[step], &tool)
			if _, err := schema.MustCompile(tool.Parameters).ValidateJSON(resp.ActionDetails.ToolArgs); err != nil {
				t.Fatalf("step %d: tool_args %s: %v", step+1, resp.ActionDetails.ToolArgs, err)
			}
			if !strings.HasPrefix(resp.ActionDetails.RawActionString, "Action: "+resp.ActionDetails.ToolName+"(") {
				t.Fatalf("raw action %q", resp.ActionDetails.RawActionString)
			}
		} else if resp.ActionDetails != nil || resp.DirectResponse == nil || *resp.DirectResponse != "Login checks the password hash in auth.js." {
			t.Fatalf("step %d: %+v", step+1, resp)
		}
		// The history holds what the client sent, the query once, and the
		// new assistant turn, each with a timestamp.
		h := resp.History
		last := h[len(h)-1]
		if last.Role != RoleAssistant || (resp.ActionDetails != nil && (last.ToolCall == nil || last.ToolCall.Name != resp.ActionDetails.ToolName || last.Content != resp.Thought)) {
			t.Fatalf("step %d: last turn %+v", step+1, last)
		}
		for i, turn := range h {
			if _, err := time.Parse(time.RFC3339Nano, turn.Timestamp); err != nil {
				t.Fatalf("step %d: turn %d timestamp %q", step+1, i, turn.Timestamp)
			}
		}
		if n := countRole(h, RoleUser); n != 1 {
			t.Fatalf("step %d: %d user turns", step+1, n)
		}
		// The client runs the tool and posts its observation with the
		// history; the query is not sent again.
		history = append(h, Turn{Role: RoleToolObservation, Content: fmt.Sprintf("output of step %d", step+1),
			ToolResult: &ToolResult{Success: true, Result: json.RawMessage(`"result text"`)}})
		query = ""
	}
	// Each prompt starts with the previous one but its last message (the
	// steps-left line): the conversation's prefix is stable.
	for i := 1; i < len(prompts); i++ {
		prev, cur := prompts[i-1], prompts[i]
		for j := 0; j < len(prev)-1; j++ {
			if cur[j] != prev[j] {
				t.Fatalf("prompt %d differs from prompt %d at message %d:\n%q\n%q", i+1, i, j, cur[j].Content, prev[j].Content)
			}
		}
	}
	if !strings.Contains(prompts[1][3].Content, "output of step 1") || !strings.Contains(prompts[1][3].Content, "Observation (code_search)") {
		t.Fatalf("observation message: %q", prompts[1][3].Content)
	}
	// The reply schema is exactly the client's tools, final_answer and
	// ask_user; with no steps left, final_answer alone.
	var first struct{ OneOf []json.RawMessage }
	_ = json.Unmarshal(rec.reqs[0].Schema, &first)
	var lastSch struct{ OneOf []json.RawMessage }
	_ = json.Unmarshal(rec.reqs[2].Schema, &lastSch)
	if len(first.OneOf) != 4 || len(lastSch.OneOf) != 1 || !strings.Contains(string(lastSch.OneOf[0]), `"const":"final_answer"`) {
		t.Fatalf("schemas:\n%s\n%s", rec.reqs[0].Schema, rec.reqs[2].Schema)
	}
	if !strings.Contains(prompts[2][len(prompts[2])-1].Content, "No steps are left") {
		t.Fatalf("last step's prompt: %q", prompts[2][len(prompts[2])-1].Content)
	}
}

func countRole(h []Turn, role string) int {
	n := 0
	for _, t := range h {
		if t.Role == role {
			n++
		}
	}
	return n
}

// What the model gets wrong is a response with status "error", never an
// action the client's schema refuses, and never an action with no steps left.
func TestStepInvalidReplies(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		left        int
		want        string
	}{
		{"args against the schema", `{"thought":"search for the login code first","tool":"code_search","args":{"query":""}}`, 3, "not a valid action"},
		{"unknown tool", `{"thought":"search for the login code first","tool":"rm","args":{}}`, 3, "not a valid action"},
		{"not JSON", `I think I will search`, 3, "not a valid action"},
		{"an action with no steps left", `{"thought":"search for the login code first","tool":"code_search","args":{"query":"x"}}`, 0, "not a valid action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, _ := stepRuntime(t, nil, tc.reply)
			req := decode(t, stepBody(t, map[string]any{"user_query": "q", "tools": []json.RawMessage{json.RawMessage(searchTool)}, "max_iterations_left": tc.left}))
			resp, err := Answer(context.Background(), rt, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != StatusError || resp.ActionDetails != nil || resp.DirectResponse != nil || !strings.Contains(resp.Error, tc.want) || resp.IterationsRemaining != tc.left {
				t.Fatalf("%+v", resp)
			}
			if len(resp.SessionID) != 36 || len(resp.History) != 1 {
				t.Fatalf("session %q, history %+v", resp.SessionID, resp.History)
			}
		})
	}
	// A failed model call (the script has no reply left) is an error status too.
	rt, _ := stepRuntime(t, nil)
	resp, err := Answer(context.Background(), rt, decode(t, `{"user_query": "q"}`))
	if err != nil || resp.Status != StatusError || !strings.Contains(resp.Error, "model call failed") {
		t.Fatalf("%+v %v", resp, err)
	}
}

// With only the document's tools prompt, the reply is prose: parsed
// leniently, an unknown tool or an unreadable Action line is an error.
func TestStepProse(t *testing.T) {
	for _, tc := range []struct {
		name, reply, status, tool, args, answer, errPart string
	}{
		{name: "action", reply: "Thought: I need to search for authentication code.\nAction: code_search(query=\"authentication login\")",
			status: StatusActionProposed, tool: "code_search", args: `{"query":"authentication login"}`},
		{name: "answer", reply: "Thought: known\nFinal Answer: It is in auth.js.", status: StatusDirectResponse, answer: "It is in auth.js."},
		{name: "unknown tool", reply: "Thought: t\nAction: format_disk()", status: StatusError, errPart: `unknown tool "format_disk"`},
		{name: "unreadable", reply: "Thought: t\nAction: code_search(query=\"x\"", status: StatusError, errPart: `unclosed "("`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, rec := stepRuntime(t, nil, tc.reply)
			req := decode(t, stepBody(t, map[string]any{"user_query": "How is authentication implemented?",
				"available_tools_prompt_segment": docSegment, "max_iterations_left": 3}))
			resp, err := Answer(context.Background(), rt, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tc.status || !strings.Contains(resp.Error, tc.errPart) {
				t.Fatalf("%+v", resp)
			}
			if tc.tool != "" && (resp.ActionDetails.ToolName != tc.tool || string(resp.ActionDetails.ToolArgs) != tc.args ||
				resp.ActionDetails.RawActionString != `Action: code_search(query="authentication login")`) {
				t.Fatalf("%+v", resp.ActionDetails)
			}
			if tc.answer != "" && *resp.DirectResponse != tc.answer {
				t.Fatalf("%+v", resp)
			}
			req0 := rec.last()
			if req0.Schema != nil || !strings.Contains(req0.Messages[0].Content, "code_search(query=\"search terms\")") {
				t.Fatalf("prose prompt: schema %s, system %q", req0.Schema, req0.Messages[0].Content)
			}
		})
	}
	// The history's assistant turns come back in the prose form.
	rt, rec := stepRuntime(t, nil, "Final Answer: done")
	req := decode(t, stepBody(t, map[string]any{"available_tools_prompt_segment": docSegment, "conversation_history": []map[string]any{
		{"role": "user", "content": "q"},
		{"role": "assistant", "content": "search first", "toolCall": map[string]any{"name": "code_search", "parameters": map[string]any{"query": "auth"}}},
		{"role": "tool_observation", "content": "found auth.js", "toolResult": map[string]any{"success": false, "result": map[string]any{"n": 1}}},
	}}))
	if _, err := Answer(context.Background(), rt, req); err != nil {
		t.Fatal(err)
	}
	msgs := rec.last().Messages
	if msgs[2].Content != "Thought: search first\nAction: code_search(query=\"auth\")" || msgs[3].Content != "Observation (code_search) ERROR:\nfound auth.js\nResult:\n{\"n\":1}" {
		t.Fatalf("turns: %q / %q", msgs[2].Content, msgs[3].Content)
	}
}

// Context files are read from the workspace like the file tools read them:
// nothing outside it, and a path that cannot be read is named, not fatal.
func TestStepContext(t *testing.T) {
	rt, rec := stepRuntime(t, nil, `{"thought":"the context says it all","tool":"final_answer","args":{"answer":"ok"}}`)
	ws := rt.Env.Workspace
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "src", "auth.js"), []byte("function login() {}\n"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "Login.tsx"), []byte("export const Login = 1\n"), 0o644))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	must(os.WriteFile(outside, []byte("TOP SECRET\n"), 0o644))
	must(os.Symlink(outside, filepath.Join(ws, "link.txt")))
	req := decode(t, stepBody(t, map[string]any{"user_query": "q",
		"explicit_context_paths":           []string{"src/auth.js", "../" + filepath.Base(filepath.Dir(outside)) + "/secret.txt", "link.txt", outside, "src", "missing.txt"},
		"pinned_item_ids_to_include":       []string{"pin-1"},
		"implicit_context":                 map[string]any{"last_focused_file_path": "Login.tsx"},
		"vector_search_results_to_include": []any{"chunk one", map[string]any{"file": "a.go", "text": "chunk two"}},
	}))
	resp, err := Answer(context.Background(), rt, req)
	if err != nil || resp.Status != StatusDirectResponse {
		t.Fatalf("%+v %v", resp, err)
	}
	ctxMsg := rec.last().Messages[1].Content
	for _, want := range []string{"File src/auth.js:\nfunction login() {}", "File link.txt: not included", "File src:\nauth.js",
		"File missing.txt: not included", "Pinned pin-1: not included", "Last focused file Login.tsx:\nexport const Login = 1",
		"Search result 1:\nchunk one", `Search result 2:` + "\n" + `{"file":"a.go","text":"chunk two"}`} {
		if !strings.Contains(ctxMsg, want) {
			t.Errorf("context lacks %q:\n%s", want, ctxMsg)
		}
	}
	if strings.Contains(ctxMsg, "TOP SECRET") || strings.Count(ctxMsg, "not included (") != 5 {
		t.Fatalf("context:\n%s", ctxMsg)
	}
}

// user_api_keys never reach the model, the response or an error message.
func TestStepKeysNeverEchoed(t *testing.T) {
	const key = "sk-user-key-0123456789"
	rt, rec := stepRuntime(t, nil, `{"thought":"the key `+key+` must not show","tool":"code_search","args":{"query":"`+key+`"}}`)
	req := decode(t, stepBody(t, map[string]any{"user_query": "use my key " + key, "user_api_keys": map[string]string{"llmKey": key},
		"tools":                []json.RawMessage{json.RawMessage(searchTool)},
		"conversation_history": []map[string]any{{"role": "user", "content": "earlier " + key}, {"role": "tool_observation", "content": key, "toolResult": map[string]any{"success": true, "result": map[string]string{"k": key}}}},
	}))
	resp, err := Answer(context.Background(), rt, req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(resp)
	sent, _ := json.Marshal(rec.last())
	if strings.Contains(string(out), key) || strings.Contains(string(sent), key) || !strings.Contains(string(out), "[REDACTED]") {
		t.Fatalf("key echoed:\n%s\n%s", out, sent)
	}
}

func TestStepErrors(t *testing.T) {
	ctx := context.Background()
	// No model.
	rt, _ := stepRuntime(t, func(s *config.Settings) { s.Script, s.Backend = "", "none" })
	if _, err := Answer(ctx, rt, decode(t, `{"user_query": "q"}`)); agent.KindOf(err) != agent.ErrNeedsModel {
		t.Fatalf("no model: %v", err)
	}
	// A window too small for the conversation; context that does not fit
	// is left out first.
	rt, rec := stepRuntime(t, func(s *config.Settings) { s.MaxTokens = 50 }, `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"ok"}}`)
	if err := os.WriteFile(filepath.Join(rt.Env.Workspace, "big.txt"), []byte(strings.Repeat("word ", 1500)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Answer(ctx, rt, decode(t, `{"user_query": "q", "llm_config": {"tokenLimit": 100}}`))
	if agent.KindOf(err) != agent.ErrContextTooSmall || !strings.Contains(err.Error(), "but llm_config.tokenLimit holds 100") {
		t.Fatalf("small window: %v", err)
	}
	resp, err := Answer(ctx, rt, decode(t, `{"user_query": "q", "explicit_context_paths": ["big.txt"], "llm_config": {"tokenLimit": 1500}}`))
	if err != nil || resp.Status != StatusDirectResponse || !strings.Contains(rec.last().Messages[len(rec.last().Messages)-1].Content, "context for the query was left out") {
		t.Fatalf("context left out: %+v %v", resp, err)
	}
	// The request's context ends the model call: a timeout.
	rt, _ = stepRuntime(t, nil)
	slow := filepath.Join(t.TempDir(), "slow.jsonl")
	if err := os.WriteFile(slow, []byte(`{"kind":"action","text":"a b c d e f g h","delay_ms":60000}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := llm.LoadScript(slow)
	if err != nil {
		t.Fatal(err)
	}
	rt.Backend = sc
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Answer(tctx, rt, decode(t, `{"user_query": "q"}`))
	// The reply takes a minute: ending within 30 s is the timeout's doing.
	if agent.KindOf(err) != agent.ErrTimeout || time.Since(start) > 30*time.Second {
		t.Fatalf("timeout: %v after %s", err, time.Since(start))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Answer(cctx, rt, decode(t, `{"user_query": "q"}`)); agent.KindOf(err) != agent.ErrCancelled || !errors.Is(err, err) {
		t.Fatalf("cancelled: %v", err)
	}
}

// llm_config: the client's temperature replaces the server's, and its
// reserved output tokens bound the reply, within the server's --max-tokens.
func TestStepLLMConfig(t *testing.T) {
	rt, rec := stepRuntime(t, func(s *config.Settings) { s.MaxTokens = 300 }, `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"ok"}}`, `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"ok"}}`)
	if _, err := Answer(context.Background(), rt, decode(t, `{"user_query": "q", "llm_config": {"modelName": "gpt-4", "temperature": 0.7, "reservedOutputTokens": 100}}`)); err != nil {
		t.Fatal(err)
	}
	if r := rec.last(); r.Sampling.Temperature != 0.7 || r.MaxTokens != 100 {
		t.Fatalf("sampling %+v, max tokens %d", r.Sampling, r.MaxTokens)
	}
	if _, err := Answer(context.Background(), rt, decode(t, `{"user_query": "q", "llm_config": {"reservedOutputTokens": 1000}}`)); err != nil {
		t.Fatal(err)
	}
	if r := rec.last(); r.Sampling.Temperature != rt.S.Temperature || r.MaxTokens != 300 {
		t.Fatalf("sampling %+v, max tokens %d", r.Sampling, r.MaxTokens)
	}
}

// TestStepAskUser: the step API offers ask_user besides the client's
// tools (issue 39); a step whose model asks is an action the client
// handles (action_proposed, tool_name ask_user, the question redacted);
// a question whose arguments are bad is an error, never proposed;
// --no-ask, or a client tool of that name, leaves tact's out.
func TestStepAskUser(t *testing.T) {
	t.Setenv("STEP_TEST_TOKEN", "step-s3cret-value-99")
	ask := `{"thought":"only the user knows which one","tool":"ask_user","args":{"question":"Which config is live? (step-s3cret-value-99)","options":["red","blue"]}}`
	rt, rec := stepRuntime(t, nil, ask,
		`{"thought":"only the user knows which port","tool":"ask_user","args":{"question":"Which port?","schema":{"type":"nope"}}}`)
	body := `{"user_query": "which config is live?", "tools": [{"name": "read_file", "description": "Read a file.", "parameters": {"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}`
	resp, err := Answer(context.Background(), rt, decode(t, body))
	if err != nil || resp.Status != StatusActionProposed || resp.ActionDetails.ToolName != "ask_user" {
		t.Fatalf("%+v %v", resp, err)
	}
	if args := string(resp.ActionDetails.ToolArgs); strings.Contains(args, "step-s3cret") || !strings.Contains(args, "[REDACTED]") {
		t.Errorf("ask_user's arguments: %s", args)
	}
	if !strings.Contains(string(rec.reqs[0].Schema), `"const":"ask_user"`) || !strings.Contains(rec.reqs[0].Messages[0].Content, "- ask_user: ") {
		t.Errorf("ask_user is not offered: %s", rec.reqs[0].Schema)
	}
	resp, err = Answer(context.Background(), rt, decode(t, body))
	if err != nil || resp.Status != StatusError || resp.ActionDetails != nil || !strings.Contains(resp.Error, "ask_user: the answer schema") {
		t.Fatalf("a bad question: %+v %v", resp, err)
	}

	noAsk, rec2 := stepRuntime(t, func(s *config.Settings) { s.NoAsk = true }, `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"ok"}}`)
	if _, err := Answer(context.Background(), noAsk, decode(t, body)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec2.reqs[0].Schema), `"const":"ask_user"`) {
		t.Errorf("--no-ask: ask_user offered: %s", rec2.reqs[0].Schema)
	}
	own, rec3 := stepRuntime(t, nil, `{"thought":"answer from what is known","tool":"final_answer","args":{"answer":"ok"}}`)
	if _, err := Answer(context.Background(), own, decode(t, `{"user_query": "q", "tools": [{"name": "ask_user", "description": "Ask in the editor.", "parameters": {"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(rec3.reqs[0].Schema), `"const":"ask_user"`); n != 1 || !strings.Contains(string(rec3.reqs[0].Schema), `"text"`) {
		t.Errorf("a client's ask_user: %d in the schema, want the client's alone: %s", n, rec3.reqs[0].Schema)
	}
}
