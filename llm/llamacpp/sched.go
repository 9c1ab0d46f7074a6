package llamacpp

// The scheduler: one llama context, one KV sequence per slot
// (Options.Parallel of them, one by default), and a goroutine that owns the
// context. Every call goes through it; with one slot, calls run one at a
// time and each reuses the prefix the sequence still holds from the last.
//
//   - Complete tokenizes, builds its sampler and queues a job; at most
//     Parallel jobs hold a slot, the others wait in order (their ctx can
//     end the wait).
//   - A job takes the free slot whose cached tokens share the longest
//     prefix with its prompt. When another slot, busy or idle, holds a
//     longer common prefix, the job copies it (KvCacheSeqCp) instead of
//     evaluating it; when another slot is still evaluating a prompt with a
//     longer common prefix, the job waits for it and then copies. So N jobs
//     with the same system prompt and tools evaluate it once.
//   - Each round the scheduler decodes the next tokens of every active job
//     in one batch (continuous batching): the sampled token of each
//     generating job plus prompt chunks, oldest job first, up to BatchSize
//     tokens. Logits are asked for each job's last token in the batch and
//     each job samples from its own index with its own sampler and grammar.
//   - The KV cache is llama.cpp's split one: one stream of CtxSize cells
//     per sequence. A prefix copy copies the source's whole stream, then
//     drops the tail (llama.cpp cannot copy part of a stream). A batch is
//     computed as one ubatch per run of consecutive sequence ids, each
//     sequence giving the same number of tokens, so batches go to
//     llama.cpp in sequence order: the generated tokens of every sequence
//     are one ubatch, the rest of a prompt chunk follows on its own.
//
// Why not the unified cache (one buffer of CtxSize*Parallel cells, a
// prefix copy shares cells): attention runs over every used cell of every
// sequence, masked. With a shared 1000-token prefix and nothing else, as
// in the bench's probe, it is a little faster; but agent runs go on past
// the prefix, each sequence with its own observations, and then every
// token attends to all of them. On the bench model, 16 two-step runs of
// `tact batch` spent 39.9 s evaluating prompts with the unified cache
// against 22.9 s with the split one (19.0 s one run at a time), and took
// 53.9 s against 33.3 s (43.3 s at --parallel 1).
//
// The batching rule, from scripts/bench's probe on the bench model (AMD
// EPYC, 2 cores, 2 threads; after a 1000-token shared prefix; ms per
// decode of one token for each of N sequences):
//
//	N            1      2      4      8     16
//	split KV    11-12  20-25  29-35  47-60  81-109
//	unified KV  11-13  21-26  26-34  39-50  65-78
//
// One decode of 2 tokens costs about what two decodes of 1 do (ggml's CPU
// matrix kernels gain only from about 3 columns on), and from 3 tokens on
// one decode always wins (16 tokens: about 5-6 ms each against 12). So the
// fastest choice for every count is one batch holding every pending token:
// for 2 it ties with taking turns and saves a scheduler round. Prompt
// chunks join the same batch. After a decode, the next tokens are drawn
// on the call's threads at once (drawAll): sampling under a grammar is
// about 2 ms a token, ggml's threads are idle meanwhile.
//
// Cancellation: a job's context ending marks it; the scheduler ends it
// after the current decode and frees its slot. llama.cpp's abort callback
// is per context, so it is raised only when every job with tokens in the
// decode in flight is cancelled: a cancelled job never aborts others' work.
//
// CPU: the scheduler holds one CPU turn (cpu.go) while any job is active,
// fits its threads to the turn's fair share between decodes, and gives the
// turn back when the last job ends.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tactcli/tact/llm"
)

// Job states.
const (
	jobQueued int32 = iota
	jobAdmitted
	jobWithdrawn
)

// job is one Complete call.
type job struct {
	ctx       context.Context
	req       llm.Request
	prompt    []int
	smpl      *sampler
	submitted time.Time
	cancelled atomic.Bool
	// state: queued until the scheduler gives the job a slot, or until its
	// caller gives up waiting and returns at once (withdrawn).
	state atomic.Int32

	// Owned by the scheduler goroutine.
	order    int   // admission order: prompts are evaluated oldest first
	slot     *slot //
	next     int   // prompt tokens in the cache; == len(prompt) once generating
	last     int   // sampled token not yet decoded; -1: none
	follow   *slot // waiting for this slot to hold prompt[:followN]
	followOf *job  // the job follow was evaluating when this job started waiting
	followN  int
	idx      int   // the job's logits in the batch in flight; -1: none
	inBatch  int   // tokens of the job in the batch in flight
	drawn    draw  // the token drawn from the decode just done
	copied   int   // prompt tokens copied from another sequence
	pin      []int // the prompt's pinned prefix, for the prompt cache (promptcache.go)
	savePin  []int // pin, to be saved once evaluated
	usage    llm.Usage

	// Shared with the caller.
	mu     sync.Mutex
	pieces []string
	notify chan struct{} // a piece is ready (capacity 1)
	done   chan struct{} // closed when err and usage are final
	err    error
}

func (j *job) push(piece string) {
	j.mu.Lock()
	j.pieces = append(j.pieces, piece)
	j.mu.Unlock()
	select {
	case j.notify <- struct{}{}:
	default:
	}
}

func (j *job) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	p := j.pieces
	j.pieces = nil
	return p
}

// sched is the scheduler (see the file's comment).
type sched struct {
	b     *Backend
	slots []*slot
	wake  chan struct{} // capacity 1

	mu       sync.Mutex // guards the fields below
	inbox    []*job
	resets   []chan struct{}
	closed   bool
	inflight []*job // jobs with tokens in the decode in flight

	// Owned by the scheduler goroutine.
	queue    []*job
	active   []*job
	admitted int
	turn     *cpuTurn // nil: no CPU turn held
	rot      int      // rotates the generated tokens when more than a batch wait
	exited   chan struct{}

	// stepHook, when set (by tests, before the calls they watch), runs
	// before each decode on the scheduler goroutine.
	stepHook func(s *sched)
	// decodedHook, when set (by tests), runs after each successful decode,
	// before any draw: the batch's logits are as llama.cpp left them.
	decodedHook func(s *sched, batch []*job)
}

func newSched(b *Backend, n int) *sched {
	s := &sched{b: b, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	for i := range n {
		s.slots = append(s.slots, &slot{seq: i})
	}
	go s.loop()
	return s
}

func (s *sched) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sched) submit(j *job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.inbox = append(s.inbox, j)
	s.poke()
	return nil
}

// cancel marks j cancelled; when every job of the decode in flight is, it
// aborts the decode.
func (s *sched) cancel(j *job) {
	j.cancelled.Store(true)
	s.mu.Lock()
	if len(s.inflight) > 0 && slices.Contains(s.inflight, j) &&
		!slices.ContainsFunc(s.inflight, func(o *job) bool { return !o.cancelled.Load() }) {
		s.b.lc.setAbort(true)
	}
	s.mu.Unlock()
	s.poke()
}

// reset empties the cache of every free slot, waiting for the scheduler.
func (s *sched) reset() {
	done := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.resets = append(s.resets, done)
	s.mu.Unlock()
	s.poke()
	select {
	case <-done:
	case <-s.exited:
	}
}

// close ends every job with errClosed and stops the scheduler.
func (s *sched) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.poke()
	<-s.exited
}

// Complete formats, tokenizes and answers req (see the file's comment).
// On cancellation it returns what was generated so far with ctx's error.
// Calls beyond Parallel wait for a free sequence; ctx ends the wait.
func (b *Backend) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return llm.Response{}, errClosed
	}
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return llm.Response{}, err
	}
	// Here rather than on the scheduler goroutine: formatting and
	// tokenizing would hold up every sequence's decode.
	tokens, smpl, pin, err := b.prepare(req)
	b.mu.Unlock()
	if err != nil {
		return llm.Response{}, err
	}
	j := &job{ctx: ctx, req: req, prompt: tokens, pin: pin, smpl: smpl, submitted: time.Now(), last: -1, idx: -1,
		notify: make(chan struct{}, 1), done: make(chan struct{})}
	if err := b.sched.submit(j); err != nil {
		smpl.free()
		return llm.Response{}, err
	}
	stop := context.AfterFunc(ctx, func() { b.sched.cancel(j) })
	defer stop()

	out := pieceWriter{onToken: req.OnToken}
	drain := func() {
		for _, p := range j.take() {
			out.write(p)
		}
	}
	cancelled := ctx.Done()
	for {
		select {
		case <-j.notify:
			drain()
		case <-j.done:
			drain()
			out.flush()
			return llm.Response{Text: out.text.String(), Usage: j.usage}, j.err
		case <-cancelled:
			// Still waiting for a sequence: return now (the scheduler drops
			// the job). Admitted: the scheduler ends it after its decode.
			if j.state.CompareAndSwap(jobQueued, jobWithdrawn) {
				return llm.Response{}, ctx.Err()
			}
			cancelled = nil
		}
	}
}

func (s *sched) loop() {
	defer close(s.exited)
	for {
		if !s.control() {
			return
		}
		s.admit()
		if len(s.active) == 0 {
			s.releaseTurn()
			<-s.wake
			continue
		}
		if s.turn == nil && !s.takeTurn() {
			continue
		}
		s.b.fitCPU()
		s.step()
	}
}

// control takes new jobs, ends cancelled ones and serves resets; false once
// the backend is closed (every job then ended).
func (s *sched) control() bool {
	s.mu.Lock()
	s.queue = append(s.queue, s.inbox...)
	s.inbox = nil
	resets := s.resets
	s.resets = nil
	closed := s.closed
	s.mu.Unlock()

	if closed {
		for _, j := range slices.Clone(s.active) {
			s.finish(j, errClosed)
		}
		for _, j := range s.queue {
			s.finish(j, errClosed)
		}
		s.queue = nil
		s.releaseTurn()
		for _, r := range resets {
			close(r)
		}
		return false
	}
	s.queue = slices.DeleteFunc(s.queue, func(j *job) bool {
		if j.cancelled.Load() {
			s.finish(j, j.ctx.Err())
			return true
		}
		return false
	})
	for _, j := range slices.Clone(s.active) {
		if j.cancelled.Load() {
			s.finish(j, j.ctx.Err())
		}
	}
	if len(resets) > 0 {
		for _, sl := range s.slots {
			if sl.job == nil && len(sl.cache) > 0 {
				s.b.lc.KvCacheSeqRm(sl.seq, -1, -1)
				sl.cache = nil
			}
		}
		for _, r := range resets {
			close(r)
		}
	}
	return true
}

// finish ends j: its slot (if any) is free again, its caller returns.
func (s *sched) finish(j *job, err error) {
	if j.slot != nil {
		j.slot.job = nil
		j.slot = nil
	}
	s.active = slices.DeleteFunc(s.active, func(o *job) bool { return o == j })
	b := s.b
	b.mu.Lock()
	if j.order > 0 { // it had a slot
		b.stats.Calls++
		b.stats.PromptReused += j.usage.CachedTokens
		b.stats.PromptCopied += j.copied
	}
	b.callDone(j.req, j.usage, j.smpl, time.Since(j.submitted))
	b.mu.Unlock()
	if len(s.active) == 0 && len(s.queue) == 0 {
		// The last call gives its CPU turn back before its caller
		// returns: another process may go on at once.
		s.releaseTurn()
	}
	j.err = err
	close(j.done)
}

// takeTurn waits for a CPU turn while some job still wants it; false when
// none does any more (or the backend closes) before the turn comes.
func (s *sched) takeTurn() bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		t   cpuTurn
		err error
	}
	got := make(chan result, 1)
	start := time.Now()
	loadWait := s.b.loadWait // the load's wait goes to the first call
	s.b.loadWait = 0
	go func() {
		t, err := s.b.turn(ctx)
		got <- result{t, err}
	}()
	for {
		select {
		case r := <-got:
			// Everyone queued or running waited for it, at most as long
			// as the lock made the turn wait: a free lock costs nothing,
			// however long a busy machine took to run this goroutine.
			for _, j := range append(slices.Clone(s.active), s.queue...) {
				from := start
				if j.submitted.After(start) {
					from = j.submitted
				}
				j.usage.CPUWaitMS += min(time.Since(from), r.t.waited).Milliseconds()
			}
			if r.err != nil {
				s.b.loadWait += loadWait
				return false
			}
			if len(s.active) > 0 {
				s.active[0].usage.CPUWaitMS += loadWait.Milliseconds()
			}
			s.turn = &r.t
			s.b.call = r.t
			return true
		case <-s.wake:
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			live := slices.ContainsFunc(s.active, func(j *job) bool { return !j.cancelled.Load() })
			if closed || !live {
				cancel()
				if r := <-got; r.err == nil {
					r.t.release()
				}
				s.b.loadWait += loadWait
				s.poke() // let control see what woke us
				return false
			}
		}
	}
}

func (s *sched) releaseTurn() {
	if s.turn != nil {
		s.b.call = cpuTurn{}
		s.turn.release()
		s.turn = nil
	}
}

// step decodes one batch and samples from it.
func (s *sched) step() {
	b := s.b
	if s.stepHook != nil {
		s.stepHook(s)
	}
	s.resolve(false)
	batch := s.plan()
	if len(batch) == 0 {
		s.resolve(true)
		if batch = s.plan(); len(batch) == 0 {
			return
		}
	}
	// In sequence order: a split KV cache computes a batch as one ubatch
	// per run of consecutive sequence ids (see the file's comment).
	slices.SortFunc(batch, func(x, y *job) int { return x.slot.seq - y.slot.seq })
	b.batch.Clear()
	prompt := 0
	for _, j := range batch {
		j.idx = -1
		pos := len(j.slot.cache)
		if j.last >= 0 {
			j.idx = b.batch.NumTokens()
			b.batch.Add(j.last, pos, true, j.slot.seq)
			continue
		}
		chunk := j.prompt[j.next : j.next+j.inBatch]
		done := j.next+len(chunk) == len(j.prompt)
		for i, t := range chunk {
			if done && i == len(chunk)-1 {
				j.idx = b.batch.NumTokens()
			}
			b.batch.Add(t, pos+i, done && i == len(chunk)-1, j.slot.seq)
		}
		prompt += len(chunk)
	}
	s.mu.Lock()
	s.inflight = batch
	// Set or cleared here, under s.mu as cancel is: a flag left over from
	// a cancel that came after the last decode never aborts live work.
	b.lc.setAbort(!slices.ContainsFunc(batch, func(j *job) bool { return !j.cancelled.Load() }))
	s.mu.Unlock()
	start := time.Now()
	err := b.lc.Decode(b.batch)
	took := time.Since(start)
	s.mu.Lock()
	s.inflight = nil
	aborted := b.lc.aborting() || errors.Is(err, errAborted)
	b.lc.setAbort(false)
	s.mu.Unlock()

	b.mu.Lock()
	b.stats.Decodes++
	if prompt > 0 {
		b.stats.PromptTime += took
	} else {
		b.stats.GenTime += took
	}
	b.mu.Unlock()

	if err != nil {
		for _, j := range batch {
			// llama.cpp rolled back the failed batch, but an abort keeps
			// the ubatches finished before it: drop them.
			s.cut(j.slot, len(j.slot.cache))
			j.inBatch, j.idx = 0, -1
		}
		switch {
		case aborted:
			for _, j := range batch {
				if j.cancelled.Load() {
					s.finish(j, j.ctx.Err())
				}
			}
		case errors.Is(err, errKVFull):
			for _, j := range batch {
				s.finish(j, fmt.Errorf("%w: no room in the KV cache after %d tokens (context %d)", ErrContextFull, len(j.slot.cache), b.opts.CtxSize))
			}
		default:
			for _, j := range batch {
				sl := j.slot
				s.finish(j, fmt.Errorf("llama.cpp decode: %w", err))
				b.lc.KvCacheSeqRm(sl.seq, -1, -1)
				sl.cache = nil
			}
		}
		return
	}
	if s.decodedHook != nil {
		s.decodedHook(s, batch)
	}

	start = time.Now()
	var saving time.Duration // of this, saving prefixes: not sampling
	var ready []*job
	for _, j := range batch {
		sl := j.slot
		if j.last >= 0 {
			sl.cache = append(sl.cache, j.last)
			j.last = -1
		} else {
			sl.cache = append(sl.cache, j.prompt[j.next:j.next+j.inBatch]...)
			j.next += j.inBatch
			j.usage.PromptTokens += j.inBatch
			b.mu.Lock()
			b.stats.PromptEvaluated += j.inBatch
			b.mu.Unlock()
			if pin := j.savePin; len(pin) > 0 && j.next >= len(pin) {
				if j.next == len(pin) && b.pc.claim(pin) {
					saving += b.saveSeq(sl.seq, pin)
				}
				j.savePin = nil
			}
		}
		j.inBatch = 0
		if j.idx >= 0 {
			ready = append(ready, j)
		}
	}
	s.drawAll(ready)
	for _, j := range ready {
		s.sample(j)
	}
	took = time.Since(start) - saving
	b.mu.Lock()
	b.stats.GenTime += took
	b.stats.SampleTime += took
	b.mu.Unlock()
}

// plan chooses the jobs of the next batch and how many tokens each
// decodes (inBatch): every generated token, then prompt chunks oldest job
// first, up to the batch size (the rule in the file's comment).
func (s *sched) plan() []*job {
	size := s.b.opts.BatchSize
	if s.b.resizable() {
		size = min(size, fitBatch)
	}
	var gen, prompt []*job
	for _, j := range s.active {
		switch {
		case j.last >= 0:
			gen = append(gen, j)
		case j.follow == nil && j.next < len(j.prompt):
			prompt = append(prompt, j)
		}
	}
	slices.SortFunc(prompt, func(a, b *job) int { return a.order - b.order })
	if len(gen) > size {
		// More sequences than a batch holds: take turns.
		s.rot++
		off := s.rot % len(gen)
		gen = slices.Concat(gen[off:], gen[:off])[:size]
	}
	var batch []*job
	for _, j := range gen {
		j.inBatch = 1
		batch = append(batch, j)
	}
	room := size - len(gen)
	for _, j := range prompt {
		if room == 0 {
			break
		}
		j.inBatch = min(room, len(j.prompt)-j.next)
		if pin := j.savePin; j.next < len(pin) {
			// Stop at the pinned prefix's end: its state is saved there.
			j.inBatch = min(j.inBatch, len(pin)-j.next)
		}
		room -= j.inBatch
		batch = append(batch, j)
	}
	return batch
}
