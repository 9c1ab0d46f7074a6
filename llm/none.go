package llm

import (
	"context"
	"fmt"
)

// None is the backend for fully fixed plans: any call fails with ErrNoModel.
// Why, when set, says why no model is configured (for example a models
// directory holding several models), so the error can tell the user.
type None struct{ Why string }

func (n None) Complete(_ context.Context, req Request) (Response, error) {
	if n.Why != "" {
		return Response{}, fmt.Errorf("%s call: %w: %s", req.Kind, ErrNoModel, n.Why)
	}
	return Response{}, fmt.Errorf("%s call: %w", req.Kind, ErrNoModel)
}

func (None) Close() error { return nil }

// ModelInfo: no model.
func (None) ModelInfo() ModelInfo { return ModelInfo{Backend: "none"} }

// Concurrency: every call fails at once.
func (None) Concurrency() int { return Unbounded }
