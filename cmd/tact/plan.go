package main

import (
	"bytes"
	"context"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/react"
)

// planOptions is tact plan's test seam: everything it needs, parsed.
type planOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	Args    []string // the query's words
}

// newPlanCmd makes tact plan; runF (nil: planRun) runs it, for tests.
func newPlanCmd(f *factory, runF func(context.Context, *planOptions) error) *cobra.Command {
	o := &planOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	cmd := &cobra.Command{
		Use:   "plan [QUERY...]",
		Short: "Plan only; print the plan as JSONL",
		Long:  "Plan the query and print the plan as JSONL: a header row, then one row a step, to\nreview, edit and run later with `tact exec`. --json prints one object instead,\n{\"plan\": [rows], \"token_usage\": {...}}. The query is the joined arguments, or\nstandard input when there are none (or \"-\").",
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
	return cmd
}

func planRun(ctx context.Context, o *planOptions) error {
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
	plan, usage, err := rt.Plan(ctx, agent.Job{Query: query})
	if err != nil {
		return err
	}
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
	// Secrets never reach stdout, plans included.
	_, err = o.IO.Out.Write(rt.Redactor.RedactJSON(buf.Bytes()))
	return err
}
