package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// A confined command sees only its own processes: its first stage starts
// in a new PID namespace (and mount namespace), mounts a /proc of that
// namespace over /proc, and, confined, starts the command as its child and
// reaps for it as init. So `cat /proc/[0-9]*/environ` reads the command's
// own processes, never the parent shell's or cron's, which hold the same
// secrets as tact. An unprivileged user gets the namespaces inside a user
// namespace mapping only its own uid and gid (files of other owners then
// show as nobody/nogroup; access is judged as before); root needs none, so
// its commands keep their capabilities. Where the kernel refuses (user
// namespaces disabled, a container's /proc with masked paths), the command
// runs as before and tact logs why once (-v).

// stage2InitArg is argv[2] of a first stage that is its namespace's init.
const stage2InitArg = "init"

// pidNSError: the kernel refused the PID namespace; nothing ran.
type pidNSError struct{ why string }

func (e *pidNSError) Error() string { return e.why }

// pidNSAttr is the first stage's clone flags: new PID and mount namespaces,
// inside a new user namespace unless tact runs as root.
func pidNSAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	if os.Geteuid() != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// mountOwnProc makes the mount namespace's mounts private (nothing done
// here reaches the system's) and mounts this PID namespace's /proc.
func mountOwnProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("the kernel refused a private mount namespace: %v", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("the kernel refused a /proc of the command's own PID namespace: %v", err)
	}
	return nil
}

// nsStatus is what the init sends the helper on fd 5 when the command
// exits.
type nsStatus struct {
	Status uint32 `json:"status"`
	// Alone: nothing else ran in the namespace then, so the init ends at
	// once and there is nothing for the helper to end.
	Alone bool `json:"alone,omitempty"`
}

// initMain is the namespace's init, confined already: it starts the
// command from this (confined) thread, closes the failure pipe (the
// command started), reaps every process of the namespace, sends the
// command's wait status on fd 5 when it exits, and ends when nothing is
// left (the kernel then kills nothing: all are gone). It ignores the
// helper's SIGTERM (the helper ends the command's processes one by one,
// with their grace; the init's death would SIGKILL them all at once) by
// handling it: a handled signal is reset by exec, an ignored one is not.
func initMain(spec Spec, failFile *os.File, fail func(stage2Failure) int) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGPIPE)
	go func() {
		for range sigs {
		}
	}()
	pid, err := syscall.ForkExec(spec.Prog, spec.Argv, &syscall.ProcAttr{Dir: spec.Dir, Env: spec.Env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		return fail(stage2Failure{Error: fmt.Sprintf("start %s: %v", spec.Argv[0], err), NotFound: errors.Is(err, syscall.ENOENT)})
	}
	failFile.Close()
	statusFile := os.NewFile(5, "status")
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0 // ECHILD: the namespace is empty
		}
		if got == pid {
			var none syscall.WaitStatus
			_, err := syscall.Wait4(-1, &none, syscall.WNOHANG, nil)
			b, _ := json.Marshal(nsStatus{Status: uint32(ws), Alone: errors.Is(err, syscall.ECHILD)})
			_, _ = statusFile.Write(b)
			statusFile.Close()
		}
	}
}

// readNSStatus brings the command's wait status from the init's fd 5, then
// closes; it closes without one when the init died without sending it (the
// helper's wait for the init says how it ended).
func readNSStatus(r *os.File) <-chan nsStatus {
	ch := make(chan nsStatus, 1)
	go func() {
		defer close(ch)
		defer r.Close()
		b, _ := io.ReadAll(io.LimitReader(r, 1<<10))
		var st nsStatus
		if len(b) > 0 && json.Unmarshal(b, &st) == nil {
			ch <- st
		}
	}()
	return ch
}

// pidNSRefused is set once a helper reported that the kernel refused a
// command's PID namespace: later commands do not try again.
var pidNSRefused atomic.Bool

var pidNSLogOnce sync.Once

// notePIDNS records a helper's report that its command ran without a PID
// namespace, and says so once at debug level (tact -v).
func notePIDNS(why string) {
	if why == "" {
		return
	}
	pidNSRefused.Store(true)
	pidNSLogOnce.Do(func() {
		slog.Debug("run_command: no PID namespace of its own; commands can see every process of the user and their environments", "why", why)
	})
}
