package main

import (
	"context"
	"os"
	"sync"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/telemetry"
)

// otel is the process's OpenTelemetry export (docs/telemetry.md), set up
// with the first runtime and flushed when the factory closes. nil: off.
type otel struct {
	mu  sync.Mutex
	red *redact.Redactor
	tel *telemetry.Telemetry
}

// openTelemetry sets tracing up when the OTEL_* variables ask for it. A
// setup failure is a warning: telemetry never stops a run.
func (f *factory) openTelemetry(ctx context.Context) {
	o := &f.otel
	tel, err := telemetry.New(ctx, telemetry.Options{
		Lookup: os.LookupEnv, FlushTimeout: f.Settings.OTelFlushTimeout, Warn: f.IO.ErrOut,
		MaxContentBytes: 4 * f.Settings.MaxObservationTokens, // the observation limit, at ~4 bytes a token
		Redact: func(s string) string {
			o.mu.Lock()
			red := o.red
			o.mu.Unlock()
			if red == nil { // no run yet: nothing to redact with
				return s
			}
			return red.Redact(s)
		},
	})
	if err != nil {
		f.IO.ErrOut.Write([]byte("tact: warning: " + err.Error() + "\n"))
		return
	}
	o.tel = tel
}

// withTelemetry adds the span sink to a runtime's events and learns its
// redactor.
func (f *factory) withTelemetry(opts *agent.Options) {
	if f.otel.tel == nil {
		return
	}
	opts.Events = react.Sinks{opts.Events, f.otel.tel.Sink()}
	then := opts.OnRedactor
	opts.OnRedactor = func(red *redact.Redactor) {
		f.otel.mu.Lock()
		f.otel.red = red
		f.otel.mu.Unlock()
		if then != nil {
			then(red)
		}
	}
}

// telemetryOpened tells the sink the model and the tools' classes.
func (f *factory) telemetryOpened(rt *agent.Runtime) {
	if f.otel.tel == nil || rt == nil {
		return
	}
	model, _ := rt.Info["model"].(string)
	f.otel.tel.SetRuntime(model, func(name string) string {
		if t, ok := rt.Registry.Get(name); ok {
			return string(t.Class())
		}
		return ""
	})
}

// startBatch opens the span of a batch (after the runtime opened).
func (f *factory) startBatch(ctx context.Context, parallel int) (context.Context, func()) {
	return f.otel.tel.StartBatch(ctx, parallel)
}
