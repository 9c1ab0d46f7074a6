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
func (None) ModelInfo() ModelInfo { return ModelInfo{Backend: BackendNone} }

// Concurrency: every call fails at once.
func (None) Concurrency() int { return Unbounded }

// NoModel says why there is no model (ModelLess).
func (n None) NoModel() string { return n.Why }

// ModelLess is a backend with no model behind it (None): every call fails
// with ErrNoModel, so callers skip the calls they can do without (a
// context check, a model summary, a fallback answer). NoModel says why no
// model is configured ("" when there is nothing more to say).
type ModelLess interface {
	NoModel() (why string)
}

// HasModel reports whether b's calls can reach a model: false for a
// ModelLess backend.
func HasModel(b Backend) bool {
	_, none := b.(ModelLess)
	return !none
}
