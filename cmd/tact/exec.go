package main

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/llm"
)

// execOptions is tact exec's test seam: everything it needs, parsed.
type execOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	Args    []string // the plan file, or none or "-" for standard input
	Files   []string // -f: context files ("-": standard input)
	History historyFlags
	Params  *paramFlag // --param
}

// newExecCmd makes tact exec; runF (nil: execRun) runs it, for tests.
func newExecCmd(f *factory, runF func(context.Context, *execOptions) error) *cobra.Command {
	o := &execOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	cmd := &cobra.Command{
		Use:   "exec [PLAN.jsonl|-]",
		Short: "Execute a JSONL plan from a file or standard input",
		Long:  "Execute a JSONL plan from a file, or from standard input when none is given (or\n\"-\"). The whole plan is checked first: a bad row (unknown tool or field, a\nmissing required argument, a $jq expression that does not compile, a plan\nparameter without a value or one the plan does not have) exits 2 with FILE:LINE\nbefore any step runs. --param NAME=VALUE gives a parameter its value.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			o.History.Changed = c.Flags().Changed
			if runF != nil {
				return runF(c.Context(), o)
			}
			return execRun(c.Context(), o)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	fl, s := cmd.Flags(), f.Settings
	addWorkspaceFlags(fl, s)
	addOutputFlags(fl, s, "print one JSON result object")
	addPlannerFlags(fl, s, "tools the run may use, comma-separated (default: the plan's tools)")
	addModelFlags(fl, s)
	addQueryFlag(fl, s)
	addExecutorFlags(fl, s)
	addAnswerFlags(fl, s)
	addHistoryFlags(fl, s)
	addSafetyFlags(fl, s)
	addOutputFileFlag(fl, s)
	o.Params = addParamFlag(fl)
	addFileFlag(fl, &o.Files)
	addResumeFlag(fl, &o.History, "go on with `RUN` (an id, a unique prefix, or last: the newest run in this workspace), which did not succeed, from its last finished step; no PLAN")
	return cmd
}

func execRun(ctx context.Context, o *execOptions) error {
	if o.History.Resume != "" {
		if len(o.Args) > 0 {
			return badInputf("--resume goes on with the run's own plan: give no PLAN")
		}
		if len(o.Files) > 0 {
			return badInputf("--resume goes on with the run's own context files: give no -f")
		}
		if o.History.Changed("param") {
			return badInputf("--resume goes on with the run's own plan, its parameters bound: give no --param")
		}
		job, err := agent.ResumeJob(ctx, o.S, o.History.Resume, o.History.Changed)
		if err != nil {
			return err
		}
		return runJob(ctx, o.IO, o.S, o.Runtime, "exec", job, agent.Options{GivenModelOnly: true})
	}
	params, err := planParams(o.S, o.Params)
	if err != nil {
		return err
	}
	if stdinTaken(o.Files) && readsStdin(o.Args) {
		return stdinConflict("give the plan as a file")
	}
	files, err := readContextFiles(o.IO, o.Files)
	if err != nil {
		return err
	}
	name, data, err := readPlanInput(o.IO, o.Args)
	if err != nil {
		return err
	}
	// The plan names the MCP servers to start: only those start. It may
	// name its model too; no other is used (agent.Options.GivenModelOnly).
	job := agent.Job{Query: o.S.Query, PlanName: name, PlanData: data, Params: params, Files: files}
	return runJob(ctx, o.IO, o.S, o.Runtime, "exec", job,
		agent.Options{MCPServers: planServers(data), GivenModelOnly: true, PlanModel: planModel(data)})
}

// planModel is the llama model a plan's header names (its planner's
// "model" when its "backend" is llama), or "": a saved plan runs with
// that model, or one given, or none.
func planModel(data []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimLeft(data, " \t\r\n"), []byte("\n"))
	var h struct {
		Type    string `json:"type"`
		Planner struct {
			Backend string `json:"backend"`
			Model   string `json:"model"`
		} `json:"planner"`
	}
	if json.Unmarshal(line, &h) != nil || h.Type != "plan" || h.Planner.Backend != llm.BackendLlama {
		return ""
	}
	return h.Planner.Model
}
