package server

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// errQueueFull is a request that found every sequence busy and the queue full.
var errQueueFull = errors.New("every sequence is busy and the queue is full")

// errDraining is a request still waiting in the queue when the server began
// to shut down: it has not started, so it is refused at once rather than
// started in the grace meant for the requests already running.
var errDraining = errors.New("the server is shutting down")

// admission lets up to cap(slots) requests run at once (the model's
// parallel sequences) and up to maxWait more wait, in arrival order, for
// a free one; the rest are refused at once.
type admission struct {
	slots   chan struct{}
	mu      sync.Mutex
	waiting int
	maxWait int
	// avgHold is a moving average of how long a request holds a slot,
	// for the Retry-After of a refusal.
	avgHold time.Duration
	// draining is closed when the server begins to shut down.
	draining  chan struct{}
	drainOnce sync.Once
}

func newAdmission(parallel, queue int) *admission {
	return &admission{slots: make(chan struct{}, max(parallel, 1)), maxWait: max(queue, 0), draining: make(chan struct{})}
}

// drain refuses, from now on, every request that is waiting or arrives.
func (a *admission) drain() { a.drainOnce.Do(func() { close(a.draining) }) }

func (a *admission) isDraining() bool {
	select {
	case <-a.draining:
		return true
	default:
		return false
	}
}

// acquire takes a slot, waiting in the queue while ctx lasts and the
// server is not draining. The release must be called once.
func (a *admission) acquire(ctx context.Context) (release func(), err error) {
	select {
	case <-a.draining:
		return nil, errDraining
	default:
	}
	select {
	case a.slots <- struct{}{}:
		return a.releaser(), nil
	default:
	}
	a.mu.Lock()
	if a.waiting >= a.maxWait {
		a.mu.Unlock()
		return nil, errQueueFull
	}
	a.waiting++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.waiting--
		a.mu.Unlock()
	}()
	select {
	case a.slots <- struct{}{}:
		return a.releaser(), nil
	case <-a.draining:
		return nil, errDraining
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *admission) releaser() func() {
	start := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			held := time.Since(start)
			a.mu.Lock()
			if a.avgHold == 0 {
				a.avgHold = held
			} else {
				a.avgHold = (a.avgHold*7 + held) / 8
			}
			a.mu.Unlock()
			<-a.slots
		})
	}
}

// retryAfter is when a refused request may find room: the queue ahead of
// it drained at the average hold time per slot, in whole seconds (at least 1).
func (a *admission) retryAfter() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	rounds := float64(a.waiting+1) / float64(cap(a.slots))
	return max(1, int(math.Ceil(rounds*a.avgHold.Seconds())))
}

func (a *admission) busy() int { return len(a.slots) }

func (a *admission) total() int { return cap(a.slots) }

func (a *admission) queued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting
}
