package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/config"
)

// runOptions is tact run's test seam: everything it needs, parsed.
type runOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	Args    []string // the query's words
	Files   []string // -f: context files ("-": standard input)
	History historyFlags
}

// newRunCmd makes tact run; runF (nil: runRun) runs it, for tests.
func newRunCmd(f *factory, runF func(context.Context, *runOptions) error) *cobra.Command {
	o := &runOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	cmd := &cobra.Command{
		Use: "run [QUERY...]",
		Example: "  tact run \"why is the disk full?\"\n" +
			"  tact run --resume last            # go on with the newest run, cut by a timeout or a crash\n" +
			"  tact run -c \"and the biggest file?\"  # a follow-up of the newest run here\n" +
			"  git diff | tact run -f - \"review this change\"",
		Short: "Plan, then execute; print the final answer",
		Long:  "Plan the query, then execute the plan with the ReAct executor and print only the\nfinal answer on stdout. The query is the joined arguments, or standard input when\nthere are none (or \"-\").",
		RunE: func(c *cobra.Command, args []string) error {
			o.Args = args
			o.History.Changed = c.Flags().Changed
			if runF != nil {
				return runF(c.Context(), o)
			}
			return runRun(c.Context(), o)
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
	addFileFlag(fl, &o.Files)
	addResumeFlag(fl, &o.History, "go on with `RUN` (an id, a unique prefix, or last: the newest run in this workspace), which did not succeed, from its last finished step")
	addContinueFlag(fl, &o.History)
	return cmd
}

func runRun(ctx context.Context, o *runOptions) error {
	if o.History.Resume != "" {
		if len(o.Args) > 0 || o.History.Continue != "" || len(o.Files) > 0 {
			return badInputf("--resume goes on with the run's own query and context files: give no query, no -f and no --continue")
		}
		job, err := agent.ResumeJob(ctx, o.S, o.History.Resume, o.History.Changed)
		if err != nil {
			return err
		}
		return runJob(ctx, o.IO, o.S, o.Runtime, "run", job, agent.Options{})
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
	job := agent.Job{Query: query, Files: files}
	if o.History.Continue != "" {
		turns, err := agent.EarlierTurns(ctx, o.History.Continue, o.S.Workspace)
		if err != nil {
			return err
		}
		job.Conversation = agent.ResumeConversation(turns)
	}
	return runJob(ctx, o.IO, o.S, o.Runtime, "run", job, agent.Options{})
}
