package agent

import (
	"context"
	"errors"

	"github.com/tactcli/tact/llm"
)

// What the engine offers a front end that lays out its own prompt and
// reads the reply itself (the step service of `tact serve`, package
// server/stepapi): one model call with the engine's error types, so the
// caller maps them like a job's.

// RequireModel is nil when jobs can call a model; otherwise the
// ErrNeedsModel error saying how to give one, what ("a step") naming
// what needs it.
func (rt *Runtime) RequireModel(what string) error {
	if rt.noModel != nil {
		return rt.needModel(what, "")
	}
	return nil
}

// Complete makes one model call on the runtime's backend, as req asks.
// The error is typed (KindOf) where the call could not be made: ctx's end
// (ErrTimeout, ErrCancelled), no model (ErrNeedsModel, what naming what
// needs it), a prompt the window cannot hold (ErrContextTooSmall, with
// the backend's message); any other failure comes back untyped, as the
// backend said it. The usage is the call's, whatever its error.
func (rt *Runtime) Complete(ctx context.Context, what string, req llm.Request) (llm.Response, error) {
	out, err := rt.Backend.Complete(ctx, req)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		err = contextError(ctx)
	case errors.Is(err, llm.ErrNoModel):
		err = rt.needModel(what, "")
	case errors.Is(err, llm.ErrContextFull):
		err = &Error{Kind: ErrContextTooSmall, Err: err}
	}
	return out, err
}
