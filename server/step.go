package server

import (
	"net/http"

	"github.com/tactcli/tact/agent"
)

// step is POST /api/agent/react_step: one step of a conversation the
// client holds (agent.Runtime.Step does the work).
func (s *Server) step(w http.ResponseWriter, r *http.Request) {
	body := s.readBody(w, r)
	if body == nil {
		return
	}
	// Decoding bounds the tools' schemas on their bytes; compiling them and
	// their grammar (the costly part) happens in Step, once admitted.
	req, err := agent.DecodeStepRequest(body)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	info(r).session = req.SessionID
	ctx, cancel := s.requestContext(r)
	defer cancel()
	release := s.admit(ctx, w, r)
	if release == nil {
		return
	}
	defer release()
	resp, err := s.rt.Step(ctx, req)
	if err != nil {
		s.engineFailed(ctx, w, r, err)
		return
	}
	ri := info(r)
	ri.session, ri.usage = resp.SessionID, resp.Usage
	if resp.Status == agent.StepError {
		ri.err = resp.Error
	}
	writeJSON(w, http.StatusOK, resp)
}
