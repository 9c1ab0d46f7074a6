package llamacpp

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"time"

	"github.com/tactcli/tact/internal/cpulock"
)

// cpuLockHook, when set (by tests), is called right after a CPU turn is
// taken (with its threads) and right before it is released (0).
var cpuLockHook func(threads int)

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
	threads int // threads the call may use
	waited  time.Duration
	release func()
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
	turn := cpuTurn{threads: t.Threads, waited: t.Waited, release: t.Release}
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
		setThreads(b.lc, t.threads)
		b.threads = t.threads
	}
	if t.waited > 0 || t.threads != b.opts.Threads {
		slog.Debug("llama call's cpu turn", "threads", t.threads, "waited_ms", t.waited.Milliseconds())
	}
	return t, nil
}
