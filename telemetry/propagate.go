package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tactcli/tact/tools"
)

// runPropagator is the W3C trace context, and for a context that holds no
// span but a run id (a tool's call: the executor knows nothing of spans)
// the span the sink has open for that run, so an MCP server's work joins
// the execute_tool span that called it.
type runPropagator struct {
	propagation.TextMapPropagator
	s *sink
}

func (p runPropagator) Inject(ctx context.Context, c propagation.TextMapCarrier) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if id := tools.RunID(ctx); id != "" {
			if sc := p.s.current(id); sc.IsValid() {
				ctx = trace.ContextWithSpanContext(ctx, sc)
			}
		}
	}
	p.TextMapPropagator.Inject(ctx, c)
}

// current is the innermost open span of a run: its tool call, else the run.
func (s *sink) current(id string) trace.SpanContext {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[id]
	switch {
	case r == nil:
		return trace.SpanContext{}
	case r.tool != nil:
		return r.tool.SpanContext()
	}
	return r.root.SpanContext()
}

// Extract returns ctx continuing the trace of an incoming request's
// traceparent (W3C trace context). With tracing off the global propagator
// is a no-op: ctx comes back as it was.
func Extract(ctx context.Context, h http.Header) context.Context {
	return otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(h))
}

// ExtractMeta continues the trace an MCP request's _meta names
// ("traceparent", "tracestate", as MCP clients send them).
func ExtractMeta(ctx context.Context, meta map[string]any) context.Context {
	c := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate", "baggage"} {
		if v, ok := meta[k].(string); ok {
			c[k] = v
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, c)
}

// InjectMeta returns ctx's trace context as MCP _meta entries (nil: none,
// tracing off).
func InjectMeta(ctx context.Context) map[string]any {
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	m := make(map[string]any, len(c))
	for k, v := range c {
		m[k] = v
	}
	return m
}

// StartStep opens the span of one step API call (tact serve's
// /api/agent/react_step, which runs no whole run and emits no events).
func StartStep(ctx context.Context) (context.Context, func()) {
	ctx, span := otel.Tracer("github.com/tactcli/tact").Start(ctx, "invoke_agent step", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "tact")))
	return ctx, func() { span.End() }
}
