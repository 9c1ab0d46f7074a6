package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/tactcli/tact/internal/procsafe"
)

const (
	// DefaultProgramOutput is what RunProgram keeps of each of a program's
	// stdout and stderr when Program.MaxOutput is 0.
	DefaultProgramOutput = 64 << 10
	// programWaitDelay is how long a program's pipes may stay open after it
	// exited or was killed (a child it left behind holding stdout): then
	// they are closed and what is left of its process group is killed.
	programWaitDelay = 500 * time.Millisecond
	// programShell runs each program's command line, as Claude Code runs
	// its hooks.
	programShell = "/bin/sh"
)

// Program is a program of the user's own (a hook, an approval command): it
// runs outside the sandbox, as the user, since it is their code, not the
// model's. RunProgram runs it.
type Program struct {
	Command string        // run as /bin/sh -c Command
	Dir     string        // working directory ("": tact's)
	Env     []string      // environment (nil: os.Environ()); callers add their own variables
	Stdin   []byte        // written to stdin, then EOF
	Timeout time.Duration // then its process group is killed (0: none)
	// MaxOutput caps what is kept of each of stdout and stderr; the rest is
	// read and dropped (0: DefaultProgramOutput).
	MaxOutput int
}

// ProgramResult is how a Program's run ended and what it wrote.
type ProgramResult struct {
	Stdout, Stderr       []byte
	StdoutCut, StderrCut bool // more was written than MaxOutput
	// ExitCode is the exit status; -1 when it did not exit (a signal, or it
	// never started).
	ExitCode int
	// Signal killed it (0: none), whether tact's kill or another's.
	Signal syscall.Signal
	// TimedOut: the Timeout passed and its group was killed. Cancelled:
	// ctx ended, before the start or while it ran, and its group was
	// killed. Never both, and neither when it exited on its own first.
	TimedOut, Cancelled bool
	// StartErr says why it could not start (nil: it started, or ctx had
	// ended before).
	StartErr error
	Duration time.Duration
}

// RunProgram runs p.Command with /bin/sh -c in a session of its own: no
// controlling terminal (it cannot read the user's keyboard or stop tact
// with SIGTTIN) and its own process group, which KillRunning ends too. At
// the timeout or when ctx ends everything it started gets SIGKILL. When it
// has exited but something it started still holds its output after
// programWaitDelay, that belongs to it and is killed; a background child
// that does not hold the pipes is left alone while tact runs, as Claude
// Code leaves it.
//
// On Linux, where the program (ServeHelper) can be its own sandbox
// helper, the program runs under the helper as run_command's commands do,
// without Landlock: a child subreaper that gets SIGTERM when tact dies,
// however it dies (SIGKILL too), and then ends every process the program
// started, background children and daemons included. Elsewhere only the
// shell gets the parent-death signal.
func RunProgram(ctx context.Context, p Program) (res ProgramResult) {
	start := time.Now()
	res.ExitCode = -1
	defer func() { res.Duration = time.Since(start) }()
	if ctx.Err() != nil {
		res.Cancelled = true
		return res
	}
	maxOut := p.MaxOutput
	if maxOut <= 0 {
		maxOut = DefaultProgramOutput
	}

	// Our own pipes, not exec's: only so can tact tell a program whose
	// children hold its output (they go) from one that exited leaving a
	// quiet background child (left alone), whatever its status.
	var files []*os.File // every end, closed on return
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		res.StartErr = fmt.Errorf("stdin pipe: %w", err)
		return res
	}
	outR, outW, err := pipe()
	if err != nil {
		res.StartErr = fmt.Errorf("stdout pipe: %w", err)
		return res
	}
	errR, errW, err := pipe()
	if err != nil {
		res.StartErr = fmt.Errorf("stderr pipe: %w", err)
		return res
	}
	// The program gets its three pipes and nothing else tact holds.
	if err := procsafe.Seal(); err != nil {
		res.StartErr = fmt.Errorf("sealing descriptors: %w", err)
		return res
	}
	var prog *startedProgram
	if HelperEnabled() {
		prog, err = startProgramHelper(p, [3]*os.File{inR, outW, errW})
	} else {
		prog, err = startProgramDirect(p, [3]*os.File{inR, outW, errW})
	}
	if err != nil {
		res.StartErr = err
		return res
	}
	// The child has its ends; tact's copies would keep the pipes open.
	_, _, _ = inR.Close(), outW.Close(), errW.Close()

	stdout := &cappedBuffer{max: maxOut}
	stderr := &cappedBuffer{max: maxOut}
	var pipes sync.WaitGroup
	pipes.Add(3)
	go func() {
		defer pipes.Done()
		// An error is the program not reading all of it (EPIPE), or tact
		// closing the pipe below: either way nothing more to do.
		_, _ = inW.Write(p.Stdin)
		_ = inW.Close()
	}()
	for _, c := range []struct {
		r   *os.File
		buf *cappedBuffer
	}{{outR, stdout}, {errR, stderr}} {
		go func() {
			defer pipes.Done()
			_, _ = io.Copy(c.buf, c.r)
		}()
	}
	pipesDone := make(chan struct{})
	go func() { pipes.Wait(); close(pipesDone) }()

	var timeout <-chan time.Time
	if p.Timeout > 0 {
		t := time.NewTimer(p.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-prog.exited:
	case <-ctx.Done():
		res.Cancelled = true
		prog.kill()
	case <-timeout:
		res.TimedOut = true
		prog.kill()
	}
	<-prog.exited

	select {
	case <-pipesDone:
	case <-time.After(programWaitDelay):
		// Something it started holds its pipes: that goes with it. Closing
		// tact's ends also frees the readers from a holder that left the
		// group.
		prog.kill()
		_, _, _ = inW.Close(), outR.Close(), errR.Close()
		<-pipesDone
	}

	res.Stdout, res.StdoutCut = stdout.buf, stdout.cut
	res.Stderr, res.StderrCut = stderr.buf, stderr.cut
	ws, ok, startErr := prog.status()
	switch {
	case startErr != nil:
		res.StartErr = startErr
		res.TimedOut, res.Cancelled = false, false
	case !ok:
		// No status (a helper killed from outside before it could say):
		// reported as not exited.
	case ws.Exited():
		// It was done before the kill could matter.
		res.ExitCode = ws.ExitStatus()
		res.TimedOut, res.Cancelled = false, false
	case ws.Signaled():
		res.Signal = ws.Signal()
	}
	return res
}

// startedProgram is a running Program however it was started: exited
// closes once its status is known, status says it, kill ends at once
// everything it started.
type startedProgram struct {
	exited <-chan struct{}
	status func() (ws syscall.WaitStatus, ok bool, startErr error)
	kill   func()
}

// startProgramDirect starts the program as tact's own child, in a session
// of its own (its group is what kill ends), dying with tact where the
// system has a parent-death signal.
func startProgramDirect(p Program, stdio [3]*os.File) (*startedProgram, error) {
	cmd := exec.Command(programShell, "-c", p.Command)
	cmd.Dir = p.Dir
	cmd.Env = p.Env // nil: exec gives it os.Environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	cmd.SysProcAttr = programProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pgid := cmd.Process.Pid // Setsid: the leader's pid is the group's id
	untrack := TrackProcessGroup(pgid)
	exited := make(chan struct{})
	go func() {
		// The error repeats ProcessState, read by status.
		_ = cmd.Wait()
		untrack()
		close(exited)
	}()
	return &startedProgram{
		exited: exited,
		kill:   ProcessGroup(pgid).Kill,
		status: func() (syscall.WaitStatus, bool, error) {
			if cmd.ProcessState == nil {
				return 0, false, nil
			}
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			return ws, ok, nil
		},
	}, nil
}

// cappedBuffer keeps the first max bytes written and drops the rest,
// never failing, so a program writing without end neither fills memory
// nor blocks on a full pipe. One goroutine writes; it is read after.
type cappedBuffer struct {
	buf []byte
	max int
	cut bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := max(c.max-len(c.buf), 0)
	if len(p) > room {
		c.cut = true
	}
	c.buf = append(c.buf, p[:min(len(p), room)]...)
	return len(p), nil
}
