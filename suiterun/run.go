package suiterun

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/testsuite"
)

// OpenFunc opens a runtime for settings s (agent.Open, with the model
// backends a front end builds in).
type OpenFunc func(ctx context.Context, s *config.Settings, opts agent.Options) (*agent.Runtime, error)

// Options say how a suite runs.
type Options struct {
	// Settings are the command's (tact test run's flags and TACT_*
	// variables): every case's flags apply on a copy of them.
	Settings *config.Settings
	Open     OpenFunc
	// Live runs the cases on the model the settings name; otherwise each
	// case replays its cassette, offline, with no model.
	Live bool
	// Trials is how many times each case runs (at least 1); Parallel how
	// many trials run at once (at least 1), on one runtime.
	Trials, Parallel int
	// OnTrial, when set, is called with each trial's result as it ends
	// (one call at a time).
	OnTrial func(testsuite.TrialResult)
}

// Run runs every case of suite, opts.Trials times each, and returns the
// trials' results in suite order. A case that cannot run (a broken line,
// a missing or foreign cassette) is one result with Error set (a case
// with Err, or one to skip, none: the report says why), and the
// others still run. The error is for a suite that cannot run at all: no
// runtime opens.
func Run(ctx context.Context, suite *testsuite.Suite, opts Options) ([]testsuite.TrialResult, error) {
	trials := max(opts.Trials, 1)
	var (
		mu  sync.Mutex
		out []testsuite.TrialResult
	)
	add := func(r testsuite.TrialResult) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, r)
		if opts.OnTrial != nil {
			opts.OnTrial(r)
		}
	}
	order := map[string]int{}
	var groups []*group
	byKey := map[string]*group{}
	for i, c := range suite.Cases {
		order[c.Name] = i
		if c.Err != nil || c.Skip != "" {
			continue // the report says why (testsuite.NewReport)
		}
		p, err := prepare(c, opts.Live)
		if err != nil {
			add(testsuite.TrialResult{Case: c.Name, Trial: 1, ExitCode: 2, Error: err.Error()})
			continue
		}
		s := runtimeSettings(opts.Settings, c.Flags)
		key := runtimeKey(s)
		g := byKey[key]
		if g == nil {
			g = &group{s: s}
			byKey[key] = g
			groups = append(groups, g)
		}
		for t := 1; t <= trials; t++ {
			g.items = append(g.items, item{c: p, trial: t})
		}
	}
	// A runtime that opens for no group (the model is not there, the
	// server's flags are bad) is a suite that cannot run, however many
	// groups its cases' flags make; one that fails for some groups only is
	// those cases' error.
	var firstErr error
	opened := 0
	for _, g := range groups {
		if ctx.Err() != nil {
			for _, it := range g.items {
				add(testsuite.TrialResult{Case: it.c.Name, Trial: it.trial, ExitCode: react.ReasonCancelled.ExitCode(), Error: errInterrupted})
			}
			continue
		}
		if err := g.run(ctx, opts, add); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			for _, it := range g.items {
				if it.trial == 1 {
					add(testsuite.TrialResult{Case: it.c.Name, Trial: 1, ExitCode: agent.ExitCode(err), Error: err.Error()})
				}
			}
		} else {
			opened++
		}
	}
	if opened == 0 && firstErr != nil && ctx.Err() == nil {
		return nil, firstErr
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if order[a.Case] != order[b.Case] {
			return order[a.Case] < order[b.Case]
		}
		return a.Trial < b.Trial
	})
	return out, nil
}

// prepared is a case ready to run: its cassette read and its plan loaded.
type prepared struct {
	*testsuite.Case
	cassette *Cassette // nil when live
	plan     []byte
}

// prepare checks that c can run: it has no error, its cassette (replay)
// is one of this case, its plan reads.
func prepare(c *testsuite.Case, live bool) (*prepared, error) {
	p := &prepared{Case: c}
	switch {
	case live:
	case c.Cassette == "":
		// A saved plan may need no model: its trials run with an empty
		// cassette, and a model call is a mismatch that says so.
		p.cassette = &Cassette{Header: Header{Case: c.Name}}
	default:
		k, err := ReadCassette(c.Cassette)
		if err != nil {
			return nil, fmt.Errorf("%s: case %q: %w", c.Where(), c.Name, err)
		}
		if k.Case != c.Name {
			return nil, fmt.Errorf("%s: case %q: cassette %s is the recording of %s, not of this case", c.Where(), c.Name, c.Cassette, k.describe())
		}
		p.cassette = k
	}
	if c.Plan != "" {
		data, err := filekind.ReadFile(filekind.Spec{What: "plan", Max: 16 << 20}, c.Plan)
		if err != nil {
			return nil, fmt.Errorf("%s: case %q: %w", c.Where(), c.Name, err)
		}
		p.plan = data
	}
	if c.Fixture != "" {
		if st, err := os.Stat(c.Fixture); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s: case %q: fixture %s is not a directory", c.Where(), c.Name, c.Fixture)
		}
	}
	return p, nil
}

type item struct {
	c     *prepared
	trial int
}

// group is the trials that share a runtime: cases whose runtime flags
// (policy, hooks, approvals, sandbox) are the same.
type group struct {
	s     *config.Settings
	items []item
}

func (g *group) run(ctx context.Context, opts Options, add func(testsuite.TrialResult)) error {
	ro := agent.Options{Mode: trialCommand, History: true}
	if !opts.Live {
		ro.Backend = Replay{}
	}
	rt, err := opts.Open(ctx, g.s, ro)
	if err != nil {
		return err
	}
	defer rt.Close()
	// A script backend hands out its replies in order, once: shared by
	// k trials, the first would take them all and the others find none.
	// Each trial gets the script from its start, as each gets a fresh
	// fixture (opening one reads a file; no model is loaded).
	perTrial := opts.Live && llm.InfoOf(rt.Backend).Backend == llm.BackendScript
	work := make(chan item)
	var wg sync.WaitGroup
	// --parallel, at most what the backend serves at once (as tact batch).
	for range min(max(opts.Parallel, 1), rt.Concurrency()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if !perTrial {
					add(trial(ctx, rt, g.s, it, opts.Live))
					continue
				}
				own, err := opts.Open(ctx, g.s, ro)
				if err != nil {
					add(testsuite.TrialResult{Case: it.c.Name, Trial: it.trial, ExitCode: agent.ExitCode(err), Error: err.Error()})
					continue
				}
				add(trial(ctx, own, g.s, it, opts.Live))
				own.Close()
			}
		}()
	}
	sent := 0
	for _, it := range g.items {
		select {
		case work <- it:
			sent++
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	// The trials an interrupt kept from running say so in the report.
	for _, it := range g.items[sent:] {
		add(testsuite.TrialResult{Case: it.c.Name, Trial: it.trial, ExitCode: react.ReasonCancelled.ExitCode(), Error: errInterrupted})
	}
	return nil
}

// errInterrupted is a trial's error when the suite was stopped (Ctrl-C)
// before it ran or while it ran: a run cut short is not judged, so an
// interrupted trial never counts as passed.
const errInterrupted = "interrupted: the suite was stopped before this trial ended"

// trial runs one trial of a case in a fresh copy of its fixture, removed
// after its checks.
func trial(ctx context.Context, rt *agent.Runtime, base *config.Settings, it item, live bool) (r testsuite.TrialResult) {
	c := it.c
	r = testsuite.TrialResult{Case: c.Name, Trial: it.trial}
	start := time.Now()
	defer func() { r.Duration = time.Since(start) }()
	ws, remove, err := freshWorkspace(c.Fixture)
	if err != nil {
		r.ExitCode, r.Error = 2, fmt.Sprintf("%s: case %q: %v", c.Where(), c.Name, err)
		return r
	}
	defer remove()
	s := jobSettings(base, c.Flags, it.trial, live)
	job := agent.Job{Query: c.Query, Settings: s, Workspace: ws, Params: c.Params}
	if c.plan != nil {
		job.PlanName, job.PlanData = c.Plan, c.plan
	}
	if job.Files, err = contextFiles(c.Flags.Files); err != nil {
		r.ExitCode, r.Error = 2, fmt.Sprintf("%s: case %q: %v", c.Where(), c.Name, err)
		return r
	}
	var p *player
	if c.cassette != nil {
		p = &player{c: c.cassette}
		ctx = withPlayer(ctx, p)
	}
	res, err := rt.Run(ctx, job)
	if p != nil {
		r.Mismatches = p.result()
	}
	if err != nil {
		r.ExitCode, r.Error = agent.ExitCode(err), fmt.Sprintf("case %q: the run could not run: %v", c.Name, err)
		r.Reason = string(agent.TerminationOf(err).Reason)
		return r
	}
	if ctx.Err() != nil {
		r.RunID, r.Reason, r.ExitCode, r.Error = res.RunID, string(res.TerminationReason), react.ReasonCancelled.ExitCode(), errInterrupted
		return r
	}
	r.RunID, r.Reason, r.ExitCode = res.RunID, string(res.TerminationReason), res.ExitCode()
	r.Usage = testsuite.Usage{Prompt: int64(res.TokenUsage.PromptTokens), Completion: int64(res.TokenUsage.CompletionTokens), Cached: int64(res.TokenUsage.CachedTokens)}
	doc, err := text.JSON(res)
	if err != nil {
		r.Error = fmt.Sprintf("case %q: the result document: %v", c.Name, err)
		return r
	}
	doc = rt.Redactor.RedactJSON(doc)
	r.Failures = c.Check(ctx, doc, ws)
	if len(r.Failures) > 0 && res.TerminationReason == react.ReasonTimeout {
		// Why the checks failed, in one line: the case hung.
		r.Failures = append([]testsuite.Failure{{Check: "timeout", Message: fmt.Sprintf("the run hit its --timeout of %s and was stopped", s.Timeout)}}, r.Failures...)
	}
	return r
}
