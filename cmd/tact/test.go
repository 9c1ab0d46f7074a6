package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/backends"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/atomicfile"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/suiterun"
	"github.com/tactcli/tact/testsuite"
)

// exitTestsFailed is tact test run's exit code when the suite ran and some
// case did not pass (each says why in the table).
const exitTestsFailed = 13

// testRunOptions is tact test run's test seam: everything it needs, parsed.
type testRunOptions struct {
	IO    *iostreams
	S     *config.Settings
	Open  suiterun.OpenFunc
	Suite string
	// Live: a backend flag was given, so the cases run on that model
	// instead of replaying their cassettes.
	Live   bool
	Trials int
	JUnit  string
}

// newTestCmd makes tact test and its subcommands.
func newTestCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Agent behaviour as a test suite: record runs as cases, replay or run them, report",
		Long: "A suite is a directory of JSONL case files (docs/testing.md): each case a query or\n" +
			"a saved plan, a workspace fixture, the run's flags and assertions over its --json\n" +
			"document. tact test record makes a case of a recorded run; tact test run replays\n" +
			"the cases offline, or runs them live on a model k times each.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	cmd.AddCommand(newTestRunCmd(f, nil), newTestRecordCmd(f, nil))
	return cmd
}

// newTestRunCmd makes tact test run; runF (nil: testRun) runs it, for tests.
func newTestRunCmd(f *factory, runF func(context.Context, *testRunOptions) error) *cobra.Command {
	o := &testRunOptions{IO: f.IO, S: f.Settings, Open: f.suiteOpener()}
	cmd := &cobra.Command{
		Use:   "run SUITE",
		Short: "Replay a suite's cases offline, or run them live on a model; report",
		Long: "Run every case of SUITE (a directory of *.jsonl case files, or one case file), each\n" +
			"trial in a fresh copy of its fixture. Without a backend flag each case replays its\n" +
			"cassette with no model: tool calls run for real, and a prompt that differs from the\n" +
			"recorded one is a cassette mismatch. With --model (or --backend, --script,\n" +
			"--base-url) the cases run live, --trials times each, --parallel at once on one\n" +
			"loaded model, seeds varied. A table goes to stderr, --json prints the report on\n" +
			"stdout, --junit writes JUnit XML. Exit 0 when every case passed, 13 when some did\n" +
			"not, 2 when the suite cannot run, 130 when interrupted (after the report).",
		Example: "  tact test run suite/\n" +
			"  tact test run suite/ --model qwen3.5-4b --trials 5 --parallel 4 --junit report.xml",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Suite = args[0]
			for _, name := range []string{"model", "backend", "script", "base-url", "api-model"} {
				o.Live = o.Live || c.Flags().Changed(name)
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return testRun(c.Context(), o)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	fl, s := cmd.Flags(), f.Settings
	addModelFlags(fl, s)
	addSafetyFlags(fl, s)
	addHistoryFlags(fl, s)
	fl.DurationVar(&s.Timeout, "timeout", s.Timeout, "bound every trial's run (exit 7 in it), unless its case sets its own timeout")
	fl.BoolVar(&s.JSON, "json", s.JSON, "print the report as one JSON object on stdout")
	fl.IntVar(&s.Parallel, "parallel", s.Parallel, "trials run at once, each in its own sequence of the model's context (1 to 64)")
	fl.IntVar(&o.Trials, "trials", 1, "runs of each case (live; a replay runs each case once)")
	fl.StringVar(&o.JUnit, "junit", "", "write the report as JUnit XML to `FILE`")
	return cmd
}

// suiteOpener opens a runtime for a group of cases: as Runtime does, with
// the llama and openai backends, but for the settings given and without
// keeping it (a suite may open several).
func (f *factory) suiteOpener() suiterun.OpenFunc {
	return func(ctx context.Context, s *config.Settings, opts agent.Options) (*agent.Runtime, error) {
		opts.SettingName = f.SettingName
		opts.Backends = backends.All
		opts.OnRedactor = func(red *redact.Redactor) { redactStderr(f.IO, red) }
		return f.open(ctx, s, opts)
	}
}

func testRun(ctx context.Context, o *testRunOptions) error {
	if o.Trials < 1 {
		return badInputf("--trials %d: want 1 or more", o.Trials)
	}
	if !o.Live && o.Trials > 1 {
		return badInputf("--trials %d: a replay gives the same replies every time; give --model (or another backend) to run the cases live", o.Trials)
	}
	if o.JUnit != "" {
		if err := checkOutputFile(o.JUnit); err != nil {
			// The check names -o, tact run's flag: name this one.
			return badInputf("--junit %s", strings.TrimPrefix(err.Error(), "-o "))
		}
	}
	suite, err := testsuite.Load(o.Suite)
	if err != nil {
		return badInput(err)
	}
	if o.Live {
		if err := pullForRun(ctx, o.S, o.IO); err != nil {
			return err
		}
	}
	start := time.Now()
	// A status line on a terminal: the trials done and failed so far.
	prog := newProgress(o.IO, o.S.Quiet)
	done, failed := 0, 0
	results, err := suiterun.Run(ctx, suite, suiterun.Options{Settings: o.S, Open: o.Open, Live: o.Live, Trials: o.Trials, Parallel: o.S.Parallel,
		OnTrial: func(t testsuite.TrialResult) {
			done++
			if !t.Passed() {
				failed++
			}
			prog.update(fmt.Sprintf("test: %d trials done, %d failed", done, failed))
		}})
	prog.done()
	if err != nil {
		return err
	}
	rep := testsuite.NewReport(suite, o.Trials, results)
	rep.Started, rep.Duration = start, time.Since(start)
	rep.Mode = "replay"
	if o.Live {
		rep.Mode, rep.Model = "live", o.S.Model
		if rep.Model == "" {
			rep.Model = o.S.APIModel
		}
	}
	if o.JUnit != "" {
		var b bytes.Buffer
		if err := rep.WriteJUnit(&b); err != nil {
			return err
		}
		if err := atomicfile.Write(o.JUnit, b.Bytes()); err != nil {
			return &exitError{Code: exitOutput, Err: fmt.Errorf("--junit %s: %w", o.JUnit, err)}
		}
	}
	if !o.S.Quiet || !rep.OK() {
		if err := rep.WriteTable(o.IO.ErrOut); err != nil {
			return err
		}
	}
	if o.S.JSON {
		if err := rep.WriteJSON(o.IO.Out); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return agent.ContextError(ctx, "interrupted; the report holds the trials that ran")
	}
	if !rep.OK() {
		return &exitError{Code: exitTestsFailed, Err: errSilent}
	}
	return nil
}
