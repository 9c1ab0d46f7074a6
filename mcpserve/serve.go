package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client over stdin and stdout until it hangs up or
// ctx ends (neither is an error). Nothing else may write to stdout.
func (s *Server) ServeStdio(ctx context.Context) error {
	err := s.sdk.Run(ctx, &sdk.StdioTransport{})
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("mcp serve: %w", err)
}

// ServeHTTP serves streamable HTTP on ln until ctx ends (a signal), then
// lets calls in flight finish within grace.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, o HTTPOptions, grace time.Duration) error {
	hs := &http.Server{Handler: s.Handler(o), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("mcp serve --http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	return nil
}
