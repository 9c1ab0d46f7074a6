package sandbox

import (
	"errors"
	"fmt"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Landlock access rights, grouped the way the sandbox grants them.
const (
	// llRead is reading and executing: granted on "/" in every mode.
	llRead = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	// llFileRights are the rights that apply to a file that is not a
	// directory; the kernel refuses a rule for a file with any other.
	llFileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
	// llDevice is what the harmless sink and source devices need: read,
	// write, open with O_TRUNC (a shell's `>/dev/null`) and ioctl.
	llDevice = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// writableDevices may be written in every mode: writing them changes nothing.
var writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// ioctlDevices are readable anyway (under "/"); they also get ioctl, which
// the ruleset otherwise denies on every device.
var ioctlDevices = []string{"/dev/random", "/dev/urandom"}

// handledFS is every filesystem right this ABI can restrict, up to ABI 5.
// Restricting connects to pathname unix sockets (ABI 9) is part of
// --no-network.
func handledFS(abi int, noNetwork bool) uint64 {
	if abi < 1 {
		return 0
	}
	m := uint64(ll.AccessFSMakeSym<<1 - 1) // ABI 1: execute .. make_sym
	if abi >= 2 {
		m |= ll.AccessFSRefer
	}
	if abi >= 3 {
		m |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		m |= ll.AccessFSIoctlDev
	}
	if abi >= 9 && noNetwork {
		m |= ll.AccessFSResolveUnix
	}
	return m
}

// handledNet is TCP bind and connect (ABI 4), and UDP (ABI 10), with
// --no-network. No port is allowed.
func handledNet(abi int, noNetwork bool) uint64 {
	if !noNetwork || abi < ABINet {
		return 0
	}
	m := uint64(ll.AccessNetBindTCP | ll.AccessNetConnectTCP)
	if abi >= 10 {
		m |= ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP
	}
	return m
}

// scopedIPC keeps signals (always) and connections to abstract unix
// sockets (with --no-network) inside the sandbox (ABI 6).
func scopedIPC(abi int, noNetwork bool) uint64 {
	if abi < ABIScoped {
		return 0
	}
	m := uint64(ll.ScopeSignal)
	if noNetwork {
		m |= ll.ScopeAbstractUnixSocket
	}
	return m
}

type pathRule struct {
	path   string
	access uint64
}

type landlockRuleset struct {
	attr  ll.RulesetAttr
	rules []pathRule
}

// commandRuleset is the ruleset for one command: read and execute anywhere;
// write the workspace and the private TMPDIR (workspace-write only); write
// /dev/null, /dev/zero and /dev/full.
func commandRuleset(spec Spec) landlockRuleset {
	fs := handledFS(spec.ABI, spec.NoNetwork)
	rs := landlockRuleset{attr: ll.RulesetAttr{
		HandledAccessFS:  fs,
		HandledAccessNet: handledNet(spec.ABI, spec.NoNetwork),
		Scoped:           scopedIPC(spec.ABI, spec.NoNetwork),
	}}
	rs.rules = append(rs.rules, pathRule{"/", llRead})
	if spec.Mode == WorkspaceWrite {
		rs.rules = append(rs.rules, pathRule{spec.Workspace, fs})
		if spec.TmpDir != "" {
			rs.rules = append(rs.rules, pathRule{spec.TmpDir, fs})
		}
	}
	for _, d := range writableDevices {
		rs.rules = append(rs.rules, pathRule{d, llDevice})
	}
	for _, d := range ioctlDevices {
		rs.rules = append(rs.rules, pathRule{d, ll.AccessFSIoctlDev})
	}
	return rs
}

// restrictThisThread applies the ruleset to the calling OS thread only (and
// sets no_new_privs on it, which Landlock requires): whatever the thread
// starts afterwards inherits the domain.
func (rs landlockRuleset) restrictThisThread() error {
	fd, err := ll.LandlockCreateRuleset(&rs.attr, 0)
	if err != nil {
		return fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	defer syscall.Close(fd)
	for _, r := range rs.rules {
		if err := addPathRule(fd, r, rs.attr.HandledAccessFS); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

func addPathRule(rulesetFD int, r pathRule, handled uint64) error {
	fd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) && r.path != "/" && isDevice(r.path) {
			return nil // a container without /dev/full, say
		}
		return fmt.Errorf("landlock rule for %s: %w", r.path, err)
	}
	defer unix.Close(fd)
	access := r.access & handled
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule for %s: %w", r.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= llFileRights
	}
	if access == 0 {
		return nil
	}
	if err := ll.LandlockAddPathBeneathRule(rulesetFD, &ll.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0); err != nil {
		return fmt.Errorf("landlock rule for %s: %w", r.path, err)
	}
	return nil
}

func isDevice(path string) bool {
	for _, d := range append(append([]string(nil), writableDevices...), ioctlDevices...) {
		if d == path {
			return true
		}
	}
	return false
}
