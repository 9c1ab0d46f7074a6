package llamacpp

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"time"

	"github.com/tactcli/tact/internal/cpulock"
)

// cpuLockHook, when set (by tests), is called with a CPU turn's threads
// right after it is taken, after it grows and before it shrinks, and with 0
// right before it is released.
var cpuLockHook func(threads int)

// fitBatch is the most prompt tokens decoded at once by a call whose
// threads may change: each decode is a safe point where a turn that holds
// more than its fair share gives the surplus back, and smaller batches make
// a process that starts waiting get its slot sooner (a 512-token batch
// takes over a second on 2 cores with a 250M model).
const fitBatch = 128

// cpuSlots is the lock's slot count: the CPUs this process may run on, the
// same in every tact process of the machine. (Threads beyond the hardware's
// are what makes ggml's spinning collapse; hyperthreads are hardware.)
func cpuSlots() int { return runtime.NumCPU() }

// openCPULock opens the lock the options ask for, one slot per CPU. A lock
// that cannot be used (say a directory another user planted) costs only
// speed under load, so it is one warning, not an error.
func openCPULock(o Options) *cpulock.Lock {
	if o.NoCPULock {
		return nil
	}
	dir := o.CPULockDir
	if dir == "" {
		dir = cpulock.DefaultDir()
	}
	l, err := cpulock.Open(dir, cpuSlots())
	if err != nil {
		slog.Warn("running without the cpu lock: concurrent tact runs will compete for the CPU", "err", err)
		return nil
	}
	return l
}

// cpuTurn is one model call's share of the CPU.
type cpuTurn struct {
	threads int // threads the call may use at first
	waited  time.Duration
	release func()
	lock    *cpulock.Turn // nil: no lock, the threads never change
}

// takeTurn waits for a turn of up to want threads on lock (nil: no lock,
// all of want at once). Only ctx's end is an error: a lock that fails
// otherwise is logged and skipped.
func takeTurn(ctx context.Context, lock *cpulock.Lock, want int) (cpuTurn, error) {
	if lock == nil {
		return cpuTurn{threads: want, release: func() {}}, nil
	}
	t, err := lock.Acquire(ctx, want)
	if err != nil {
		var waited time.Duration
		if t != nil {
			waited = t.Waited
		}
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return cpuTurn{waited: waited}, err
		}
		slog.Warn("cpu lock failed; going on without it", "err", err)
		return cpuTurn{threads: want, waited: waited, release: func() {}}, nil
	}
	turn := cpuTurn{threads: t.Threads, waited: t.Waited, release: t.Release, lock: t}
	if hook := cpuLockHook; hook != nil {
		hook(t.Threads)
		turn.release = func() {
			hook(0)
			t.Release()
		}
	}
	return turn, nil
}

// turn takes the backend's CPU turn for one call and sets llama.cpp's
// threads to the turn's; the first call also reports the wait of loading.
func (b *Backend) turn(ctx context.Context) (cpuTurn, error) {
	t, err := takeTurn(ctx, b.cpu, b.opts.Threads)
	t.waited += b.loadWait
	b.loadWait = 0
	if err != nil {
		return t, err
	}
	if t.threads != b.threads {
		b.lc.setThreads(t.threads)
		b.threads = t.threads
	}
	if t.waited > 0 || t.threads != b.opts.Threads {
		slog.Debug("llama call's cpu turn", "threads", t.threads, "waited_ms", t.waited.Milliseconds())
	}
	return t, nil
}

// resizable reports whether the current call's threads may change.
func (b *Backend) resizable() bool {
	t := b.call.lock
	return t != nil && b.opts.Threads > 1 && b.cpu != nil && b.cpu.Slots() > 1
}

// fitCPU, at a safe point between decodes, fits the current call's turn and
// llama.cpp's threads to the turn's fair share now. Threads go down before
// the slots are released and up after they are taken, so the model never
// runs more threads than slots held.
func (b *Backend) fitCPU() {
	t := b.call.lock
	if t == nil {
		return
	}
	n := t.Fair()
	if n == t.Threads {
		return
	}
	before := t.Threads
	if n < t.Threads {
		b.lc.setThreads(n)
		b.threads = n
		if hook := cpuLockHook; hook != nil {
			hook(n)
		}
		t.Resize(n)
	} else {
		if t.Resize(n) == before {
			return
		}
		b.lc.setThreads(t.Threads)
		b.threads = t.Threads
		if hook := cpuLockHook; hook != nil {
			hook(t.Threads)
		}
	}
	slog.Debug("llama call's cpu share changed", "threads", t.Threads, "was", before)
}
