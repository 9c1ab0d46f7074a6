package llamacpp

// Sampling in the scheduler (sched.go): after each decode the
// next token of every job is drawn, then applied.

import (
	"sync"
	"sync/atomic"
	"time"
)

// drawAll draws the next token of every job in ready, concurrently on up
// to the call's threads: the decode is over, so ggml's threads are idle,
// and with a grammar a draw costs about 2 ms (a full pass over the
// vocabulary for most tokens of a random-weight model), which on one
// goroutine added about half a decode's time per round at 16 sequences.
// Each job's sampler is its own; the context's logits are only read once
// the first draw has put them in order (llama_get_logits_ith reorders
// them on its first call after a decode).
func (s *sched) drawAll(ready []*job) {
	if len(ready) == 0 {
		return
	}
	s.draw(ready[0])
	rest := ready[1:]
	workers := min(max(s.b.threads, 1), len(rest))
	if workers <= 1 {
		for _, j := range rest {
			s.draw(j)
		}
		return
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(rest) {
					return
				}
				s.draw(rest[i])
			}
		})
	}
	wg.Wait()
}

// draw samples j's next token (drawToken); safe to run for different
// jobs at once.
func (s *sched) draw(j *job) {
	j.drawn = s.b.drawToken(j.smpl, j.idx)
	j.idx = -1
}

// sample applies j's drawn token: the job ends or goes on generating.
func (s *sched) sample(j *job) {
	d := j.drawn
	j.drawn = draw{}
	if d.err != nil || d.eog {
		s.finish(j, d.err)
		return
	}
	j.usage.CompletionTokens++
	if j.usage.CompletionTokens == 1 {
		// Time to first token, from the call's submission (the queue and
		// the prompt's evaluation included), for its chat span.
		j.usage.FirstTokenMS = float64(time.Since(j.submitted).Microseconds()) / 1000
	}
	j.push(d.piece)
	var cancelErr error
	if j.cancelled.Load() {
		cancelErr = j.ctx.Err()
	}
	if end, err := s.b.stopAfter(j.req, j.usage.CompletionTokens, cancelErr, len(j.slot.cache)); end {
		s.finish(j, err)
		return
	}
	j.last = d.tok
}
