package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/server/stepapi"
)

const searchTool = `{"name":"code_search","description":"Search the code.","parameters":{"type":"object","properties":{"query":{"type":"string","minLength":1}},"required":["query"],"additionalProperties":false}}`

const docSegment = `You have access to the following tools:
- code_search(query="search terms") - Search for code matching the query
- read_file(path="file/path") - Read the contents of a specific file

Format: Action: tool_name(param="value")`

// The document's example, field for field: the request with every field
// (plus tools), the response with every field.
func TestStepFields(t *testing.T) {
	fk := &fake{reply: func(int, llm.Request) string {
		return `{"thought":"I need to search for authentication code.","tool":"code_search","args":{"query":"authentication login"}}`
	}}
	e := newEnv(t, Config{}, fk, "", nil)
	if err := os.WriteFile(filepath.Join(e.rt.Env.Workspace, "auth.js"), []byte("function login() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := `{
	  "project_id": "3b241101-e2bb-4255-8caf-4136c566a962",
	  "session_id": "6f1c2e0a-1111-4222-8333-944455556666",
	  "user_query": "How do I implement authentication?",
	  "conversation_history": [],
	  "explicit_context_paths": ["auth.js"],
	  "pinned_item_ids_to_include": ["pinned-id-1"],
	  "implicit_context": {"last_focused_file_path": "src/components/Login.tsx"},
	  "vector_search_results_to_include": [],
	  "available_tools_prompt_segment": "You have access to: code_search(query), read_file(path)",
	  "llm_config": {"modelName": "gpt-4", "tokenLimit": 8192, "reservedOutputTokens": 1000, "temperature": 0.2},
	  "user_api_keys": {"llmKey": "user-llm-api-key"},
	  "max_iterations_left": 3,
	  "tools": [` + searchTool + `]
	}`
	r := e.post("/api/agent/react_step", body, "Content-Type", "application/json")
	if r.code != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", r.code, r.body)
	}
	var raw map[string]json.RawMessage
	r.json(t, &raw)
	for _, f := range []string{"session_id", "thought", "action_details", "direct_response", "updated_conversation_history", "iterations_remaining", "status"} {
		if _, ok := raw[f]; !ok {
			t.Errorf("response lacks %s: %s", f, r.body)
		}
	}
	var resp stepapi.Response
	r.json(t, &resp)
	if resp.SessionID != "6f1c2e0a-1111-4222-8333-944455556666" || resp.Status != "action_proposed" || resp.IterationsRemaining != 2 ||
		resp.Thought != "I need to search for authentication code." || string(raw["direct_response"]) != "null" ||
		resp.ActionDetails.ToolName != "code_search" || string(resp.ActionDetails.ToolArgs) != `{"query":"authentication login"}` ||
		resp.ActionDetails.RawActionString != `Action: code_search(query="authentication login")` {
		t.Fatalf("%s", r.body)
	}
	h := resp.History
	if len(h) != 2 || h[0].Role != "user" || h[0].Content != "How do I implement authentication?" || h[1].Role != "assistant" ||
		h[1].ToolCall.Name != "code_search" || string(h[1].ToolCall.Parameters) != `{"query":"authentication login"}` || h[0].Timestamp == "" || h[1].Timestamp == "" {
		t.Fatalf("history %s", raw["updated_conversation_history"])
	}
	// The context file, the temperature and the reply room reached the model.
	if !strings.Contains(fk.last.Messages[1].Content, "function login()") || fk.last.Sampling.Temperature != 0.2 || fk.last.MaxTokens != 512 {
		t.Fatalf("model request %+v", fk.last)
	}
	// Without a session id, one is made.
	r = e.post("/api/agent/react_step", `{"user_query": "q", "tools": [`+searchTool+`]}`)
	r.json(t, &resp)
	if r.code != 200 || len(resp.SessionID) != 36 || resp.SessionID[14] != '4' {
		t.Fatalf("%d %s", r.code, r.body)
	}
}

// A conversation of several steps over HTTP: the client runs the tool,
// posts the observation back, and the steps left count down to a direct
// response; the prose form works the same way.
func TestStepConversationOverHTTP(t *testing.T) {
	for _, prose := range []bool{false, true} {
		t.Run(fmt.Sprintf("prose=%v", prose), func(t *testing.T) {
			fk := &fake{reply: func(n int, req llm.Request) string {
				switch {
				case req.Schema != nil && strings.Contains(string(req.Schema), "code_search") || prose && n < 3:
					if prose {
						return fmt.Sprintf("Thought: search again, round %d\nAction: code_search(query=\"auth %d\")", n, n)
					}
					return fmt.Sprintf(`{"thought":"search again, round %d","tool":"code_search","args":{"query":"auth %d"}}`, n, n)
				}
				return `{"thought":"the searches found auth.js","tool":"final_answer","args":{"answer":"It is in auth.js."}}`
			}}
			e := newEnv(t, Config{}, fk, "", nil)
			req := map[string]any{"user_query": "How is authentication implemented?", "max_iterations_left": 2}
			if prose {
				req["available_tools_prompt_segment"] = docSegment
			} else {
				req["tools"] = []json.RawMessage{json.RawMessage(searchTool)}
			}
			var statuses []string
			var remaining []int
			for step := 1; step <= 3; step++ {
				r := e.post("/api/agent/react_step", toJSON(t, req))
				var resp stepapi.Response
				r.json(t, &resp)
				if r.code != 200 {
					t.Fatalf("step %d: %d %s", step, r.code, r.body)
				}
				statuses, remaining = append(statuses, resp.Status), append(remaining, resp.IterationsRemaining)
				if resp.Status == stepapi.StatusDirectResponse {
					if *resp.DirectResponse != "It is in auth.js." || resp.ActionDetails != nil {
						t.Fatalf("%s", r.body)
					}
					break
				}
				if resp.ActionDetails.ToolName != "code_search" || string(resp.ActionDetails.ToolArgs) != fmt.Sprintf(`{"query":"auth %d"}`, step) {
					t.Fatalf("step %d: %s", step, r.body)
				}
				req["user_query"] = ""
				req["session_id"] = resp.SessionID
				req["max_iterations_left"] = resp.IterationsRemaining
				req["conversation_history"] = append(resp.History, stepapi.Turn{Role: "tool_observation", Content: fmt.Sprintf("Found: auth.js (search %d)", step),
					ToolResult: &stepapi.ToolResult{Success: true, Result: json.RawMessage(`"Search results..."`)}})
			}
			if strings.Join(statuses, ",") != "action_proposed,action_proposed,direct_response_provided" || fmt.Sprint(remaining) != "[1 0 0]" {
				t.Fatalf("statuses %v, remaining %v", statuses, remaining)
			}
			if last := fk.last.Messages; !strings.Contains(last[len(last)-2].Content, "Found: auth.js (search 2)") {
				t.Fatalf("the last observation did not reach the model: %q", last[len(last)-2].Content)
			}
		})
	}
}

// Bad requests: 400 with the field and the reason; 413, 415, 404, 405.
func TestStepBadRequests(t *testing.T) {
	e := newEnv(t, Config{MaxBody: 2048}, &fake{}, "", nil)
	for _, tc := range []struct {
		name, body string
		header     []string
		code       int
		want       string
	}{
		{"unknown role", `{"conversation_history": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "t"}, {"role": "tool", "content": "x"}]}`, nil, 400,
			`conversation_history[2].role: unknown role \"tool\"`},
		{"unknown field", `{"user_query": "q", "userQuery": "q"}`, nil, 400, "userQuery: unknown field"},
		{"wrong type", `{"user_query": "q", "max_iterations_left": "3"}`, nil, 400, "max_iterations_left: got string, want null or integer"},
		{"no query", `{}`, nil, 400, "user_query: empty"},
		{"not JSON", `hello`, nil, 400, "request: invalid JSON"},
		{"empty body", ``, nil, 400, "request: invalid JSON"},
		{"too large", `{"user_query": "` + strings.Repeat("x", 3000) + `"}`, nil, 413, "at most 2048 (--max-body)"},
		{"wrong content type", `{"user_query": "q"}`, []string{"Content-Type", "text/plain"}, 415,
			`Content-Type \"text/plain\": the body must be JSON sent with the header \"Content-Type: application/json\""`},
		// What curl -d sends: refused, JSON or not, with the header to send.
		{"form content type", `{"user_query": "q"}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415,
			`(with curl: -H 'Content-Type: application/json' -d BODY, or --json BODY)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.post("/api/agent/react_step", tc.body, tc.header...)
			if r.code != tc.code || !strings.Contains(string(r.body), tc.want) || !strings.Contains(string(r.body), `"status":"error"`) {
				t.Fatalf("%d %s", r.code, r.body)
			}
		})
	}
	// A chunked body has no length up front: cut off at the limit.
	req, _ := http.NewRequest("POST", e.http.URL+"/api/agent/react_step", io.MultiReader(strings.NewReader(`{"user_query": "`), strings.NewReader(strings.Repeat("x", 5000)+`"}`)))
	req.ContentLength = -1
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(b), "over 2048 bytes") {
		t.Fatalf("chunked: %d %s", resp.StatusCode, b)
	}
	if r := e.do("GET", "/api/agent/react_step", ""); r.code != 405 {
		t.Fatalf("GET: %d", r.code)
	}
	if r := e.do("GET", "/nope", ""); r.code != 404 {
		t.Fatalf("unknown path: %d", r.code)
	}
	if e.fake.calls != 0 {
		t.Fatalf("a bad request reached the model")
	}
}

// The reply schema of a step with tools is exactly those tools; what the
// server answers validates against the client's schema.
func TestStepToolArgsValidate(t *testing.T) {
	fk := &fake{reply: func(int, llm.Request) string {
		return `{"thought":"search for the login code","tool":"code_search","args":{"query":"login"}}`
	}}
	e := newEnv(t, Config{}, fk, "", nil)
	r := e.post("/api/agent/react_step", `{"user_query": "q", "tools": [`+searchTool+`]}`)
	var resp stepapi.Response
	r.json(t, &resp)
	var tool struct{ Parameters json.RawMessage }
	_ = json.Unmarshal([]byte(searchTool), &tool)
	if _, err := schema.MustCompile(tool.Parameters).ValidateJSON(resp.ActionDetails.ToolArgs); err != nil || r.code != 200 {
		t.Fatalf("%d %s: %v", r.code, r.body, err)
	}
	var sch struct{ OneOf []map[string]any }
	_ = json.Unmarshal(fk.last.Schema, &sch)
	if len(sch.OneOf) != 3 { // final_answer, ask_user and the client's
		t.Fatalf("schema %s", fk.last.Schema)
	}
	// A reply whose arguments break the schema is never proposed.
	fk.reply = func(int, llm.Request) string {
		return `{"thought":"search for the login code","tool":"code_search","args":{"query":""}}`
	}
	r = e.post("/api/agent/react_step", `{"user_query": "q", "tools": [`+searchTool+`]}`)
	r.json(t, &resp)
	if r.code != 200 || resp.Status != "error" || resp.ActionDetails != nil || !strings.Contains(resp.Error, "/args/query") {
		t.Fatalf("%d %s", r.code, r.body)
	}
}
