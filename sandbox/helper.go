// Package sandbox runs one command confined: tact re-executes itself as a
// helper process that applies a Landlock ruleset to the command, reaps every
// process the command leaves behind and reports its wait status. It also
// tracks the process groups of running commands so an immediate exit can end
// them. It knows nothing of tools: the caller says what to run in a Spec.
package sandbox

import (
	"time"
)

// HelperArg is argv[1] of a process that tact started as its sandbox
// helper (see ServeHelper). It is not a command users type.
const HelperArg = "__sandbox-exec"

// Spec is what tact tells the helper, as JSON on an inherited pipe
// (fd 3), never through a shell or the environment.
type Spec struct {
	Prog      string        `json:"prog"` // absolute path of the program
	Argv      []string      `json:"argv"`
	Dir       string        `json:"dir"`
	Env       []string      `json:"env"` // the command's whole environment
	Landlock  bool          `json:"landlock"`
	ABI       int           `json:"abi"`
	Mode      Mode          `json:"mode"`
	Workspace string        `json:"workspace"`
	TmpDir    string        `json:"tmpdir,omitempty"`
	NoNetwork bool          `json:"no_network"`
	KillGrace time.Duration `json:"kill_grace"`
	Parent    int           `json:"parent"` // tact's pid: the helper gives up if it is gone already
	// Program marks a user's own program (RunProgram: a hook, an
	// approver), run without Landlock: the helper reports its status as
	// soon as it exits and lets go of its output, then stays, as the
	// subreaper of what the program left running in the background, until
	// that has ended, ending it all when tact dies or sends SIGUSR1.
	Program bool `json:"program,omitempty"`
	// NoPIDNS runs a confined command without a PID namespace of its own
	// (the kernel refused one to an earlier command, or a benchmark).
	NoPIDNS bool `json:"no_pidns,omitempty"`
	// TestRefusePIDNS makes the helper act as if the kernel refused the
	// PID namespace (tests of the fallback).
	TestRefusePIDNS bool `json:"test_refuse_pidns,omitempty"`
}

// Report is the helper's answer on a second pipe (fd 4), written once
// just before it exits.
type Report struct {
	Started bool   `json:"started"`
	Status  uint32 `json:"status"`          // the command's wait status
	Error   string `json:"error,omitempty"` // why the command did not start
	Code    int    `json:"code,omitempty"`  // exit code for Error: 126 or 127
	// NoPIDNS says why a confined command ran without a PID namespace of
	// its own ("": it had one, or was not confined).
	NoPIDNS string `json:"no_pidns,omitempty"`
	ok      bool   // a report arrived at all
}

// maxHelperSpec bounds what the helper reads: argv and environment are far
// smaller in practice (the kernel's own limit is a few MiB).
const maxHelperSpec = 16 << 20

// HelperSlack is how long tact waits, beyond the kill grace, for a helper it
// told to stop before it kills the helper's process group itself.
const HelperSlack = time.Second
