package sandbox

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// programProcAttr starts a user's program in a session of its own (no
// controlling terminal; its own process group, killed whole) that dies
// with tact.
func programProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// programKillGrace is what the helper gives a program's leftovers between
// SIGTERM and SIGKILL when tact dies.
const programKillGrace = DefaultKillGrace

// startProgramHelper starts the program under the sandbox helper (Spec.
// Program: no Landlock), which ends everything the program started when
// tact dies, whatever kills it. The helper is started from a goroutine
// locked to its thread until the helper exits, since the parent-death
// signal fires when the thread that started it ends; it may outlive
// RunProgram while a quiet background child of the program runs.
func startProgramHelper(p Program, stdio [3]*os.File) (*startedProgram, error) {
	env := p.Env
	if env == nil {
		env = os.Environ()
	}
	spec := Spec{Prog: programShell, Argv: []string{"sh", "-c", p.Command}, Dir: p.Dir, Env: env,
		KillGrace: programKillGrace, Parent: os.Getpid(), Program: true}
	type started struct {
		proc   *os.Process
		report <-chan Report
		err    error
	}
	startc := make(chan started, 1)
	helperGone := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		proc, report, err := Start(spec, stdio)
		startc <- started{proc, report, err}
		if err != nil {
			return
		}
		// SIGUSR1 from KillRunning ends the tree at once, also after
		// RunProgram returned.
		untrack := TrackGroup(proc.Pid, true)
		_, _ = proc.Wait()
		untrack()
		close(helperGone)
	}()
	st := <-startc
	if st.err != nil {
		return nil, st.err
	}
	var rep Report
	exited := make(chan struct{})
	go func() {
		rep = <-st.report // the helper's first word, or nothing when it died first
		close(exited)
	}()
	pid := st.proc.Pid
	return &startedProgram{
		exited: exited,
		kill: func() {
			// The helper SIGKILLs every descendant at once and exits;
			// should it not, its group goes.
			go ProcessGroup(pid).Stop(Ending{Signal: syscall.SIGUSR1, Leader: true, Grace: HelperSlack, Gone: helperGone})
		},
		status: func() (syscall.WaitStatus, bool, error) {
			switch {
			case rep.Error != "":
				return 0, false, errors.New(rep.Error)
			case rep.Started:
				return syscall.WaitStatus(rep.Status), true, nil
			}
			return 0, false, nil
		},
	}, nil
}
