package main

import (
	"context"
	"errors"
	"sync"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/backends"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/redact"
)

// factory is what the commands share, made on first use (as gh's
// cmdutil.Factory): the settings their flags bind, where each value came
// from, the streams, and the agent runtime. tactMain closes it after the
// command returns.
type factory struct {
	IO       *iostreams
	Settings *config.Settings
	Origin   *config.Origin

	// open opens a runtime (agent.Open); tests count the opens.
	open func(context.Context, *config.Settings, agent.Options) (*agent.Runtime, error)
	// changed reports whether the running command's flag of a setting
	// was given; the root command sets it before any command runs.
	changed func(field string) bool

	mu     sync.Mutex
	opened bool // Runtime was called (rt or err holds its outcome)
	rt     *agent.Runtime
	err    error
	otel   otel // OpenTelemetry (telemetry.go)
}

// newFactory loads the settings (never failing: a bad variable is
// reported only by a command that uses it) and makes stderr redactable
// before anything logs.
func newFactory(streams *iostreams) *factory {
	s, origin := config.Load()
	redactingStderr(streams)
	return &factory{IO: streams, Settings: s, Origin: origin, open: agent.Open}
}

// SettingName names a setting in messages: its flag, and its variable
// when the value came from the environment.
func (f *factory) SettingName(field string) string {
	return f.Origin.Name(field, f.changed != nil && f.changed(field))
}

// Runtime opens the agent runtime on the first call, after downloading the
// model first when --pull asks, with the llama and openai backends, and
// returns the same runtime (or error) on every later call, whose opts are
// then ignored. From the moment the runtime knows the secrets, stderr is
// redacted with them.
func (f *factory) Runtime(ctx context.Context, opts agent.Options) (*agent.Runtime, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opened {
		return f.rt, f.err
	}
	f.opened = true
	if f.err = pullForRun(ctx, f.Settings, f.IO); f.err != nil {
		return nil, f.err
	}
	if opts.SettingName == nil {
		opts.SettingName = f.SettingName
	}
	if opts.Backends == nil {
		opts.Backends = backends.All // llama and openai: the engine builds neither
	}
	then := opts.OnRedactor
	opts.OnRedactor = func(red *redact.Redactor) {
		redactStderr(f.IO, red)
		if then != nil {
			then(red)
		}
	}
	f.openTelemetry(ctx)
	f.withTelemetry(&opts)
	f.rt, f.err = f.open(ctx, f.Settings, opts)
	f.telemetryOpened(f.rt)
	return f.rt, f.err
}

// Close closes the runtime if one was opened (the model, MCP servers and
// trace); later calls of Runtime fail.
func (f *factory) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.opened {
		f.opened, f.err = true, errFactoryClosed
	}
	// The traces go last, within their flush bound: every run has ended.
	defer f.otel.tel.Shutdown(context.Background())
	if f.rt == nil {
		return nil
	}
	err := f.rt.Close()
	f.rt, f.err = nil, errFactoryClosed
	return err
}

var errFactoryClosed = errors.New("internal: the runtime was closed")
