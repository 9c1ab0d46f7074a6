package telemetry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/tactcli/tact/llm"
)

// The GenAI client metrics (semantic conventions): tokens per model call
// by type, and each call's duration. Their buckets are the conventions'.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// metricsOn says whether the variables turn metrics on: an endpoint for
// them is set, OTEL_SDK_DISABLED is not true and OTEL_METRICS_EXPORTER is
// not none.
func metricsOn(lookup func(string) (string, bool)) bool {
	if lookup == nil || disabled(lookup) || strings.EqualFold(get(lookup, "OTEL_METRICS_EXPORTER"), "none") {
		return false
	}
	u, _ := signalURL(lookup, "METRICS", "/v1/metrics", protocolOf(lookup, "METRICS"))
	return u != ""
}

// meters are the instruments; nil records nothing (metrics off).
type meters struct {
	mp       *sdkmetric.MeterProvider
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
}

// newMeters sets the OTLP metric export up; the exporter reads the other
// OTEL_EXPORTER_OTLP_(METRICS_)* variables, the periodic reader
// OTEL_METRIC_EXPORT_INTERVAL. Nothing dials here.
func newMeters(ctx context.Context, lookup func(string) (string, bool), res *resource.Resource, exp sdkmetric.Exporter) (*meters, string, error) {
	var url string
	if exp == nil {
		proto := protocolOf(lookup, "METRICS")
		url, _ = signalURL(lookup, "METRICS", "/v1/metrics", proto)
		var err error
		if proto == "grpc" {
			exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(url))
		} else {
			exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(url))
		}
		if err != nil {
			return nil, url, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
		}
	}
	m := &meters{mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))}
	meter := m.mp.Meter("github.com/tactcli/tact")
	var err error
	if m.tokens, err = meter.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used"), metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, url, err
	}
	if m.duration, err = meter.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration"), metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, url, err
	}
	return m, url, nil
}

// record adds one model call (a chat, the planner's) to the metrics: its
// duration, and its tokens when known. Input tokens are the whole prompt,
// as on the spans.
func (t *Telemetry) record(r *runSpans, op string, start, end time.Time, u *llm.Usage) {
	m := t.meters
	if m == nil || start.IsZero() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", op), attribute.String("gen_ai.provider.name", r.provider)}
	if r.model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", r.model))
	}
	attrs = attrs[:len(attrs):len(attrs)] // each append below its own
	ctx := context.Background()
	m.duration.Record(ctx, max(end.Sub(start), 0).Seconds(), metric.WithAttributes(attrs...))
	if u == nil {
		return
	}
	m.tokens.Record(ctx, int64(u.PromptTokens+u.CachedTokens), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
	m.tokens.Record(ctx, int64(u.CompletionTokens), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
}
