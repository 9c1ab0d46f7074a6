package server

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/schema"
)

// RunRequest is POST /v1/runs: a query or a JSONL plan (as `tact exec`
// reads it) and the run options a client may choose; everything else
// (workspace, policy, sandbox, approval) is the server's. Runs are always
// unattended.
type RunRequest struct {
	ID            string   `json:"id"`
	Query         string   `json:"query"`
	Plan          string   `json:"plan"`
	Stream        bool     `json:"stream"`
	NoPlan        *bool    `json:"no_plan"`
	MaxIterations *int     `json:"max_iterations"`
	AllowTools    []string `json:"allow_tools"`
	TokenBudget   *int     `json:"token_budget"`
	MaxTokens     *int     `json:"max_tokens"`
	Temperature   *float32 `json:"temperature"`
	Seed          *int     `json:"seed"`
	// Schema is the JSON Schema the final answer must validate against
	// (tact run --schema): final_answer is then that JSON value.
	Schema json.RawMessage `json:"schema"`
	// Params are the plan's parameter values (tact exec --param; any JSON
	// value), bound before any step runs.
	Params map[string]json.RawMessage `json:"params"`
}

//go:embed runschema.json
var runSchemaJSON []byte

var runValidator = sync.OnceValues(func() (*schema.Validator, error) { return schema.Compile(runSchemaJSON) })

// decodeRun parses and checks a run request against the server's settings;
// the job's settings are a copy of the server's with the request's options.
func (s *Server) decodeRun(body []byte) (*RunRequest, agent.Job, error) {
	v, err := runValidator()
	if err != nil {
		return nil, agent.Job{}, err
	}
	if _, err := v.DecodeFields(body); err != nil {
		return nil, agent.Job{}, err
	}
	var req RunRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, agent.Job{}, fmt.Errorf("request: %v", err)
	}
	if strings.TrimSpace(req.Query) == "" && strings.TrimSpace(req.Plan) == "" {
		return nil, agent.Job{}, errors.New("query: empty, and no plan given")
	}
	if req.ID != "" {
		if err := react.CheckRunID(req.ID); err != nil {
			return nil, agent.Job{}, fmt.Errorf("id: %v", err)
		}
	}
	if len(req.Schema) > 0 {
		// Bounded on its bytes, as the step API's tool schemas, before
		// anything compiles it (2,500 nested objects: a minute of CPU).
		if err := schema.CheckSize(req.Schema); err != nil {
			return nil, agent.Job{}, fmt.Errorf("schema: %v", err)
		}
	}
	st := *s.rt.S
	if req.NoPlan != nil {
		st.NoPlan = *req.NoPlan
	}
	if req.MaxIterations != nil {
		st.MaxIterations = *req.MaxIterations
	}
	if req.TokenBudget != nil {
		st.TokenBudget = *req.TokenBudget
	}
	if req.MaxTokens != nil {
		if s.rt.S.MaxTokens > 0 && *req.MaxTokens > s.rt.S.MaxTokens {
			return nil, agent.Job{}, fmt.Errorf("max_tokens: %d is more than the server's --max-tokens %d", *req.MaxTokens, s.rt.S.MaxTokens)
		}
		st.MaxTokens = *req.MaxTokens
	}
	if req.Temperature != nil {
		st.Temperature = *req.Temperature
	}
	if req.Seed != nil {
		st.Seed = *req.Seed
	}
	if req.AllowTools != nil {
		for i, t := range req.AllowTools {
			if _, ok := s.rt.Registry.Get(t); !ok {
				return nil, agent.Job{}, fmt.Errorf("allow_tools[%d]: unknown tool %q (known: %s)", i, t, strings.Join(s.rt.Registry.Names(), ", "))
			}
			if len(s.rt.S.AllowTools) > 0 && !slices.Contains(s.rt.S.AllowTools, t) {
				return nil, agent.Job{}, fmt.Errorf("allow_tools[%d]: %q is not among the server's --allow-tools (%s)", i, t, strings.Join(s.rt.S.AllowTools, ", "))
			}
		}
		st.AllowTools = req.AllowTools
	}
	// The answer's shape is the request's alone, never the server's
	// environment's (TACT_SCHEMA).
	st.Schema = ""
	if len(req.Schema) > 0 {
		raw, err := schema.CompileAnswer(req.Schema)
		if err != nil {
			return nil, agent.Job{}, fmt.Errorf("schema: %v", err)
		}
		st.Schema = string(raw) // inline JSON: an object or a boolean, never an @FILE
	}
	job := agent.Job{ID: req.ID, Query: req.Query, Settings: &st}
	if strings.TrimSpace(req.Plan) != "" {
		job.PlanName, job.PlanData, job.Params = "plan", []byte(req.Plan), req.Params
	} else if len(req.Params) > 0 {
		return nil, agent.Job{}, errors.New("params: given without a plan")
	}
	return &req, job, nil
}

// runs is POST /v1/runs: a whole run on the server, answered as the
// `run --json` object or, with "stream": true, as server-sent events (the
// trace events, then the result).
func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	body := s.readBody(w, r)
	if body == nil {
		return
	}
	req, job, err := s.decodeRun(body)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if job.ID == "" {
		job.ID = react.NewRunID()
	}
	info(r).runID = job.ID
	ctx, cancel := s.requestContext(r)
	defer cancel()
	release := s.admit(ctx, w, r)
	if release == nil {
		return
	}
	defer release()
	var sse *eventStream
	if req.Stream {
		sse = &eventStream{w: w, rc: http.NewResponseController(w)}
		job.Events = react.NewTraceWriter(sse, func(line string) string { return string(s.rt.Redactor.RedactJSON([]byte(line))) })
	}
	res, err := s.rt.Run(ctx, job)
	if err != nil {
		if sse != nil && sse.started() {
			// The stream has begun: the error is its last event.
			msg := s.rt.Redactor.Redact(err.Error())
			info(r).err = msg
			sse.send("error", mustJSON(errorBody{Status: "error", Error: msg}))
			return
		}
		s.engineFailed(ctx, w, r, err)
		return
	}
	info(r).usage = res.TokenUsage
	if !res.Success && res.Message != "" {
		info(r).err = s.rt.Redactor.Redact(res.Message)
	}
	out := s.rt.Redactor.RedactJSON(mustJSON(res))
	if sse != nil {
		sse.send("result", out)
		return
	}
	code := http.StatusOK
	switch {
	case res.TerminationReason == react.ReasonCancelled && s.base.Err() != nil:
		code = http.StatusServiceUnavailable // the server is shutting down
	case r.Context().Err() != nil:
		return // the client went away
	case res.TerminationReason == react.ReasonTimeout && errors.Is(ctx.Err(), context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(out, '\n'))
}

func mustJSON(v any) []byte {
	b, err := text.JSON(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

// eventStream writes server-sent events: a react.TraceWriter writes one
// trace line per Write, which becomes one event named after the trace
// event. The headers go out with the first event, so an error before the
// run starts is still an ordinary JSON error response.
type eventStream struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	rc    *http.ResponseController
	begun bool
}

func (e *eventStream) started() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.begun
}

// Write takes one trace line.
func (e *eventStream) Write(line []byte) (int, error) {
	var ev struct {
		Event string `json:"event"`
	}
	_ = json.Unmarshal(line, &ev)
	if ev.Event == "" {
		ev.Event = "trace"
	}
	if err := e.send(ev.Event, bytes.TrimRight(line, "\n")); err != nil {
		return 0, err
	}
	return len(line), nil
}

func (e *eventStream) send(event string, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.begun {
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
		e.begun = true
	}
	// data holds no newline: it is one line of JSON.
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	return e.rc.Flush()
}
