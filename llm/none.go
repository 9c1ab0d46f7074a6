package llm

import (
	"context"
	"fmt"
)

// None is the backend for fully fixed plans: any call fails with ErrNoModel.
type None struct{}

func (None) Complete(_ context.Context, req Request) (Response, error) {
	return Response{}, fmt.Errorf("%s call: %w", req.Kind, ErrNoModel)
}

func (None) Close() error { return nil }
