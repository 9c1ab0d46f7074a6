// Package otlptest is a loopback OTLP/HTTP receiver for tests: it keeps
// the spans (and the metrics' names) it is sent and the raw bytes, or answers 500, or takes
// the connection and never answers (a blackholed collector).
package otlptest

import (
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name, TraceID, SpanID, ParentID string
	Attrs                           map[string]any
	Events                          []string
	Resource                        map[string]any
	StatusCode                      int32
	Duration                        time.Duration
}

// Collector receives OTLP/HTTP traces on loopback.
type Collector struct {
	URL      string // the endpoint: OTEL_EXPORTER_OTLP_ENDPOINT
	mu       sync.Mutex
	spans    []Span
	raw      []byte
	requests int
	metrics  map[string]int
}

// New starts a collector answering 200 (status 500 answers every request
// with 500).
func New(t testing.TB, status int) *Collector {
	c := &Collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.requests++
		c.raw = append(c.raw, b...)
		switch {
		case status != 0 && status != 200:
		case strings.HasSuffix(r.URL.Path, "/v1/metrics"):
			var req colmetrics.ExportMetricsServiceRequest
			if proto.Unmarshal(b, &req) == nil {
				c.addMetrics(&req)
			}
		default:
			var req coltrace.ExportTraceServiceRequest
			if proto.Unmarshal(b, &req) == nil {
				c.add(&req)
			}
		}
		c.mu.Unlock()
		if status != 0 && status != 200 {
			http.Error(w, "refused", status)
			return
		}
		var out []byte
		if strings.HasSuffix(r.URL.Path, "/v1/metrics") {
			out, _ = proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		} else {
			out, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Blackhole accepts TCP connections and never answers; its URL is the
// endpoint.
func Blackhole(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// Down is the endpoint of a port nothing listens on.
func Down(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func (c *Collector) add(req *coltrace.ExportTraceServiceRequest) {
	for _, rs := range req.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Attrs: attrs(s.Attributes), Resource: res,
					StatusCode: int32(s.GetStatus().GetCode()), Duration: time.Duration(s.EndTimeUnixNano - s.StartTimeUnixNano)}
				for _, e := range s.Events {
					sp.Events = append(sp.Events, e.Name)
				}
				c.spans = append(c.spans, sp)
			}
		}
	}
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		}
	}
	return m
}

func (c *Collector) addMetrics(req *colmetrics.ExportMetricsServiceRequest) {
	if c.metrics == nil {
		c.metrics = map[string]int{}
	}
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				n := 0
				for _, p := range m.GetHistogram().GetDataPoints() {
					n += int(p.GetCount())
				}
				c.metrics[m.Name] += n
			}
		}
	}
}

// Metrics is the histogram metrics received so far: each one's count of
// recorded values, over every export.
func (c *Collector) Metrics() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for k, v := range c.metrics {
		m[k] = v
	}
	return m
}

// Spans is what was received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Raw is every request body received, concatenated (protobuf).
func (c *Collector) Raw() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.raw...)
}

// Requests counts the export requests received.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}
