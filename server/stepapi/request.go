// Package stepapi is the step service of `tact serve` (POST
// /api/agent/react_step): one ReAct step of a conversation the client
// holds. The client sends its query, the conversation so far with its
// tools' observations, its tools and the steps it has left; the step
// answers with one thought and either an action for the client to run or
// a direct answer. The client runs the tools, never tact. Nothing
// survives a step but the backend's KV cache: the prompt is laid out so
// that a conversation that comes back shares its prefix (system prompt,
// context, earlier turns) with the previous step. The engine
// (agent.Runtime) makes the model call; this package is the contract:
// the request and its checks (request.go), the prompt and the reading of
// the reply (step.go), the prose form's parser (package prose).
package stepapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/server/prose"
	"github.com/tactcli/tact/tools"
)

// Statuses of a step's response.
const (
	StatusActionProposed = "action_proposed"
	StatusDirectResponse = "direct_response_provided"
	StatusError          = "error"
)

// Roles of conversation turns.
const (
	RoleUser            = "user"
	RoleAssistant       = "assistant"
	RoleToolObservation = "tool_observation"
)

// Request is the step service's request; the JSON names are the
// document's. Tools is tact's extension: with it the reply is constrained
// to exactly those tools and their JSON Schemas.
type Request struct {
	ProjectID     string            `json:"project_id"`
	SessionID     string            `json:"session_id"`
	UserQuery     string            `json:"user_query"`
	History       []Turn            `json:"conversation_history"`
	ContextPaths  []string          `json:"explicit_context_paths"`
	PinnedIDs     []string          `json:"pinned_item_ids_to_include"`
	Implicit      *ImplicitContext  `json:"implicit_context"`
	VectorResults []json.RawMessage `json:"vector_search_results_to_include"`
	ToolsPrompt   string            `json:"available_tools_prompt_segment"`
	LLMConfig     *LLMConfig        `json:"llm_config"`
	UserAPIKeys   map[string]string `json:"user_api_keys"`
	// IterationsLeft nil: the server's --max-iterations.
	IterationsLeft *int   `json:"max_iterations_left"`
	Tools          []Tool `json:"tools"`
}

// ImplicitContext is what the client's editor shows.
type ImplicitContext struct {
	LastFocusedFilePath string `json:"last_focused_file_path"`
}

// LLMConfig is the client's model settings. tact serves one model, so
// ModelName is not used; TokenLimit bounds the prompt and reply,
// ReservedOutputTokens the reply (both at most the server's), Temperature
// replaces the server's.
type LLMConfig struct {
	ModelName            string   `json:"modelName"`
	TokenLimit           int      `json:"tokenLimit"`
	ReservedOutputTokens int      `json:"reservedOutputTokens"`
	Temperature          *float64 `json:"temperature"`
}

// Turn is one turn of the conversation.
type Turn struct {
	Role       string      `json:"role"`
	Content    string      `json:"content"`
	ToolCall   *ToolCall   `json:"toolCall,omitempty"`
	ToolResult *ToolResult `json:"toolResult,omitempty"`
	Timestamp  string      `json:"timestamp,omitempty"`
}

// ToolCall is an assistant turn's action.
type ToolCall struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}

// ToolResult is what the client's tool returned.
type ToolResult struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// Tool is a client tool with the JSON Schema of its arguments object.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Response is the step service's response. Error (tact's extension)
// says what went wrong when Status is "error".
type Response struct {
	SessionID           string         `json:"session_id"`
	Thought             string         `json:"thought"`
	ActionDetails       *ActionDetails `json:"action_details"`
	DirectResponse      *string        `json:"direct_response"`
	History             []Turn         `json:"updated_conversation_history"`
	IterationsRemaining int            `json:"iterations_remaining"`
	Status              string         `json:"status"`
	Error               string         `json:"error,omitempty"`
	// Usage is the model call's, for the server's metrics and logs.
	Usage llm.Usage `json:"-"`
}

// ActionDetails is the action the client should run.
type ActionDetails struct {
	ToolName        string          `json:"tool_name"`
	ToolArgs        json.RawMessage `json:"tool_args"`
	RawActionString string          `json:"raw_action_string"`
}

//go:embed stepschema.json
var stepSchemaJSON []byte

var stepValidator = sync.OnceValues(func() (*schema.Validator, error) { return schema.Compile(stepSchemaJSON) })

// RequestSchema is the JSON Schema requests are checked against.
func RequestSchema() json.RawMessage { return stepSchemaJSON }

// Decode parses and checks a request body. Every problem is an
// ErrBadInput error naming the field ("conversation_history[2].role:
// unknown role \"tool\" ..."); unknown fields are errors. Messages never
// show the request's user_api_keys. Tools' schemas are only bounded here
// (schema.CheckSize): Answer compiles them, once the request is admitted.
func Decode(body []byte) (*Request, error) {
	v, err := stepValidator()
	if err != nil {
		return nil, err // the embedded schema is tested
	}
	if _, err := v.DecodeFields(body); err != nil {
		return nil, badInput(errors.New(redactWith(looseKeys(body))(err.Error())))
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, badInputf("request: %v", redactWith(looseKeys(body))(err.Error()))
	}
	if err := req.check(); err != nil {
		return nil, badInput(errors.New(redactWith(req.secrets())(err.Error())))
	}
	return &req, nil
}

func badInput(err error) error { return &agent.Error{Kind: agent.ErrBadInput, Err: err} }

func badInputf(format string, a ...any) error {
	return &agent.Error{Kind: agent.ErrBadInput, Err: fmt.Errorf(format, a...)}
}

// looseKeys finds user_api_keys' values in a body that may not be valid.
func looseKeys(body []byte) []string {
	var v struct {
		Keys map[string]any `json:"user_api_keys"`
	}
	_ = json.Unmarshal(body, &v)
	var out []string
	for _, k := range v.Keys {
		if s, ok := k.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (req *Request) secrets() []string {
	var out []string
	for _, v := range req.UserAPIKeys {
		out = append(out, v)
	}
	return out
}

// redactWith hides secrets (each at least 4 bytes, as for environment
// secrets) in text.
func redactWith(secrets []string) func(string) string {
	env := make([]string, len(secrets))
	for i, s := range secrets {
		env[i] = fmt.Sprintf("USER_API_%d_KEY=%s", i, s)
	}
	red, _ := redact.NewRedactor(env, nil)
	return red.Redact
}

// check is what the schema cannot say.
func (req *Request) check() error {
	hasUser := false
	for i, t := range req.History {
		at := fmt.Sprintf("conversation_history[%d]", i)
		switch t.Role {
		case RoleUser:
			hasUser = true
		case RoleAssistant, RoleToolObservation:
		default:
			return fmt.Errorf("%s.role: unknown role %q (want user, assistant or tool_observation)", at, t.Role)
		}
		if t.ToolCall != nil && t.Role != RoleAssistant {
			return fmt.Errorf("%s.toolCall: only an assistant turn calls a tool", at)
		}
		if t.ToolResult != nil && t.Role != RoleToolObservation {
			return fmt.Errorf("%s.toolResult: only a tool_observation turn has a tool result", at)
		}
		if t.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339Nano, t.Timestamp); err != nil {
				return fmt.Errorf("%s.timestamp: %q is not an ISO 8601 time like 2024-01-01T00:00:00.000Z", at, t.Timestamp)
			}
		}
	}
	if strings.TrimSpace(req.UserQuery) == "" && !hasUser {
		return errors.New("user_query: empty, and conversation_history holds no user turn")
	}
	seen := map[string]bool{}
	for i, t := range req.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		switch {
		case !prose.IsName(t.Name):
			return fmt.Errorf("%s.name: %q is not a tool name (letters, digits, _ . -, not starting with a digit)", at, t.Name)
		case t.Name == tools.FinalAnswer:
			return fmt.Errorf("%s.name: %s is tact's own way to answer; name the tool differently", at, tools.FinalAnswer)
		case seen[t.Name]:
			return fmt.Errorf("%s.name: %q is given twice", at, t.Name)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			// Bounded on its bytes before anything builds a tree of it;
			// compiling it and its grammar wait for admission (Answer).
			if err := schema.CheckSize(t.Parameters); err != nil {
				return fmt.Errorf("%s.parameters: %v", at, err)
			}
			var m map[string]any
			if err := json.Unmarshal(t.Parameters, &m); err != nil {
				return fmt.Errorf("%s.parameters: %v", at, err)
			}
			if typ, ok := m["type"]; ok && typ != "object" {
				return fmt.Errorf("%s.parameters: the arguments must be an object (\"type\": \"object\"), not %v", at, typ)
			}
		}
	}
	return nil
}

// noArgs is the arguments schema of a tool that gives none.
var noArgs = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

func (t Tool) schema() json.RawMessage {
	if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
		return noArgs
	}
	return t.Parameters
}
