package server

import (
	"net/http"

	"github.com/tactcli/tact/server/stepapi"
	"github.com/tactcli/tact/telemetry"
)

// step is POST /api/agent/react_step: one step of a conversation the
// client holds (package stepapi does the work, on the server's runtime).
func (s *Server) step(w http.ResponseWriter, r *http.Request) {
	body := s.readBody(w, r)
	if body == nil {
		return
	}
	// Decoding bounds the tools' schemas on their bytes; compiling them and
	// their grammar (the costly part) happens in stepapi.Answer, once admitted.
	req, err := stepapi.Decode(body)
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
	ctx, endSpan := telemetry.StartStep(ctx) // a no-op with telemetry off
	defer endSpan()
	resp, err := stepapi.Answer(ctx, s.rt, req)
	if err != nil {
		s.engineFailed(ctx, w, r, err)
		return
	}
	ri := info(r)
	ri.session, ri.usage = resp.SessionID, resp.Usage
	if resp.Status == stepapi.StatusError {
		ri.err = resp.Error
	}
	writeJSON(w, http.StatusOK, resp)
}
