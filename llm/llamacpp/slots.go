package llamacpp

// Slots of the scheduler (sched.go): which sequence a job
// takes and how it gets a prefix another sequence holds or is evaluating.

// followMin is the fewest extra prefix tokens worth waiting for another
// slot to evaluate.
const followMin = 8

// slot is one KV sequence.
type slot struct {
	seq   int
	cache []int // tokens held in the KV cache for this sequence, in order
	job   *job  // nil: free
	used  int   // admission counter of the last job, for least recently used
}

// admit gives free slots to queued jobs, oldest first.
func (s *sched) admit() {
	for len(s.queue) > 0 {
		var free []*slot
		for _, sl := range s.slots {
			if sl.job == nil {
				free = append(free, sl)
			}
		}
		if len(free) == 0 {
			return
		}
		j := s.queue[0]
		s.queue = s.queue[1:]
		if !j.state.CompareAndSwap(jobQueued, jobAdmitted) {
			s.finish(j, j.ctx.Err()) // withdrawn
			continue
		}
		s.start(j, free)
	}
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// usable is how many of tokens a sequence holding cache can skip: their
// common prefix, leaving at least one token to evaluate for its logits.
func usable(cache, tokens []int) int {
	return min(commonPrefix(cache, tokens), len(tokens)-1)
}

// start puts j in the free slot with the longest common prefix (the least
// recently used on a tie) and takes a longer prefix from another slot: by
// copying what it holds, or by waiting for what it is evaluating.
func (s *sched) start(j *job, free []*slot) {
	best, own := free[0], -1
	for _, sl := range free {
		if n := usable(sl.cache, j.prompt); n > own || (n == own && sl.used < best.used) {
			best, own = sl, n
		}
	}
	sl := best
	s.admitted++
	j.order, sl.used = s.admitted, s.admitted
	j.slot, sl.job = sl, j
	s.active = append(s.active, j)

	var src *slot
	avail, future := own, own
	var srcJob *job
	for _, o := range s.slots {
		if o == sl {
			continue
		}
		if n := usable(o.cache, j.prompt); n > avail {
			src, avail = o, n
		}
	}
	for _, o := range s.slots {
		if o == sl || o.job == nil || o.job.next >= len(o.job.prompt) {
			continue
		}
		if n := usable(o.job.prompt, j.prompt); n > future {
			srcJob, future = o.job, n
		}
	}
	s.trim(sl, own)
	if src != nil {
		s.copyPrefix(src, sl, avail)
	}
	// A pinned prefix that no sequence holds may be on disk (promptcache.go).
	j.usage.DiskCachedTokens = s.b.seedSlot(sl, j)
	j.next = len(sl.cache)
	j.usage.CachedTokens = j.next
	if srcJob != nil && future >= len(sl.cache)+followMin {
		j.follow, j.followOf, j.followN = srcJob.slot, srcJob, future
	}
}

// trim keeps the first n tokens of sl's sequence.
func (s *sched) trim(sl *slot, n int) {
	if n >= len(sl.cache) {
		return
	}
	s.cut(sl, n)
}

// cut drops sl's cells from position n on, all of them when the memory
// cannot drop a suffix (recurrent layers, as in Qwen3.5's hybrid).
func (s *sched) cut(sl *slot, n int) {
	if !s.b.lc.KvCacheSeqRm(sl.seq, n, -1) {
		s.b.lc.KvCacheSeqRm(sl.seq, -1, -1)
		n = 0
	}
	sl.cache = sl.cache[:min(n, len(sl.cache))]
}

// copyPrefix makes dst's sequence the first n tokens of src's; with memory
// that cannot drop a suffix, only a copy of all of src's (n tokens) holds,
// else dst ends up empty.
func (s *sched) copyPrefix(src, dst *slot, n int) {
	lc := s.b.lc
	lc.KvCacheSeqRm(dst.seq, -1, -1)
	// A split cache copies whole streams only.
	lc.KvCacheSeqCp(src.seq, dst.seq, -1, -1)
	dst.cache = append(dst.cache[:0], src.cache...)
	s.cut(dst, n)
	if dst.job != nil {
		dst.job.copied = len(dst.cache)
	}
}

// resolve ends the waits that are over: the slot followed holds the prefix,
// or it will not any more (its job ended or moved on).
func (s *sched) resolve(force bool) {
	for _, j := range s.active {
		if j.follow == nil {
			continue
		}
		src := j.follow
		have := usable(src.cache, j.prompt)
		if !force && have < j.followN && src.job == j.followOf && src.job.next < len(src.job.prompt) {
			continue
		}
		j.follow, j.followOf = nil, nil
		if have > len(j.slot.cache) {
			s.copyPrefix(src, j.slot, have)
			j.next = len(j.slot.cache)
			j.usage.CachedTokens = j.next
		}
	}
}
