package exec

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// SandboxMode is run_command's kernel sandbox (see docs/safety.md, "Sandbox").
type SandboxMode string

const (
	// SandboxWorkspaceWrite lets commands write only inside the workspace
	// and a private temporary directory; they read and execute anywhere.
	// The zero value of Env.Sandbox means this mode.
	SandboxWorkspaceWrite SandboxMode = "workspace-write"
	// SandboxReadOnly lets commands write nowhere but /dev/null, /dev/zero
	// and /dev/full.
	SandboxReadOnly SandboxMode = "read-only"
	// SandboxOff applies no Landlock ruleset. Commands still run under the
	// helper that ends every process they leave behind.
	SandboxOff SandboxMode = "off"
)

// ParseSandboxMode checks a --sandbox value.
func ParseSandboxMode(s string) (SandboxMode, error) {
	switch m := SandboxMode(s); m {
	case SandboxWorkspaceWrite, SandboxReadOnly, SandboxOff:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want workspace-write, read-only or off)", s)
}

func (e *Env) sandboxMode() SandboxMode {
	if e.Sandbox == "" {
		return SandboxWorkspaceWrite
	}
	return e.Sandbox
}

// landlockABI reports the kernel's Landlock ABI version, 0 where Landlock is
// missing or disabled (asked once). A variable so tests can simulate older
// kernels.
var landlockABI = sync.OnceValue(detectLandlockABI)

// helperEnabled is set by ServeSandboxHelper: this program can re-execute
// itself as the sandbox helper.
var helperEnabled atomic.Bool

// errNoHelper is what run_command says in a program that never called
// ServeSandboxHelper: re-executing it would run its main (a test binary would
// run its tests again), so a sandboxed command cannot start.
var errNoHelper = errors.New("the sandbox helper is not enabled in this program (call exec.ServeSandboxHelper first in main or TestMain), so no command can run under --sandbox; set Env.Sandbox to \"off\" to run commands without it")

// Minimum Landlock ABI versions for what the sandbox uses.
const (
	abiNet    = 4 // TCP bind/connect rules
	abiScoped = 6 // signal and abstract unix socket scoping
)

// sandboxPlan is how one command will run: what was asked, and what this
// kernel lets tact enforce of it.
type sandboxPlan struct {
	asked     SandboxMode
	landlock  bool // a Landlock ruleset is applied
	noNetwork bool // TCP rules are part of it
	abi       int
	helper    bool // run under the helper (else started directly, the library fallback)
	tmpDir    bool // a private TMPDIR is created
}

// sandboxPlan decides how the next command runs. Where the kernel cannot
// enforce what was asked, read-only refuses (the error) and workspace-write
// runs with a warning (once per process per kind).
func (e *Env) sandboxPlan() (sandboxPlan, error) {
	p := sandboxPlan{asked: e.sandboxMode(), abi: landlockABI(), helper: helperEnabled.Load()}
	if _, err := ParseSandboxMode(string(p.asked)); err != nil {
		return p, fmt.Errorf("Env.Sandbox: %w", err)
	}
	p.tmpDir = p.asked != SandboxReadOnly
	if p.asked == SandboxOff {
		if e.NoNetwork {
			sandboxWarn("--no-network is not enforced with --sandbox off: run_command may use the network")
		}
		return p, nil
	}
	if !p.helper {
		return p, errNoHelper
	}
	if p.abi == 0 {
		if p.asked == SandboxReadOnly {
			return p, errors.New("--sandbox read-only needs Landlock, which this kernel does not offer; the command was not run")
		}
		sandboxWarn("Landlock is not available on this kernel: run_command runs without the kernel sandbox (writes are not confined to the workspace)")
		return p, nil
	}
	p.landlock = true
	if e.NoNetwork {
		if p.abi < abiNet {
			if p.asked == SandboxReadOnly {
				return p, fmt.Errorf("--no-network needs Landlock ABI %d, this kernel has %d; the command was not run", abiNet, p.abi)
			}
			sandboxWarn(fmt.Sprintf("--no-network is not enforced: Landlock ABI %d cannot restrict TCP (needs %d)", p.abi, abiNet))
		} else {
			p.noNetwork = true
		}
	}
	return p, nil
}

// SandboxInfo is the sandbox as it applies to run_command in this process,
// for traces and prompts.
type SandboxInfo struct {
	Mode        SandboxMode `json:"mode"`
	NoNetwork   bool        `json:"no_network"`
	Enforced    bool        `json:"enforced"` // a Landlock ruleset confines the commands
	LandlockABI int         `json:"landlock_abi"`
}

// SandboxInfo reports what run_command's sandbox is and whether the kernel
// enforces it. It has no side effects (no warning is printed).
func (e *Env) SandboxInfo() SandboxInfo {
	abi := landlockABI()
	mode := e.sandboxMode()
	return SandboxInfo{Mode: mode, NoNetwork: e.NoNetwork, Enforced: mode != SandboxOff && abi > 0, LandlockABI: abi}
}

// String is the sandbox in a few words: "workspace-write",
// "read-only, no network", "workspace-write (not enforced: no Landlock)".
func (s SandboxInfo) String() string {
	var b strings.Builder
	b.WriteString(string(s.Mode))
	if s.NoNetwork {
		b.WriteString(", no network")
		if s.Mode != SandboxOff && s.LandlockABI > 0 && s.LandlockABI < abiNet {
			b.WriteString(" (not enforced: Landlock ABI too old)")
		}
	}
	if s.Mode != SandboxOff && !s.Enforced {
		b.WriteString(" (not enforced: no Landlock)")
	}
	return b.String()
}

// sandboxWarned remembers the warnings already given, so a run says each
// once however many commands it runs.
var sandboxWarned sync.Map

// warnSandbox prints a warning; a variable so tests can capture it.
var warnSandbox = func(msg string) { slog.Warn(msg) }

func sandboxWarn(msg string) {
	if _, dup := sandboxWarned.LoadOrStore(msg, true); !dup {
		warnSandbox("run_command: " + msg)
	}
}
