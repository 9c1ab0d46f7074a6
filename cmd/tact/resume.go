package main

import (
	"github.com/spf13/pflag"
	"github.com/tactcli/tact/runrecord"
)

// Going on from the run history (docs/history.md): --resume RUN (run,
// exec) continues a run that did not succeed from its last finished step;
// --continue[=RUN] (run) and chat --resume RUN ask a follow-up with the
// earlier run's conversation as context. The flags are here; the work is
// agent's (ResumeJob, EarlierTurns).

// historyFlags are the flags that name an earlier run.
type historyFlags struct {
	Resume   string // --resume RUN
	Continue string // --continue[=RUN]; runrecord.Newest (the newest run in the workspace) when given bare
	// Changed says whether a flag was given on the command line (a
	// resumed run keeps the recorded settings of the others).
	Changed func(flag string) bool
}

func addResumeFlag(f *pflag.FlagSet, h *historyFlags, what string) {
	defer helpGroup(f, "Run history")()
	f.StringVar(&h.Resume, "resume", "", what)
}

func addContinueFlag(f *pflag.FlagSet, h *historyFlags) {
	defer helpGroup(f, "Run history")()
	f.StringVarP(&h.Continue, "continue", "c", "", "ask a follow-up of the newest run in the workspace (--continue=RUN: of that run), with its conversation as context")
	f.Lookup("continue").NoOptDefVal = runrecord.Newest
}
