package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tactcli/tact/llm"
)

// metrics are the server's Prometheus metrics, in a registry of its own
// (no process-wide state: tests run many servers in one process).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
}

func newMetrics(adm *admission, info llm.ModelInfo) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tact_http_requests_total", Help: "HTTP requests by endpoint and status code (499: the client went away).",
	}, []string{"endpoint", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tact_http_request_duration_seconds", Help: "HTTP request latency by endpoint, queueing included.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"endpoint"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tact_tokens_total", Help: "Model tokens: prompt tokens evaluated, prompt tokens reused from the KV cache, tokens generated.",
	}, []string{"kind"})
	for _, k := range []string{"evaluated", "reused", "generated"} {
		m.tokens.WithLabelValues(k) // present from the start, at 0
	}
	m.reg.MustRegister(m.requests, m.latency, m.tokens,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tact_queue_length", Help: "Requests waiting for a free sequence."},
			func() float64 { return float64(adm.queued()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tact_sequences_busy", Help: "Sequences serving a request."},
			func() float64 { return float64(adm.busy()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tact_sequences", Help: "Requests served at once (--parallel)."},
			func() float64 { return float64(adm.total()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tact_model_info", Help: "The backend and model serving requests (always 1).",
			ConstLabels: prometheus.Labels{"backend": info.Backend, "model": info.Model}}, func() float64 { return 1 }),
	)
	return m
}

func (m *metrics) observe(endpoint string, status int, took time.Duration, u llm.Usage) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(endpoint).Observe(took.Seconds())
	m.tokens.WithLabelValues("evaluated").Add(float64(u.PromptTokens))
	m.tokens.WithLabelValues("reused").Add(float64(u.CachedTokens))
	m.tokens.WithLabelValues("generated").Add(float64(u.CompletionTokens))
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
