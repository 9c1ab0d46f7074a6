// Package telemetry exports tact's runs as OpenTelemetry traces (and the
// GenAI client metrics) in the GenAI semantic conventions
// (docs/telemetry.md). It is off unless an OTLP
// endpoint is set; the spans are built from the run's events (Sink), so the
// executor knows nothing of it. Exporting never changes a run: a collector
// that is down, slow or refusing costs one warning line at the end.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/tactcli/tact/internal/buildinfo"
	"github.com/tactcli/tact/react"
)

// DefaultFlushTimeout bounds the export at the end of a process.
const DefaultFlushTimeout = 2 * time.Second

// Options sets telemetry up. The OTEL_* variables are the OpenTelemetry
// standard ones: the SDK and its exporters read most of them themselves
// (endpoint, headers, timeouts, sampler, resource); Lookup is read only for
// the switch (whether an endpoint is set, OTEL_SDK_DISABLED,
// OTEL_TRACES_EXPORTER), the protocol and content capture. TACT_* settings
// stay with package config (FlushTimeout comes from there).
type Options struct {
	Lookup       func(string) (string, bool) // os.LookupEnv
	FlushTimeout time.Duration               // 0: DefaultFlushTimeout
	// Redact is applied to every text a span event carries (content
	// capture only); MaxContentBytes cuts it (0: 8000).
	Redact          func(string) string
	MaxContentBytes int
	// Warn receives the one warning line when exporting failed (stderr).
	Warn io.Writer
	// Exporter replaces the OTLP exporter (tests); Lookup's switch is then
	// not consulted, and metrics are off unless MetricExporter is set.
	Exporter sdktrace.SpanExporter
	// MetricExporter replaces the OTLP metric exporter (tests).
	MetricExporter sdkmetric.Exporter
}

// Telemetry is a tracer provider and the sink that makes spans of events.
// A nil *Telemetry is off: every method is a no-op.
type Telemetry struct {
	tp     *sdktrace.TracerProvider // nil: traces off (metrics only)
	tracer trace.Tracer
	meters *meters // nil: metrics off
	// metricsEndpoint is where metrics go (the warning names it).
	metricsEndpoint string
	sink            *sink
	flush           time.Duration
	warn            io.Writer
	endpoint        string
	// toolClass names a tool's class, model the runtime's model (SetRuntime).
	toolClass func(string) string
	model     string
	shutdown  sync.Once
	errMu     sync.Mutex
	firstErr  error
}

// Enabled says whether the variables turn tracing on: an OTLP endpoint is
// set, OTEL_SDK_DISABLED is not true and OTEL_TRACES_EXPORTER is not none.
func Enabled(lookup func(string) (string, bool)) bool {
	if lookup == nil || disabled(lookup) || strings.EqualFold(get(lookup, "OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return endpoint(lookup) != ""
}

func get(lookup func(string) (string, bool), k string) string {
	v, _ := lookup(k)
	return strings.TrimSpace(v)
}

func disabled(lookup func(string) (string, bool)) bool {
	return strings.EqualFold(get(lookup, "OTEL_SDK_DISABLED"), "true")
}

func endpoint(lookup func(string) (string, bool)) string {
	u, _ := endpointURL(lookup, "http/protobuf")
	return u
}

// endpointURL is where traces go (signalURL).
func endpointURL(lookup func(string) (string, bool), proto string) (url string, fromBase bool) {
	return signalURL(lookup, "TRACES", "/v1/traces", proto)
}

// signalURL is where a signal (TRACES, METRICS) goes, as the
// specification says: its own variable as is, else the base endpoint plus
// its path (http only).
func signalURL(lookup func(string) (string, bool), signal, path, proto string) (url string, fromBase bool) {
	if lookup == nil {
		return "", false
	}
	if v := get(lookup, "OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT"); v != "" {
		return v, false
	}
	v := get(lookup, "OTEL_EXPORTER_OTLP_ENDPOINT")
	if v == "" || proto == "grpc" {
		return v, v != ""
	}
	return strings.TrimRight(v, "/") + path, true
}

// protocol is the OTLP protocol the variables ask for traces.
func protocol(lookup func(string) (string, bool)) string { return protocolOf(lookup, "TRACES") }

// protocolOf is the OTLP protocol for a signal: grpc or http/protobuf
// (the default; http/json is not in Go's exporters and is sent as
// http/protobuf).
func protocolOf(lookup func(string) (string, bool), signal string) string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := get(lookup, k); v != "" {
			if v == "grpc" {
				return "grpc"
			}
			return "http/protobuf"
		}
	}
	return "http/protobuf"
}

// New sets tracing and metrics up, or returns nil when the variables
// leave both off. With tracing on it makes the provider and the W3C
// trace-context propagator the process's globals, so front ends continue
// an incoming traceparent and MCP calls carry one.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	traces := o.Exporter != nil || (o.Lookup != nil && Enabled(o.Lookup))
	metrics := o.MetricExporter != nil || (o.Exporter == nil && metricsOn(o.Lookup))
	if !traces && !metrics {
		return nil, nil
	}
	t := &Telemetry{flush: o.FlushTimeout, warn: o.Warn}
	if t.flush <= 0 {
		t.flush = DefaultFlushTimeout
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "tact"), attribute.String("service.version", buildinfo.Version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK())
	if err != nil {
		// A bad OTEL_RESOURCE_ATTRIBUTES keeps what did parse.
		t.noteErr(fmt.Errorf("resource: %w", err))
	}
	if traces {
		exp := o.Exporter
		if exp == nil {
			proto := protocol(o.Lookup)
			t.endpoint, _ = endpointURL(o.Lookup, proto)
			// The endpoint is the one Lookup gives; the exporters read
			// the other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
			// compression, certificates) themselves. Neither dials here.
			if proto == "grpc" {
				exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(t.endpoint))
			} else {
				exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(t.endpoint))
			}
			if err != nil {
				return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
			}
		}
		// The sampler comes from OTEL_TRACES_SAMPLER(_ARG), read by the SDK.
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.tracer = t.tp.Tracer("github.com/tactcli/tact")
	} else {
		// Metrics only: the sink's spans record nothing.
		t.tracer = tracenoop.NewTracerProvider().Tracer("")
	}
	if metrics {
		if t.meters, t.metricsEndpoint, err = newMeters(ctx, o.Lookup, res, o.MetricExporter); err != nil {
			if t.tp != nil {
				_ = t.tp.Shutdown(ctx)
			}
			return nil, err
		}
	}
	max := o.MaxContentBytes
	if max <= 0 {
		max = 8000
	}
	t.sink = &sink{t: t, runs: map[string]*runSpans{}, capture: capture(o.Lookup), redact: o.Redact, max: max}
	// Export errors during the run (the background exports) are kept for
	// the one warning at the end, not logged line by line.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.noteErr))
	if t.tp != nil {
		otel.SetTracerProvider(t.tp)
		otel.SetTextMapPropagator(runPropagator{propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}), t.sink})
	}
	return t, nil
}

// capture says whether message content goes into span events.
func capture(lookup func(string) (string, bool)) bool {
	if lookup == nil {
		return false
	}
	v, _ := lookup("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

func (t *Telemetry) noteErr(err error) {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	if t.firstErr == nil {
		t.firstErr = err
	}
}

// Shutdown exports what is left within the flush bound and stops. Any
// failure, now or earlier in the process, is one warning line on Warn;
// Shutdown itself never fails a command.
func (t *Telemetry) Shutdown(ctx context.Context) {
	if t == nil {
		return
	}
	t.shutdown.Do(func() { t.shutdownOnce(ctx) })
}

func (t *Telemetry) shutdownOnce(ctx context.Context) {
	t.sink.endAll()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.flush)
	defer cancel()
	// Traces and metrics are sent at once, both within the one bound.
	var wg sync.WaitGroup
	var traceErr, metricErr error
	if t.tp != nil {
		wg.Go(func() { traceErr = flush(ctx, t.tp.ForceFlush, t.tp.Shutdown) })
	}
	if t.meters != nil {
		// Shutdown collects and sends once more by itself: a ForceFlush
		// before it would send the (cumulative) values twice.
		wg.Go(func() { metricErr = flush(ctx, nil, t.meters.mp.Shutdown) })
	}
	wg.Wait()
	t.errMu.Lock()
	early := t.firstErr
	t.errMu.Unlock()
	what, where, err := "traces", t.endpoint, traceErr
	switch {
	case err != nil:
	case early != nil:
		err = early
		if t.tp == nil {
			what, where = "metrics", t.metricsEndpoint
		}
	case metricErr != nil:
		what, where, err = "metrics", t.metricsEndpoint, metricErr
	}
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%w (not done within %s, TACT_OTEL_FLUSH_TIMEOUT)", err, t.flush)
	} else if ctx.Err() != nil {
		err = fmt.Errorf("not done within %s (TACT_OTEL_FLUSH_TIMEOUT)", t.flush)
	}
	if err != nil && t.warn != nil {
		if where != "" {
			where = " to " + where
		}
		line := strings.ReplaceAll(err.Error(), "\n", " ")
		if len(line) > 300 {
			line = line[:300] + "..."
		}
		fmt.Fprintf(t.warn, "tact: warning: telemetry: %s not exported%s: %s\n", what, where, line)
	}
}

// flush sends what a provider holds and stops it; a deadline is no
// error of its own here (the caller says the bound was reached).
func flush(ctx context.Context, force, shutdown func(context.Context) error) error {
	var err error
	if force != nil {
		err = force(ctx)
	}
	if serr := shutdown(ctx); err == nil && serr != nil && !errors.Is(serr, context.DeadlineExceeded) {
		err = serr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// SetRuntime tells the sink the runtime's model (gen_ai.request.model) and
// the tools' classes (read, write, exec): call it before the first run.
func (t *Telemetry) SetRuntime(model string, class func(tool string) string) {
	if t != nil {
		t.sink.mu.Lock()
		t.model, t.toolClass = model, class
		t.sink.mu.Unlock()
	}
}

// Sink is the event sink that makes spans (nil when off).
func (t *Telemetry) Sink() react.Sink {
	if t == nil {
		return nil
	}
	return t.sink
}

// StartBatch starts the span a batch's runs are children of; end ends it.
func (t *Telemetry) StartBatch(ctx context.Context, parallel int) (context.Context, func()) {
	if t == nil {
		return ctx, func() {}
	}
	ctx, span := t.tracer.Start(ctx, "invoke_agent batch", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "tact"),
		attribute.Int("tact.batch.parallel", parallel)))
	return ctx, func() { span.End() }
}

// Inject adds ctx's trace context (traceparent) to h.
func Inject(ctx context.Context, h http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}
