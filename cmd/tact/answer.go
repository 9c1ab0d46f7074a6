package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/runrecord"
)

// newAnswerCmd makes tact answer: a paused run (exit 12, needs_input)
// goes on with the answer (agent.AnswerJob has the logic).
func newAnswerCmd(f *factory) *cobra.Command {
	var (
		value string
		in    runrecord.AnswerInput
	)
	s := f.Settings
	cmd := &cobra.Command{
		Use:   "answer RUN [TEXT]",
		Short: "Answer a run that waits for you (exit 12) and let it go on",
		Long: "Answer the question or the approval a paused run waits for (it exited 12,\n" +
			"needs_input). The run goes on from its checkpoint under a new run id\n" +
			"(resumed_from names the paused run), repeating no finished tool run; the\n" +
			"answer is the waiting call's observation.",
		Example: "  tact answer 01JD... \"the blue one\"\n" +
			"  tact answer last --value '{\"port\": 8080}'\n" +
			"  tact answer 01JD... --approve   # or --always (adds the allow rule), --deny",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 2 {
				in.Text, in.HasText = args[1], true
			}
			if c.Flags().Changed("value") {
				in.Value = json.RawMessage(value)
				if !json.Valid(in.Value) {
					return badInputf("--value: not valid JSON")
				}
			}
			return runAnswer(c.Context(), f, args[0], in, c.Flags().Changed)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	fl := cmd.Flags()
	fl.StringVar(&value, "value", "", "the answer as a JSON `VALUE` (a question with a schema)")
	fl.BoolVar(&in.Approve, "approve", false, "approve the waiting call once")
	fl.BoolVar(&in.Always, "always", false, "approve it and add the narrowed allow rule to the policy file")
	fl.BoolVar(&in.Deny, "deny", false, "deny the waiting call; the denial is its observation")
	addWorkspaceFlags(fl, s)
	addOutputFlags(fl, s, "print one JSON result object")
	addModelFlags(fl, s)
	addSafetyFlags(fl, s)
	return cmd
}

func runAnswer(ctx context.Context, f *factory, ref string, in runrecord.AnswerInput, changed func(string) bool) error {
	job, err := agent.AnswerJob(ctx, f.Settings, ref, in, changed)
	if err != nil {
		return err
	}
	return runJob(ctx, f.IO, f.Settings, f.Runtime, "answer", job, agent.Options{})
}
