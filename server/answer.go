package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/runrecord"
)

// AnswerRequest is POST /v1/runs/ID/answer's body: the answer a paused
// run (termination_reason needs_input) waits for, as tact answer takes it.
type AnswerRequest struct {
	Text    *string         `json:"text,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Approve bool            `json:"approve,omitempty"`
	Always  bool            `json:"always,omitempty"`
	Deny    bool            `json:"deny,omitempty"`
}

// answer is POST /v1/runs/ID/answer: the paused run ID goes on from its
// checkpoint with the answer (agent.AnswerJob, as tact answer), answered
// as /v1/runs answers a run. A run that is not paused, was answered
// already, paused in another workspace, or an answer that does not fit
// the question is a 400; the run stays paused.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	body := s.readBody(w, r)
	if body == nil {
		return
	}
	var req AnswerRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(w, r, http.StatusBadRequest, "request body: "+err.Error())
		return
	}
	in := runrecord.AnswerInput{Value: req.Value, Approve: req.Approve, Always: req.Always, Deny: req.Deny}
	if req.Text != nil {
		in.Text, in.HasText = *req.Text, true
	}
	st := *s.rt.S
	// The run goes on in the server's workspace, with its runtime.
	job, err := agent.AnswerJobHere(r.Context(), &st, r.PathValue("id"), in)
	if err != nil {
		s.engineFailed(r.Context(), w, r, err)
		return
	}
	defer job.Resume.Release() // Run's; this covers a request that never runs it
	job.ID, job.Settings = react.NewRunID(), &st
	info(r).runID = job.ID
	ctx, cancel := s.requestContext(r)
	defer cancel()
	release := s.admit(ctx, w, r)
	if release == nil {
		return
	}
	defer release()
	res, err := s.rt.Run(ctx, job)
	if err != nil {
		s.engineFailed(ctx, w, r, err)
		return
	}
	info(r).usage = res.TokenUsage
	if !res.Success && res.Message != "" {
		info(r).err = s.rt.Redactor.Redact(res.Message)
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	code := http.StatusOK
	if res.TerminationReason == react.ReasonCancelled && s.base.Err() != nil {
		code = http.StatusServiceUnavailable
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && res.TerminationReason == react.ReasonTimeout {
		code = http.StatusGatewayTimeout
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(s.rt.Redactor.RedactJSON(mustJSON(res)), '\n'))
}
