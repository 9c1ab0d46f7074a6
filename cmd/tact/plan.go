package main

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/history"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/planner"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/runplan"
	"github.com/tactcli/tact/runrecord"
	"github.com/tactcli/tact/tools"
)

// planOptions is tact plan's test seam: everything it needs, parsed.
type planOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	Args    []string // the query's words
	Files   []string // -f: context files, named in the plan's header
	// From is a recorded run (an id, a unique prefix, or "last") to make
	// the plan of instead of planning; AnswerJQ its final answer's $jq.
	From     string
	AnswerJQ string
	// LinkOutputs (--link-outputs) lets --from link commands and written
	// paths to earlier outputs too.
	LinkOutputs bool
	// ParamNames (--param-name) make the plan a template with these
	// parameters.
	ParamNames []string
	DBPath     func() (string, error) // the run history (history.DefaultPath)
}

// newPlanCmd makes tact plan; runF (nil: planRun) runs it, for tests.
func newPlanCmd(f *factory, runF func(context.Context, *planOptions) error) *cobra.Command {
	o := &planOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime, DBPath: history.DefaultPath}
	cmd := &cobra.Command{
		Use:   "plan [QUERY...]",
		Short: "Plan only; print the plan as JSONL",
		Long: "Plan the query and print the plan as JSONL: a header row, then one row a step, to\nreview, edit and run later with `tact exec`. --json prints one object instead,\n{\"plan\": [rows], \"token_usage\": {...}}. The query is the joined arguments, or\nstandard input when there are none (or \"-\").\n\n" +
			"--from RUN makes the plan of a recorded run instead (an id, a unique id prefix, or\n" +
			"\"last\"; see tact log), with no model: its successful tool calls with their arguments,\n" +
			"a data argument that repeats an earlier step's output as a $jq reference to it (never\n" +
			"a command, working directory or written path, unless --link-outputs), and a\n" +
			"final_answer step (its answer --answer-jq's expression, else \"\" for the model to fill\n" +
			"in when the plan runs). Each step left out is named on stderr.",
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			if runF != nil {
				return runF(c.Context(), o)
			}
			return planRun(c.Context(), o)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	// No executor or safety flags: planning runs no tool.
	fl, s := cmd.Flags(), f.Settings
	addWorkspaceFlags(fl, s)
	addOutputFlags(fl, s, "print the plan as one JSON object {plan: [rows], token_usage}")
	addPlannerFlags(fl, s, "tools the planner may use, comma-separated (default: all)")
	addModelFlags(fl, s)
	fl.StringVar(&o.From, "from", "", "make the plan of recorded run `RUN` (id, unique prefix or last) instead of planning; no model")
	fl.StringVar(&o.AnswerJQ, "answer-jq", "", "with --from: the final answer's $jq `EXPR` over the run state (e.g. .steps[-1].output)")
	fl.BoolVar(&o.LinkOutputs, "link-outputs", false, "with --from: also make commands, working directories and written paths references to the earlier output they repeat (the replay then runs what that output says)")
	addFileFlag(fl, &o.Files)
	fl.StringArrayVar(&o.ParamNames, "param-name", nil, "make the plan a template with parameter `NAME`: the planner writes {\"$param\": NAME} where its value belongs, tact exec --param NAME=VALUE gives it; repeatable")
	return cmd
}

func planRun(ctx context.Context, o *planOptions) error {
	if o.From != "" {
		if len(o.ParamNames) > 0 {
			return badInputf("--param-name makes a planned query a template: not with --from")
		}
		return planFromRun(ctx, o)
	}
	if o.AnswerJQ != "" {
		return badInputf("--answer-jq needs --from RUN")
	}
	if o.LinkOutputs {
		return badInputf("--link-outputs needs --from RUN")
	}
	for _, n := range o.ParamNames {
		if !planner.ValidParamName(n) {
			return badInputf("--param-name %q: want letters, digits and _, not starting with a digit", n)
		}
	}
	if stdinTaken(o.Files) && readsStdin(o.Args) {
		return stdinConflict("give the query as arguments")
	}
	files, err := readContextFiles(o.IO, o.Files)
	if err != nil {
		return err
	}
	query, err := readQuery(o.IO, o.Args)
	if err != nil {
		return err
	}
	prog := newProgress(o.IO, o.S.Quiet)
	defer prog.done()
	rt, err := o.Runtime(ctx, agent.Options{Mode: "plan", Events: react.ProgressSink(prog.update)})
	if err != nil {
		return err
	}
	plan, usage, err := rt.Plan(ctx, agent.Job{Query: query, Files: files, ParamNames: o.ParamNames})
	if err != nil {
		return err
	}
	return writePlan(o, plan, usage, rt.Redactor)
}

// writePlan prints plan as JSONL, or with --json as one object with the
// usage; secrets never reach stdout, plans included.
func writePlan(o *planOptions, plan *planner.Plan, usage llm.Usage, red *redact.Redactor) error {
	var buf bytes.Buffer
	if o.S.JSON {
		// One object, like run's --json: the plan's rows and the usage.
		b, err := text.JSON(map[string]any{"plan": plan.Rows(), "token_usage": usage})
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	} else if err := plan.WriteJSONL(&buf); err != nil {
		return err
	}
	_, err := o.IO.Out.Write(red.RedactJSON(buf.Bytes()))
	return err
}

// planFromRun prints the plan of a recorded run (runplan.Build) with no
// model and no runtime: the default tools registry checks the steps whose
// tools it has (an MCP step SERVER.TOOL is kept unchecked: checking it would
// start the server). Each step left out is named on stderr.
func planFromRun(ctx context.Context, o *planOptions) error {
	if len(o.Args) > 0 {
		return badInputf("--from takes no query: the plan's query is the run's")
	}
	if len(o.Files) > 0 {
		return badInputf("--from takes no -f: the plan is the run's")
	}
	book, rec, err := runrecord.OpenRun(ctx, o.DBPath, o.From)
	if err != nil {
		return err
	}
	defer book.Close()
	res, err := book.Result(ctx, rec)
	if err != nil {
		return err
	}
	plan, omitted, err := runplan.Build(rec.Query, res.Trace.Steps, runplan.Options{RunID: rec.ID, AnswerJQ: o.AnswerJQ, Registry: tools.DefaultRegistry(), LinkOutputs: o.LinkOutputs})
	if err != nil {
		return badInputf("--answer-jq: %v", err)
	}
	for _, om := range omitted {
		fmt.Fprintln(o.IO.ErrOut, "tact: "+termLine(om.String()))
	}
	// The record is redacted already; this process's secrets (its
	// environment, --redact) are hidden too, as in every plan printed.
	red, err := redact.NewRedactor(os.Environ(), o.S.Redact)
	if err != nil {
		return badInputf("redaction patterns (TACT_REDACT): %v", err)
	}
	return writePlan(o, plan, llm.Usage{}, red)
}
