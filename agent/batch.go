package agent

import (
	"context"
	"io"
	"sync"

	"github.com/tactcli/tact/react"
)

// BatchOptions tune RunBatch.
type BatchOptions struct {
	Name string // the input's name in error messages ("-": standard input)
	// Parallel is how many queries run at once (at least 1), at most as
	// many as the backend serves at once (Runtime.Concurrency): more would
	// only wait for the model.
	Parallel int
	Ordered  bool // report results in input order instead of as they finish
	// PlanName and PlanData, when set, are a saved plan every line runs
	// (tact batch --plan), with the line's params as its parameters and
	// its query, if any, as the query.
	PlanName string
	PlanData []byte
	// Progress, when set, is called after each change in the counts.
	Progress func(BatchCounts)
}

// BatchCounts are a batch's counts so far.
type BatchCounts struct {
	Done, Running, Failed int
}

// BatchResult is one query's outcome: Result when it ran, else Err (a line
// that is not a query, or a run that could not start; KindOf types it).
type BatchResult struct {
	Query  BatchQuery
	Result *react.Result
	Err    error
}

// Succeeded reports whether the query ran and succeeded.
func (b BatchResult) Succeeded() bool {
	return b.Err == nil && b.Result != nil && b.Result.TerminationReason == react.ReasonSuccess
}

// RunBatch runs every query of r on the runtime, up to opts.Parallel at
// once (capped by the backend's concurrency), and calls report with each
// result (one call at a time): as each finishes, or in input order with
// opts.Ordered. A bad line is reported as an error result and the batch
// goes on. When ctx ends no new query
// starts; running ones end as cancelled and are reported. The error is
// the input's read error or report's first error (which stops the batch).
func (rt *Runtime) RunBatch(ctx context.Context, r io.Reader, opts BatchOptions, report func(BatchResult) error) (BatchCounts, error) {
	parallel := min(max(opts.Parallel, 1), rt.Concurrency())
	type item struct {
		seq int
		q   BatchQuery
	}
	work := make(chan item)
	var (
		mu       sync.Mutex
		counts   BatchCounts
		next     int                     // ordered: the next sequence number to report
		pending  = map[int]BatchResult{} // ordered: finished, waiting for earlier ones
		firstErr error
	)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	emit := func(seq int, res BatchResult) {
		mu.Lock()
		defer mu.Unlock()
		counts.Running--
		counts.Done++
		if !res.Succeeded() {
			counts.Failed++
		}
		send := func(b BatchResult) {
			if firstErr != nil {
				return
			}
			if err := report(b); err != nil {
				firstErr = err
				stop()
			}
		}
		if !opts.Ordered {
			send(res)
		} else {
			pending[seq] = res
			for {
				b, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				next++
				send(b)
			}
		}
		if opts.Progress != nil {
			opts.Progress(counts)
		}
	}
	name := opts.Name
	if name == "" {
		name = "-"
	}
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if it.q.Err != nil {
					emit(it.seq, BatchResult{Query: it.q, Err: badInput(it.q.Err)})
					continue
				}
				job := Job{Query: it.q.Query}
				switch {
				case opts.PlanData != nil:
					job.PlanName, job.PlanData, job.Params = opts.PlanName, opts.PlanData, it.q.Params
				case it.q.Params != nil:
					emit(it.seq, BatchResult{Query: it.q, Err: badInputf("%s:%d: \"params\" without a saved plan: give tact batch --plan PLAN", name, it.q.Line)})
					continue
				}
				res, err := rt.Run(ctx, job)
				emit(it.seq, BatchResult{Query: it.q, Result: res, Err: err})
			}
		}()
	}
	// The input is read in its own goroutine: a read that blocks (a pipe
	// that stays open) must not keep the batch from ending when ctx ends.
	type line struct {
		q   BatchQuery
		err error
	}
	lines := make(chan line)
	go func() {
		defer close(lines)
		for q, err := range ReadBatch(r, name) {
			select {
			case lines <- line{q, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var readErr error
	seq := 0
read:
	for ctx.Err() == nil {
		var l line
		var ok bool
		select {
		case l, ok = <-lines:
		case <-ctx.Done():
			break read
		}
		if !ok {
			break
		}
		if l.err != nil {
			readErr = l.err
			break
		}
		mu.Lock()
		counts.Running++
		mu.Unlock()
		select {
		case work <- item{seq: seq, q: l.q}:
			seq++
		case <-ctx.Done():
			mu.Lock()
			counts.Running--
			mu.Unlock()
			break read
		}
	}
	close(work)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return counts, firstErr
	}
	return counts, readErr
}
