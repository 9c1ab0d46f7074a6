package exec

import (
	"time"
)

// SandboxHelperArg is argv[1] of a process that tact started as its sandbox
// helper (see ServeSandboxHelper). It is not a command users type.
const SandboxHelperArg = "__sandbox-exec"

// helperSpec is what tact tells the helper, as JSON on an inherited pipe
// (fd 3), never through a shell or the environment.
type helperSpec struct {
	Prog      string        `json:"prog"` // absolute path of the program
	Argv      []string      `json:"argv"`
	Dir       string        `json:"dir"`
	Env       []string      `json:"env"` // the command's whole environment
	Landlock  bool          `json:"landlock"`
	ABI       int           `json:"abi"`
	Mode      SandboxMode   `json:"mode"`
	Workspace string        `json:"workspace"`
	TmpDir    string        `json:"tmpdir,omitempty"`
	NoNetwork bool          `json:"no_network"`
	KillGrace time.Duration `json:"kill_grace"`
	Parent    int           `json:"parent"` // tact's pid: the helper gives up if it is gone already
}

// helperReport is the helper's answer on a second pipe (fd 4), written once
// just before it exits.
type helperReport struct {
	Started bool   `json:"started"`
	Status  uint32 `json:"status"`          // the command's wait status
	Error   string `json:"error,omitempty"` // why the command did not start
	Code    int    `json:"code,omitempty"`  // exit code for Error: 126 or 127
	ok      bool   // a report arrived at all
}

// maxHelperSpec bounds what the helper reads: argv and environment are far
// smaller in practice (the kernel's own limit is a few MiB).
const maxHelperSpec = 16 << 20

// helperSlack is how long tact waits, beyond the kill grace, for a helper it
// told to stop before it kills the helper's process group itself.
const helperSlack = time.Second
