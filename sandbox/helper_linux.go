package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/tactcli/tact/internal/procsafe"
)

// ServeHelper must run first in main (and in TestMain of tests that
// run run_command). In a process tact started as its sandbox helper it
// supervises the command and exits; anywhere else it enables the helper for
// this program's run_command calls and returns.
//
// Landlock confines the thread that applies it, and Go cannot run code
// between fork and exec, so tact re-executes its own binary in this hidden
// mode. The helper is a child subreaper: it starts the command through a
// first stage (tact once more) that confines itself and execs the command,
// so the command is confined and the helper is not; it waits for it, then ends every process the
// command left behind (they are reparented to it even after setsid or a
// double fork) and reports the command's wait status.
func ServeHelper() {
	switch {
	case len(os.Args) >= 2 && os.Args[1] == HelperArg:
		os.Exit(helperMain())
	case len(os.Args) >= 2 && os.Args[1] == sandboxStage2Arg:
		os.Exit(stage2Main())
	}
	helperEnabled.Store(true)
}

func DetectLandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0 // ENOSYS: not built in; EOPNOTSUPP: disabled at boot
	}
	return v
}

// Start starts the helper for spec with stdin/stdout/stderr files. The
// caller must hold its OS thread locked until the helper has exited: the
// helper's parent-death signal fires when that thread ends.
func Start(spec Spec, files [3]*os.File) (*os.Process, <-chan Report, error) {
	if pidNSRefused.Load() {
		spec.NoPIDNS = true
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, nil, err
	}
	argv0 := os.Args[0]
	if argv0 == "" {
		argv0 = "tact"
	}
	// The helper gets no environment of its own: the command's is in the
	// spec, and /proc/PID/environ of the helper is readable by the command.
	henv := helperEnv()
	proc, err := os.StartProcess("/proc/self/exe", []string{argv0, HelperArg}, &os.ProcAttr{
		Dir:   spec.Dir,
		Env:   henv,
		Files: []*os.File{files[0], files[1], files[2], specR, repW},
		// Its own session: no controlling terminal for commands, and one
		// process group tact can signal as a whole. SIGTERM when tact dies,
		// even by SIGKILL, so the helper ends the command's tree.
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM},
	})
	specR.Close()
	repW.Close()
	if err != nil {
		specW.Close()
		repR.Close()
		return nil, nil, err
	}
	go func() {
		// A goroutine: the spec may be larger than the pipe buffer.
		enc := json.NewEncoder(specW)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(spec)
		specW.Close()
	}()
	report := make(chan Report, 1)
	go func() {
		defer repR.Close()
		var rep Report
		b, _ := io.ReadAll(io.LimitReader(repR, 1<<20))
		if len(b) > 0 && json.Unmarshal(b, &rep) == nil {
			rep.ok = true
			notePIDNS(rep.NoPIDNS)
		}
		report <- rep
	}()
	return proc, report, nil
}

// helperEnv is the environment of the helper and the command's first stage:
// nothing of tact's, since /proc/PID/environ of both is readable by the
// command (its own environment travels in the spec). Never nil: a nil
// os.ProcAttr.Env means "tact's whole environment".
func helperEnv() []string {
	if d, ok := os.LookupEnv("GOCOVERDIR"); ok {
		return []string{"GOCOVERDIR=" + d} // coverage builds print a warning without it
	}
	return []string{}
}

// helperMain is the helper process: read the spec, become a subreaper, start
// the command confined, supervise it and report.
func helperMain() int {
	// fds 3 and 4 came from tact; the command must not inherit them.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	report := os.NewFile(4, "report")
	specFile := os.NewFile(3, "spec")
	var spec Spec
	err := json.NewDecoder(io.LimitReader(specFile, maxHelperSpec)).Decode(&spec)
	specFile.Close()
	if err != nil {
		return helperFail(report, ExitCannotExecute, fmt.Errorf("sandbox helper: reading the command: %w", err))
	}
	if len(spec.Argv) == 0 || spec.Prog == "" {
		return helperFail(report, ExitCannotExecute, errors.New("sandbox helper: empty command"))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return helperFail(report, ExitCannotExecute, fmt.Errorf("sandbox helper: PR_SET_CHILD_SUBREAPER: %w", err))
	}
	if os.Getppid() != spec.Parent {
		// tact died before the parent-death signal was armed; run nothing.
		return helperFail(report, ExitCannotExecute, errors.New("sandbox helper: tact is gone"))
	}
	// Before the command starts, so no stop request is lost.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)

	pid, nsStatus, noPIDNS, err := startConfined(spec)
	if err != nil {
		code := ExitCannotExecute
		if errors.Is(err, fs.ErrNotExist) {
			code = ExitNotFound
		}
		return helperFail(report, code, err)
	}

	cmdDone := make(chan syscall.WaitStatus, 1)
	allGone := make(chan struct{})
	go reapAll(pid, cmdDone, allGone)

	grace := spec.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	var (
		status syscall.WaitStatus
		exited bool
		now    bool // kill at once, no grace (tact's second Ctrl-C)
	)
wait:
	for {
		select {
		case status = <-cmdDone:
			exited = true
			if nsStatus != nil {
				// The init ended: the command's own status, when it sent it.
				if st, ok := <-nsStatus; ok {
					status = syscall.WaitStatus(st.Status)
				}
			}
			break wait
		case st, ok := <-nsStatus:
			if !ok {
				nsStatus = nil // the init died without a word: its wait says how
				continue
			}
			// The command, under its PID namespace's init, is done; the
			// init waits for what it left running, which endTree ends below
			// (alone, it ends at once: nothing to end).
			status, exited = syscall.WaitStatus(st.Status), true
			if st.Alone {
				<-allGone
			}
			break wait
		case s := <-sigs:
			now = s == syscall.SIGUSR1
			break wait
		}
	}
	if exited && spec.Program {
		return lingerForProgram(report, status, grace, sigs, allGone)
	}
	if !exited || hasChildren() {
		endTree(grace, now, sigs, allGone)
	}
	<-allGone
	if !exited {
		status = <-cmdDone
		if nsStatus != nil {
			// The init's own status says nothing of the command's.
			if st, ok := <-nsStatus; ok {
				status = syscall.WaitStatus(st.Status)
			}
		}
	}
	writeReport(report, Report{Started: true, Status: uint32(status), NoPIDNS: noPIDNS})
	return WaitStatusCode(status)
}

// startConfined starts the command. With Landlock it starts tact once more
// as the command's first stage (stage2Main), which confines itself and then
// execs the command: the command inherits the domain and the helper, which
// never entered it, stays out of the command's reach (with signal scoping it
// cannot kill the helper that is to clean up after it). Confining a thread
// of the helper instead left that thread inside the domain until it ended, a
// window in which a quick command could kill the helper through it.
//
// A confined command also gets a PID namespace of its own with its own
// /proc (pidns_linux.go): the first stage is its init, and nsStatus then
// brings the command's wait status. Where the kernel refuses one, the
// command runs as before and noPIDNS says why.
func startConfined(spec Spec) (pid int, nsStatus <-chan nsStatus, noPIDNS string, err error) {
	if !spec.Landlock {
		pid, err := syscall.ForkExec(spec.Prog, spec.Argv, &syscall.ProcAttr{Dir: spec.Dir, Env: spec.Env, Files: []uintptr{0, 1, 2}})
		if err != nil {
			err = fmt.Errorf("start %s: %w", spec.Argv[0], err)
		}
		return pid, nil, "", err
	}
	if !spec.NoPIDNS {
		pid, nsStatus, err = startStage2(spec, true)
		var refused *pidNSError
		if !errors.As(err, &refused) {
			return pid, nsStatus, "", err
		}
		noPIDNS = refused.Error()
	}
	pid, _, err = startStage2(spec, false)
	return pid, nil, noPIDNS, err
}

// startStage2 starts the first stage; with pidns it is the init of a new
// PID namespace (and mount namespace, for its /proc): a *pidNSError then
// says the kernel refused that, and nothing ran.
func startStage2(spec Spec, pidns bool) (int, <-chan nsStatus, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	failR, failW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return 0, nil, err
	}
	files := []uintptr{0, 1, 2, specR.Fd(), failW.Fd()}
	argv := []string{os.Args[0], sandboxStage2Arg}
	var statusR, statusW *os.File
	var sys *syscall.SysProcAttr
	if pidns && spec.TestRefusePIDNS {
		specR.Close()
		specW.Close()
		failR.Close()
		failW.Close()
		return 0, nil, &pidNSError{"the kernel refused a new PID namespace: refused for a test"}
	}
	if pidns {
		if statusR, statusW, err = os.Pipe(); err != nil {
			specR.Close()
			specW.Close()
			failR.Close()
			failW.Close()
			return 0, nil, err
		}
		files = append(files, statusW.Fd())
		argv = append(argv, stage2InitArg)
		sys = pidNSAttr()
	}
	pid, err := syscall.ForkExec("/proc/self/exe", argv, &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   helperEnv(),
		Files: files,
		Sys:   sys,
	})
	specR.Close()
	failW.Close()
	if statusW != nil {
		statusW.Close()
	}
	if err != nil {
		specW.Close()
		failR.Close()
		if statusR != nil {
			statusR.Close()
		}
		if pidns {
			return 0, nil, &pidNSError{fmt.Sprintf("the kernel refused a new PID namespace: %v", err)}
		}
		return 0, nil, fmt.Errorf("sandbox: starting the confined stage: %w", err)
	}
	go func() {
		enc := json.NewEncoder(specW)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(spec)
		specW.Close()
	}()
	// The failure pipe closes without a word when the exec succeeds.
	b, _ := io.ReadAll(io.LimitReader(failR, 1<<16))
	failR.Close()
	if len(b) == 0 {
		var status <-chan nsStatus
		if statusR != nil {
			status = readNSStatus(statusR)
		}
		return pid, status, nil
	}
	if statusR != nil {
		statusR.Close()
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	var f stage2Failure
	if json.Unmarshal(b, &f) != nil {
		f.Error = "sandbox: the confined stage failed"
	}
	switch {
	case f.Namespace:
		return 0, nil, &pidNSError{f.Error}
	case f.NotFound:
		return 0, nil, fmt.Errorf("%s: %w", f.Error, fs.ErrNotExist)
	}
	return 0, nil, errors.New(f.Error)
}

// sandboxStage2Arg is argv[1] of the command's first stage (startConfined).
const sandboxStage2Arg = "__sandbox-stage2"

// stage2Failure is what the first stage reports when it cannot exec.
type stage2Failure struct {
	Error    string `json:"error"`
	NotFound bool   `json:"not_found,omitempty"`
	// Namespace: the PID namespace's /proc could not be set up; nothing
	// ran, and the helper tries again without the namespace.
	Namespace bool `json:"namespace,omitempty"`
}

// stage2Main confines the calling thread and execs the command from it; the
// new program keeps the thread's domain and no_new_privs.
func stage2Main() int {
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	failFile := os.NewFile(4, "failure")
	fail := func(f stage2Failure) int {
		b, _ := json.Marshal(f)
		failFile.Write(b)
		if f.NotFound {
			return ExitNotFound
		}
		return ExitCannotExecute
	}
	var spec Spec
	if err := json.NewDecoder(io.LimitReader(os.NewFile(3, "spec"), maxHelperSpec)).Decode(&spec); err != nil {
		return fail(stage2Failure{Error: "sandbox: reading the command: " + err.Error()})
	}
	init := len(os.Args) > 2 && os.Args[2] == stage2InitArg
	if init {
		syscall.CloseOnExec(5)
		if err := mountOwnProc(); err != nil {
			return fail(stage2Failure{Error: err.Error(), Namespace: true})
		}
	}
	// init sealed this process's descriptors; again here, the last point
	// before the command, in case anything since left one open.
	if err := procsafe.Seal(); err != nil {
		return fail(stage2Failure{Error: "sandbox: " + err.Error()})
	}
	runtime.LockOSThread() // the exec must come from the confined thread
	if err := commandRuleset(spec).restrictThisThread(); err != nil {
		return fail(stage2Failure{Error: "sandbox: " + err.Error()})
	}
	if err := dropPtraceCapability(); err != nil {
		return fail(stage2Failure{Error: "sandbox: " + err.Error()})
	}
	if init {
		return initMain(spec, failFile, fail)
	}
	err := syscall.Exec(spec.Prog, spec.Argv, spec.Env)
	return fail(stage2Failure{Error: fmt.Sprintf("start %s: %v", spec.Argv[0], err), NotFound: errors.Is(err, syscall.ENOENT)})
}

// dropPtraceCapability takes CAP_SYS_PTRACE from the calling thread and
// from whatever it execs (bounding and inheritable sets; no_new_privs is
// set, so no file capability gives it back). tact and its helper are not
// dumpable, so without it even a root command cannot read their memory or
// /proc/PID/environ (API keys, the serve token): Landlock's ptrace rule does
// not stop those reads on this kernel. Ptracing its own children needs no
// capability, so strace and gdb on what the command starts still work.
// Without CAP_SETPCAP (not root) there is nothing to drop.
func dropPtraceCapability() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	const bit = uint32(1) << unix.CAP_SYS_PTRACE // in the first word
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("dropping CAP_SYS_PTRACE: %w", err)
	}
	if (data[0].Effective|data[0].Permitted|data[0].Inheritable)&bit == 0 {
		return nil
	}
	data[0].Effective &^= bit
	data[0].Permitted &^= bit
	data[0].Inheritable &^= bit
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping CAP_SYS_PTRACE: %w", err)
	}
	return nil
}

// reapAll waits for every child: the command (its status goes to cmdDone)
// and whatever is reparented to the helper. allGone closes when no child is
// left. It is the helper's only caller of wait.
func reapAll(cmdPid int, cmdDone chan<- syscall.WaitStatus, allGone chan<- struct{}) {
	defer close(allGone)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: nothing left
		}
		if pid == cmdPid {
			cmdDone <- ws
		}
	}
}

// hasChildren reports whether the helper has a child, live or not yet
// reaped, without reaping it.
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil
}

// endTree ends every descendant: SIGTERM (and SIGCONT, so stopped ones can
// act on it), up to grace for them to go, then SIGKILL until none is left.
// now skips the grace; a SIGUSR1 during it does too.
func endTree(grace time.Duration, now bool, sigs <-chan os.Signal, allGone <-chan struct{}) {
	self := os.Getpid()
	if !now {
		signalDescendants(self, syscall.SIGTERM)
		signalDescendants(self, syscall.SIGCONT)
		timer := time.NewTimer(grace)
		defer timer.Stop()
	wait:
		for {
			select {
			case <-allGone:
				return
			case <-timer.C:
				break wait
			case s := <-sigs:
				if s == syscall.SIGUSR1 {
					break wait
				}
			}
		}
	}
	for {
		signalDescendants(self, syscall.SIGKILL)
		select {
		case <-allGone:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// lingerForProgram is the rest of a user's program's supervision once it
// has exited: its status goes to tact at once (a hook's answer must not
// wait for what it left in the background), the helper's copies of its
// stdin, stdout and stderr are dropped (tact reads them to EOF), and the
// helper stays as long as anything the program started runs, ending it all
// when tact dies (the parent-death SIGTERM) or asks (SIGUSR1).
func lingerForProgram(report *os.File, status syscall.WaitStatus, grace time.Duration, sigs <-chan os.Signal, allGone <-chan struct{}) int {
	writeReport(report, Report{Started: true, Status: uint32(status)})
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := range 3 {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
	select {
	case <-allGone:
	case s := <-sigs:
		endTree(grace, s == syscall.SIGUSR1, sigs, allGone)
		<-allGone
	}
	return WaitStatusCode(status)
}

func helperFail(report *os.File, code int, err error) int {
	if !writeReport(report, Report{Error: err.Error(), Code: code}) {
		// Not started by tact (someone ran the hidden mode by hand).
		fmt.Fprintln(os.Stderr, "tact: "+err.Error())
	}
	return code
}

func writeReport(report *os.File, rep Report) bool {
	b, err := json.Marshal(rep)
	if err != nil {
		return false
	}
	_, err = report.Write(b)
	report.Close()
	return err == nil
}
