package tools

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/tactcli/tact/sandbox"
)

func (e *Env) sandboxMode() sandbox.Mode {
	if e.Sandbox == "" {
		return sandbox.WorkspaceWrite
	}
	return e.Sandbox
}

// landlockABI reports the kernel's Landlock ABI version, 0 where Landlock is
// missing or disabled (asked once). A variable so tests can simulate older
// kernels.
var landlockABI = sync.OnceValue(sandbox.DetectLandlockABI)

// helperEnabled reports whether commands can start under the sandbox helper;
// a variable so tests can simulate a program that never called
// sandbox.ServeHelper.
var helperEnabled = sandbox.HelperEnabled

// errNoHelper is what run_command says in a program that never called
// ServeHelper: re-executing it would run its main (a test binary would
// run its tests again), so a sandboxed command cannot start.
var errNoHelper = errors.New("the sandbox helper is not enabled in this program (call sandbox.ServeHelper first in main or TestMain), so no command can run under --sandbox; set Env.Sandbox to \"off\" to run commands without it")

// sandboxPlan is how one command will run: what was asked, and what this
// kernel lets tact enforce of it.
type sandboxPlan struct {
	asked     sandbox.Mode
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
	p := sandboxPlan{asked: e.sandboxMode(), abi: landlockABI(), helper: helperEnabled()}
	if _, err := sandbox.ParseMode(string(p.asked)); err != nil {
		return p, fmt.Errorf("Env.Sandbox: %w", err)
	}
	p.tmpDir = p.asked != sandbox.ReadOnly
	if p.asked == sandbox.Off {
		if e.NoNetwork {
			sandboxWarn("--no-network is not enforced with --sandbox off: run_command may use the network")
		}
		return p, nil
	}
	if !p.helper {
		return p, errNoHelper
	}
	if p.abi == 0 {
		if p.asked == sandbox.ReadOnly {
			return p, errors.New("--sandbox read-only needs Landlock, which this kernel does not offer; the command was not run")
		}
		sandboxWarn("Landlock is not available on this kernel: run_command runs without the kernel sandbox (writes are not confined to the workspace)")
		return p, nil
	}
	p.landlock = true
	if e.NoNetwork {
		if p.abi < sandbox.ABINet {
			if p.asked == sandbox.ReadOnly {
				return p, fmt.Errorf("--no-network needs Landlock ABI %d, this kernel has %d; the command was not run", sandbox.ABINet, p.abi)
			}
			sandboxWarn(fmt.Sprintf("--no-network is not enforced: Landlock ABI %d cannot restrict TCP (needs %d)", p.abi, sandbox.ABINet))
		} else {
			p.noNetwork = true
		}
	}
	return p, nil
}

// SandboxInfo is the sandbox as it applies to run_command in this process,
// for traces and prompts.
type SandboxInfo struct {
	Mode        sandbox.Mode `json:"mode"`
	NoNetwork   bool         `json:"no_network"`
	Enforced    bool         `json:"enforced"` // a Landlock ruleset confines the commands
	LandlockABI int          `json:"landlock_abi"`
}

// SandboxInfo reports what run_command's sandbox is and whether the kernel
// enforces it. It has no side effects (no warning is printed).
func (e *Env) SandboxInfo() SandboxInfo {
	abi := landlockABI()
	mode := e.sandboxMode()
	return SandboxInfo{Mode: mode, NoNetwork: e.NoNetwork, Enforced: mode != sandbox.Off && abi > 0, LandlockABI: abi}
}

// String is the sandbox in a few words: "workspace-write",
// "read-only, no network", "workspace-write (not enforced: no Landlock)".
func (s SandboxInfo) String() string {
	var b strings.Builder
	b.WriteString(string(s.Mode))
	if s.NoNetwork {
		b.WriteString(", no network")
		if s.Mode != sandbox.Off && s.LandlockABI > 0 && s.LandlockABI < sandbox.ABINet {
			b.WriteString(" (not enforced: Landlock ABI too old)")
		}
	}
	if s.Mode != sandbox.Off && !s.Enforced {
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
