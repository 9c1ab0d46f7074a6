package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/buildinfo"
	"github.com/tactcli/tact/llm/llamaruntime"
)

// newRootCmd makes tact's commands on f. A bad variable in f's settings is
// reported below, only by a command that uses it and only when no flag
// replaced it.
func newRootCmd(f *factory) (*cobra.Command, error) {
	s, origin, streams := f.Settings, f.Origin, f.IO
	root := &cobra.Command{
		Use:           "tact",
		Short:         "Plan and run shell agents on local llama.cpp models",
		Long:          "tact turns a query into a JSONL plan and carries it out with a ReAct executor,\nusing an allow-list of tools inside a workspace. See docs/cli.md for the scripting contract.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(flagError(err)) })
	root.PersistentFlags().BoolVarP(&s.Verbose, "verbose", "v", s.Verbose, "debug logs on stderr, including llama.cpp's")
	root.PersistentFlags().BoolVar(&s.Quiet, "quiet", s.Quiet, "only errors on stderr")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		f.changed = func(field string) bool {
			fl := cmd.Flag(config.Flag(field))
			return fl != nil && fl.Changed
		}
		if err := origin.Check(s, settingsUsedBy(cmd), f.changed); err != nil {
			return badInput(err)
		}
		level := slog.LevelWarn
		switch {
		case s.Verbose:
			level = slog.LevelDebug
		case s.Quiet:
			level = slog.LevelError
		}
		slog.SetDefault(newLogger(streams.ErrOut, level))
		return nil
	}
	root.AddCommand(
		newRunCmd(f, nil),
		newPlanCmd(f, nil),
		newExecCmd(f, nil),
		newAnswerCmd(f),
		newBatchCmd(f, nil),
		newChatCmd(f, nil),
		newServeCmd(f, nil),
		newToolsCmd(f, nil),
		newMCPCmd(f, nil),
		newModelsCmd(f),
		newRuntimeCmd(f, nil),
		newVersionCmd(f, nil),
		newLogCmd(f, nil, nil),
		newTestCmd(f),
	)
	// A command with subcommands (tact, mcp, models, models cache, log)
	// given a word that is none of them fails with a usage error naming
	// the closest ones, at every level; a group alone shows its help. A
	// root that runs would show "tact [flags]" in its usage: the template
	// leaves that line to subcommands, so the help reads as before.
	markUnknownCommands(root)
	// Flags show by purpose (helpgroups.go).
	root.SetUsageTemplate(groupedUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", `{{if and .Runnable .HasParent (not (index .Annotations "tact/group"))}}`, 1)))
	// --version prints what tact version prints (cobra's own --version
	// would print only the first line).
	var showVersion bool
	root.Flags().BoolVar(&showVersion, "version", false, "print the version, as tact version does")
	root.RunE = func(c *cobra.Command, _ []string) error {
		if showVersion {
			return versionRun(c.Context(), &versionOptions{IO: f.IO, S: f.Settings})
		}
		return c.Help()
	}
	markUsageErrors(root)
	markPrintsOnly(root)
	return root, nil
}

// annPrints marks the commands that only print what they look up: when
// standard output's reader goes away (tact log | head -1) they exit 0 in
// silence; the others exit exitOutput in silence (docs/cli.md#exit-codes).
const annPrints = "tact/prints"

// printsOnlyCommands are the commands annPrints marks.
var printsOnlyCommands = []string{"tact", "tact version", "tact tools", "tact mcp", "tact mcp list", "tact runtime",
	"tact models", "tact models list", "tact models show", "tact models catalog",
	"tact models cache", "tact models cache list", "tact log", "tact log show", "tact runtime"}

func markPrintsOnly(root *cobra.Command) {
	for _, path := range printsOnlyCommands {
		c, rest, err := root.Find(strings.Fields(path)[1:])
		if err != nil || len(rest) > 0 || c.CommandPath() != path {
			panic("printsOnlyCommands: no command " + path) // a renamed command; tests catch it
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[annPrints] = "yes"
	}
}

// markUnknownCommands makes every command with subcommands refuse a word
// that is none of them (unknownCommand), keeping its own check for the
// rest; one that does nothing itself shows its help when given nothing.
func markUnknownCommands(c *cobra.Command) {
	if c.HasSubCommands() {
		own := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args)
			}
			if own != nil {
				return own(cmd, args)
			}
			return nil
		}
		if !c.Runnable() {
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[annGroup] = "yes"
		}
	}
	for _, sub := range c.Commands() {
		markUnknownCommands(sub)
	}
}

// annGroup marks a command that only groups others (mcp, models): it runs
// only to check its arguments, so its usage reads as cobra's for a command
// that does not run (no "tact mcp [flags]" line).
const annGroup = "tact/group"

// unknownCommand is the argument check of a command with subcommands: one
// line, worded as cobra's own, with the closest subcommands (cobra's
// suggestions: a prefix, or at most two edits away).
func unknownCommand(c *cobra.Command, args []string) error {
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default
	}
	if names := c.SuggestionsFor(args[0]); len(names) > 0 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = strconv.Quote(n)
		}
		msg += " (did you mean " + strings.Join(quoted, " or ") + "?)"
	} else {
		msg += fmt.Sprintf(" (%s --help lists them)", c.CommandPath())
	}
	return errors.New(msg)
}

// versionOptions is tact version's test seam.
type versionOptions struct {
	IO *iostreams
	S  *config.Settings
}

// newVersionCmd makes tact version; runF (nil: versionRun) runs it, for tests.
func newVersionCmd(f *factory, runF func(context.Context, *versionOptions) error) *cobra.Command {
	o := &versionOptions{IO: f.IO, S: f.Settings}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, and the llama.cpp release of the runtime in use",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return versionRun(c.Context(), o)
		},
	}
}

// versionRun prints tact's version, then the llama.cpp release of the
// runtime the llama backend would use (or why there is none).
func versionRun(_ context.Context, o *versionOptions) error {
	if _, err := fmt.Fprintf(o.IO.Out, "tact %s\n", buildinfo.Version); err != nil {
		return err
	}
	r, err := llamaruntime.Locate(llamaruntime.LocateOptions{Dir: o.S.RuntimeDir})
	if err != nil {
		_, err = fmt.Fprintf(o.IO.Out, "llama.cpp: none usable (%s)\n", err)
		return err
	}
	_, err = fmt.Fprintf(o.IO.Out, "llama.cpp %s (runtime %s, %s)\n", r.Manifest.LlamaCpp, filepath.Base(r.Dir), r.Why)
	return err
}

// annSettings marks run, plan, exec and batch: their flags are bound to
// config.Settings (flags.go), so a setting is used exactly when its flag
// exists.
const annSettings = "tact/settings"

// settingsUsedBy says which settings (config field names) cmd uses, so a bad
// variable breaks only the commands that read it: run, plan and exec use the
// settings their flags bind (plus the logging level and GPU library
// directory); models commands use the models directory and logging level;
// version, tools and help use none.
func settingsUsedBy(cmd *cobra.Command) func(field string) bool {
	switch {
	case cmd.Annotations[annSettings] != "":
		return func(field string) bool {
			name := config.Flag(field)
			return name == "" || cmd.Flag(name) != nil
		}
	case cmd.HasParent() && (cmd.Name() == "models" || cmd.Parent().Name() == "models"):
		return func(field string) bool {
			return field == "ModelsDir" || field == "HFEndpoint" || field == "Verbose" || field == "Quiet"
		}
	case cmd.HasParent() && (cmd.Name() == "runtime" || cmd.Parent().Name() == "runtime"):
		return func(field string) bool {
			return field == "RuntimeDir" || field == "RuntimeURL" || field == "Verbose" || field == "Quiet"
		}
	case cmd.Name() == "version":
		return func(field string) bool { return field == "RuntimeDir" }
	case cmd.Flag("mcp-config") != nil: // tools, mcp list
		return func(field string) bool { return field == "MCPConfig" || field == "Verbose" || field == "Quiet" }
	}
	return func(string) bool { return false }
}

// flagError turns pflag's "invalid argument "x" for "--n" flag:
// strconv.ParseInt: parsing "x": invalid syntax" into "--n x: not an integer".
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	problem := "invalid value"
	switch ive.GetFlag().Value.Type() {
	case "int":
		problem = "not an integer"
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			problem = "integer out of range"
		}
	case "float32", "float64":
		problem = "not a number"
	case "duration":
		problem = "not a duration (want a number with a unit, e.g. 90s, 5m or 1h30m)"
	case "bool":
		problem = "not a boolean (want true or false)"
	case "size":
		problem = "not a size (want bytes, or a number with a unit: 300MB, 512MiB, 1.5GiB)"
	}
	return fmt.Errorf("--%s %s: %s", ive.GetFlag().Name, strconv.Quote(ive.GetValue()), problem)
}

// markUsageErrors makes cobra's argument errors (wrong count, unknown
// subcommand) usage errors, exit 2, like flag errors.
func markUsageErrors(c *cobra.Command) {
	// A command without Args takes any arguments (run, plan) or is cobra's
	// (help, completion).
	if validate := c.Args; validate != nil {
		c.Args = func(cmd *cobra.Command, args []string) error { return badInput(validate(cmd, args)) }
	}
	for _, sub := range c.Commands() {
		markUsageErrors(sub)
	}
}
