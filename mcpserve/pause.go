package mcpserve

// Runs that pause for the client, on protocol 2026-07-28 (multi round-trip
// requests, SEP-2322). That revision has no server-to-client requests, so
// a question in the middle of a call (ask_user, an approval nobody else
// decided) cannot be elicited while the call waits. Instead the run pauses
// as a run without a terminal does (needs_input, a checkpoint in the run
// history) and the call ends with an input-required result: one form
// elicitation under the key "answer", and the paused run's id in the
// request state, sealed with this process's key. The client's retry of
// the same call carries the answer and the state; the paused run goes on
// from its checkpoint as `tact answer` continues it (agent.AnswerJob: the
// same checks, the same lock, a new run id with resumed_from). A direct
// tools/call that needs approval is put the same way, its state naming the
// call. Clients on 2025-11-25 and before are asked by elicitation while
// the call waits, as ever.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runrecord"
)

// mrtrVersion is the first protocol version with multi round-trip
// requests and without server-initiated elicitation.
const mrtrVersion = "2026-07-28"

// answerKey is the one input request's key in an input-required result.
const answerKey = "answer"

// modern reports whether ss speaks 2026-07-28 or later.
func modern(ss *sdk.ServerSession) bool {
	return protocolAtLeast(ss, mrtrVersion)
}

// asksByResult reports whether calls of ss ask their questions with
// input-required results: a 2026-07-28 client that declared elicitation,
// unless --no-input (which asks nobody: a run pauses as without a
// terminal, tact answer goes on). A client without elicitation is never
// sent an elicitation to fulfil: it is told at once, as on 2025-11-25.
func (s *Server) asksByResult(ss *sdk.ServerSession) bool {
	return modern(ss) && !s.rt.S.NoInput && canElicit(ss)
}

func protocolAtLeast(ss *sdk.ServerSession, version string) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= version
}

// sealer seals request states: a state is its payload and an HMAC-SHA256
// of it under a key made when the server starts, so a client can read a
// state but not make or change one (the revision asks servers to reject a
// tampered state). A state from another server process does not open:
// its run is still paused, and `tact answer RUN` goes on with it.
type sealer struct{ key []byte }

func newSealer() sealer {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24)
	return sealer{key: key}
}

// seal makes the state for kind ("run" or "call") and payload.
func (s sealer) seal(kind, payload string) string {
	body := kind + ":" + payload
	return base64.RawURLEncoding.EncodeToString([]byte(body)) + "." + base64.RawURLEncoding.EncodeToString(s.mac(body))
}

func (s sealer) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("tact mcp serve request state v1\x00" + body))
	return m.Sum(nil)
}

// open checks state and returns its payload, which must be of kind.
func (s sealer) open(kind, state string) (string, error) {
	b64, sig, ok := strings.Cut(state, ".")
	body, err1 := base64.RawURLEncoding.DecodeString(b64)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(string(body))) {
		return "", errors.New("requestState was not made by this tact mcp serve process (changed, or from one that has ended); call again without it, or answer a paused run with tact answer RUN")
	}
	k, payload, _ := strings.Cut(string(body), ":")
	if k != kind {
		return "", fmt.Errorf("requestState is for a %s, not this %s", k, kind)
	}
	return payload, nil
}

// badState is the protocol error for a state that does not open.
func badState(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

// inputRequired is the result that asks the client q about paused run
// runID and carries its sealed state.
func (s *Server) inputRequired(runID string, q react.Question) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{answerKey: s.elicitation(runID, q)},
		RequestState:  s.seal.seal("run", runID),
	}
}

// elicitation is q as a form: one property, answer, a choice for an
// approval (yes, always, no) or a question with options, else a string
// (JSON for a question with a schema). Texts are redacted already
// (react.Question) and neutralized for a terminal or a page.
func (s *Server) elicitation(runID string, q react.Question) *sdk.ElicitParams {
	msg := q.Question
	var prop map[string]any
	switch {
	case q.Kind == react.KindApproval && q.SecretArgs:
		prop = choice("Run this?", []string{"no"}, []string{"no (deny it: its arguments held a secret, which tact does not store)"})
	case q.Kind == react.KindApproval:
		prop = choice("Run this?", []string{"yes", "always", "no"},
			[]string{"yes (run it once)", "always (run it, and add the narrowed allow rule to the policy file)", "no (deny it)"})
	case len(q.Options) > 0:
		prop = choice("Answer", q.Options, q.Options)
	default:
		prop = map[string]any{"type": "string", "title": "Answer", "minLength": 1}
		if len(q.Schema) > 0 {
			var sch bytes.Buffer
			_ = json.Compact(&sch, q.Schema)
			prop["description"] = "a JSON value valid against this JSON Schema: " + sch.String()
		}
	}
	if runID != "" {
		msg += fmt.Sprintf("\n(tact run %s waits for this answer)", runID)
	}
	return &sdk.ElicitParams{
		Mode:    "form",
		Message: policy.SanitizeTerminal(msg),
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"answer": prop},
			"required":   []any{"answer"},
		},
	}
}

// choice is an enum property of words, each shown as its title.
func choice(title string, words, titles []string) map[string]any {
	enum := make([]any, 0, len(words))
	names := make([]any, 0, len(words))
	for i, w := range words {
		enum = append(enum, w)
		names = append(names, policy.SanitizeTerminal(titles[i]))
	}
	return map[string]any{"type": "string", "title": title, "enum": enum, "enumNames": names}
}

// answerOf turns the client's response to q into tact answer's input: an
// approval's yes, always or no (a decline or cancel is no); a question's
// text or, when not a string, its JSON value. A question declined or
// cancelled is not answered: errUnanswered.
func answerOf(q react.Question, resp sdk.InputResponse) (runrecord.AnswerInput, error) {
	er, ok := resp.(*sdk.ElicitResult)
	if !ok || er == nil {
		return runrecord.AnswerInput{}, fmt.Errorf("inputResponses.%s: want an elicitation result", answerKey)
	}
	if q.Kind == react.KindApproval {
		if er.Action != "accept" {
			return runrecord.AnswerInput{Deny: true}, nil
		}
		switch er.Content[answerKey] {
		case "yes":
			return runrecord.AnswerInput{Approve: true}, nil
		case "always":
			return runrecord.AnswerInput{Always: true}, nil
		case "no":
			return runrecord.AnswerInput{Deny: true}, nil
		}
		return runrecord.AnswerInput{}, fmt.Errorf("inputResponses.%s: want yes, always or no", answerKey)
	}
	if er.Action != "accept" {
		return runrecord.AnswerInput{}, errUnanswered
	}
	switch v := er.Content[answerKey].(type) {
	case string:
		return runrecord.AnswerInput{Text: v, HasText: true}, nil
	case nil:
		return runrecord.AnswerInput{}, fmt.Errorf("inputResponses.%s: no answer in its content", answerKey)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return runrecord.AnswerInput{}, fmt.Errorf("inputResponses.%s: %v", answerKey, err)
		}
		return runrecord.AnswerInput{Value: raw}, nil
	}
}

var errUnanswered = errors.New("the question was declined")

// pausingRun is tact_run's and tact_exec's handler on 2026-07-28: the
// first call runs the job and, should it pause, asks for the answer; a
// retry with the state and the answer goes on with the paused run.
func (s *Server) pausingRun(ctx context.Context, req *sdk.CallToolRequest, decode func(json.RawMessage) (agent.Job, error)) (*sdk.CallToolResult, error) {
	var job agent.Job
	if state := req.Params.RequestState; state != "" {
		runID, err := s.seal.open("run", state)
		if err != nil {
			return nil, badState(err)
		}
		q, err := agent.PendingQuestion(ctx, runID)
		if err != nil {
			return s.textResult(err.Error(), true), nil
		}
		resp, ok := req.Params.InputResponses[answerKey]
		if !ok {
			// The retry came without the answer: ask again.
			return s.inputRequired(runID, q), nil
		}
		in, err := answerOf(q, resp)
		if errors.Is(err, errUnanswered) {
			return s.textResult(fmt.Sprintf("run %s still waits for an answer (%s): call again, or tact answer %s", runID, err, runID), true), nil
		} else if err != nil {
			return nil, badState(err)
		}
		st := *s.rt.S
		// The run goes on in the server's workspace, with its runtime, as
		// POST /v1/runs/ID/answer does.
		job, err = agent.AnswerJobHere(ctx, &st, runID, in)
		if err != nil {
			return s.textResult(err.Error(), true), nil
		}
		defer job.Resume.Release() // Run's; this covers a call that never runs it
		job.Settings = &st
	} else {
		var err error
		if job, err = decode(json.RawMessage(req.Params.Arguments)); err != nil {
			return s.textResult("bad arguments: "+err.Error(), true), nil
		}
	}
	job.Pause = true
	res, out, err := s.runJob(ctx, req, job)
	if err != nil || out != nil {
		return out, err
	}
	if res.TerminationReason == react.ReasonNeedsInput && res.Question != nil {
		return s.inputRequired(res.RunID, *res.Question), nil
	}
	return s.runResult(res)
}

// pausingCall is a direct tools/call on 2026-07-28 whose approval nobody
// decided: the call's input-required result asks for it, the state
// naming the tool and its arguments; the retry with yes or always makes
// the call, asking no one (the answer stands in for the session's
// prompter); no makes it a denial.
func (s *Server) pausingCall(ctx context.Context, req *sdk.CallToolRequest, c agent.ToolCall) (agent.ToolCallResult, *sdk.CallToolResult, error) {
	key := callKey(c)
	if state := req.Params.RequestState; state != "" {
		got, err := s.seal.open("call", state)
		if err != nil {
			return agent.ToolCallResult{}, nil, badState(err)
		}
		if got != key {
			return agent.ToolCallResult{}, nil, badState(errors.New("requestState is for another tool call (a retry carries the same arguments)"))
		}
		resp, ok := req.Params.InputResponses[answerKey]
		if ok {
			in, err := answerOf(react.Question{Kind: react.KindApproval}, resp)
			if err != nil {
				return agent.ToolCallResult{}, nil, badState(err)
			}
			word := "no"
			switch {
			case in.Always:
				word = "always"
			case in.Approve:
				word = "yes"
			}
			c.Gate = s.rt.NewGate(answered(word))
			return s.rt.CallTool(ctx, c), nil, nil
		}
	}
	out := s.rt.CallTool(ctx, c)
	if !out.NeedsInput {
		return out, nil, nil
	}
	q := react.Question{Kind: react.KindApproval, Question: out.Result.Err.Error()}
	return out, &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{answerKey: s.elicitation("", q)},
		RequestState:  s.seal.seal("call", key),
	}, nil
}

// callKey names a call in its state: the tool and a hash of its
// arguments, so an approval answers that call only.
func callKey(c agent.ToolCall) string {
	var buf bytes.Buffer
	if json.Compact(&buf, c.Args) != nil {
		buf.Reset()
		buf.Write(c.Args)
	}
	sum := sha256.Sum256(buf.Bytes())
	return c.Tool.Name() + ":" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// answered is a prompter that gives one answer (the client's, from its
// retry) to whatever it is asked.
type answered string

func (a answered) Ask(context.Context, string, []string) (string, error) { return string(a), nil }
