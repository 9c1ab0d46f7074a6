package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/react"
)

// exitBatchFailed is tact batch's exit code when it ran every query it read
// and at least one did not succeed (each result line says why).
const exitBatchFailed = 9

// batchOptions is tact batch's test seam: everything it needs, parsed.
type batchOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	Args    []string // the queries file, or none or "-" for standard input
	Ordered bool
	Plan    string // --plan: a saved plan every line runs with its params
	// StartBatch opens the span the batch's runs are children of
	// (telemetry; a no-op when off).
	StartBatch func(ctx context.Context, parallel int) (context.Context, func())
}

// newBatchCmd makes tact batch; runF (nil: batchRun) runs it, for tests.
func newBatchCmd(f *factory, runF func(context.Context, *batchOptions) error) *cobra.Command {
	o := &batchOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime, StartBatch: f.startBatch}
	cmd := &cobra.Command{
		Use:   "batch [QUERIES|-]",
		Short: "Run many queries on one loaded model; one JSON result a line",
		Long: "Run every query of a file, or of standard input when none is given (or \"-\"): a\n" +
			"JSONL object {\"id\": ..., \"query\": ...} (a missing id is the line number) or a\n" +
			"plain text line each. Up to --parallel queries run at once on one runtime (the\n" +
			"model is loaded once); every run is unattended. Each result is written when it\n" +
			"finishes (--ordered: in input order) as the `run --json` object plus id, line and\n" +
			"exit_code. Exit 0 when every query succeeded, 9 when some did not, 2 when the\n" +
			"batch could not start, 130 or 143 on a signal.\n\n" +
			"--plan PLAN.jsonl runs that saved plan for every line instead of planning each query:\n" +
			"a line's \"params\" object gives the plan's parameters their values (as tact exec\n" +
			"--param), its \"query\", if any, replaces the plan's.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			if runF != nil {
				return runF(c.Context(), o)
			}
			return batchRun(c.Context(), o)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	// run's flags but --json (results are always JSON) and --query.
	fl, s := cmd.Flags(), f.Settings
	addWorkspaceFlags(fl, s)
	addOutputFlags(fl, s, "")
	addPlannerFlags(fl, s, "tools the runs may use, comma-separated (default: each plan's tools)")
	addModelFlags(fl, s)
	addExecutorFlags(fl, s)
	addAnswerFlags(fl, s)
	addHistoryFlags(fl, s)
	addSafetyFlags(fl, s)
	fl.IntVar(&s.Parallel, "parallel", s.Parallel, "queries run at once, each in its own sequence of the model's context (1 to 64)")
	fl.BoolVar(&o.Ordered, "ordered", false, "write the results in input order instead of as they finish")
	fl.StringVar(&o.Plan, "plan", "", "run the saved plan `PLAN.jsonl` for every line, a line's \"params\" its parameters' values (tact exec --param)")
	return cmd
}

func batchRun(ctx context.Context, o *batchOptions) error {
	s := o.S
	name := "-"
	var in io.Reader = o.IO.In
	if len(o.Args) == 1 && o.Args[0] != "-" {
		name = o.Args[0]
		// A regular file, read as a stream (lines are bounded, the file
		// is not); standard input is the way to pipe queries in.
		f, err := filekind.Open(filekind.Spec{What: "queries"}, name)
		if err != nil {
			return badInput(err)
		}
		defer f.Close()
		in = f
	} else if len(o.Args) == 0 && stdinIsTerminal(o.IO) {
		return badInputf("no queries: pass a file, or pipe them in (use - to type them on the terminal)")
	}
	var planData []byte
	if o.Plan != "" {
		if o.Plan == "-" {
			return badInputf("--plan: give a file (standard input holds the lines)")
		}
		var err error
		if _, planData, err = readPlanInput(o.IO, []string{o.Plan}); err != nil {
			return err
		}
	}
	prog := newProgress(o.IO, s.Quiet)
	defer prog.done()
	// Every run is unattended: no prompter, whatever the terminal.
	rt, err := o.Runtime(ctx, agent.Options{Mode: "batch", History: true})
	if err != nil {
		return err
	}

	start := time.Now()
	// The batch's runs are siblings under one span (telemetry on).
	if o.StartBatch != nil {
		var endSpan func()
		ctx, endSpan = o.StartBatch(ctx, s.Parallel)
		defer endSpan()
	}
	// --parallel, at most what the backend serves at once (RunBatch).
	counts, err := rt.RunBatch(ctx, in, agent.BatchOptions{Name: name, Parallel: s.Parallel, Ordered: o.Ordered, PlanName: o.Plan, PlanData: planData,
		Progress: func(c agent.BatchCounts) {
			perMin := float64(c.Done) / max(time.Since(start).Minutes(), 1e-9)
			prog.update(fmt.Sprintf("batch: %d done, %d running, %d failed, %.1f queries/min", c.Done, c.Running, c.Failed, perMin))
		}},
		func(b agent.BatchResult) error {
			line, err := batchLine(b, rt)
			if err != nil {
				return err
			}
			// One write a result, as soon as it is known: when stdout
			// fails (a full disk, a closed pipe) no partial line is left
			// and the batch stops (exit 10).
			_, err = o.IO.Out.Write(line)
			return err
		})
	prog.done()
	if err != nil {
		if oerr := outputError(o.IO.Out); oerr != nil {
			return oerr
		}
		return badInputf("%v", err)
	}
	if ctx.Err() != nil {
		return agent.ContextError(ctx, "interrupted; the results of the queries that ran are on stdout")
	}
	if counts.Failed > 0 {
		return &exitError{Code: exitBatchFailed, Err: errSilent}
	}
	return nil
}

// batchLine is one result line: the run --json object plus id, line and
// exit_code; a line that did not run has success false, termination_reason
// "error" and the message.
func batchLine(b agent.BatchResult, rt *agent.Runtime) ([]byte, error) {
	head := map[string]any{"id": b.Query.ID, "line": b.Query.Line}
	var body any
	if b.Result != nil {
		head["exit_code"] = b.Result.ExitCode()
		body = b.Result
	} else {
		head["exit_code"] = agent.ExitCode(b.Err)
		body = map[string]any{"success": false, "termination_reason": react.ReasonError, "message": b.Err.Error()}
	}
	// id, line and exit_code first, then the run --json object's fields
	// in their usual order.
	h, err := text.JSON(head)
	if err != nil {
		return nil, err
	}
	r, err := text.JSON(body)
	if err != nil {
		return nil, err
	}
	line := append(append(h[:len(h)-1], ','), r[1:]...)
	return append(rt.Redactor.RedactJSON(line), '\n'), nil
}
