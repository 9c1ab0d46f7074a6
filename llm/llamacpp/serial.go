package llamacpp

// A call on the one sequence (Options.Parallel 1): its turn, its prompt's
// decode after the prefix the KV cache already holds, then one token at a
// time.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/tactcli/tact/llm"
)

// Complete formats, tokenizes and answers req; see the package comment.
// On cancellation it returns what was generated so far with ctx's error.
// Calls beyond Parallel wait for a free sequence; ctx ends the wait.
func (b *Backend) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if b.sched != nil {
		return b.completeParallel(ctx, req)
	}
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	select {
	case b.serial <- struct{}{}:
		defer func() { <-b.serial }()
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return llm.Response{}, errClosed
	}
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	cpu, err := b.turn(ctx)
	if err != nil {
		return llm.Response{Usage: llm.Usage{CPUWaitMS: cpu.waited.Milliseconds()}}, err
	}
	b.call = cpu
	defer func() {
		b.call = cpuTurn{}
		cpu.release()
	}()
	tokens, smpl, pin, err := b.prepare(req)
	if err != nil {
		return llm.Response{}, err
	}

	disk := b.loadPinned(pin)
	reused := b.reuse(tokens)
	resp := llm.Response{Usage: llm.Usage{PromptTokens: len(tokens) - reused, CachedTokens: reused, DiskCachedTokens: disk, CPUWaitMS: cpu.waited.Milliseconds()}}

	b.abort.set(false)
	stop := context.AfterFunc(ctx, func() { b.abort.set(true) })
	defer stop()

	start := time.Now()
	idx, err := b.decodePrompt(ctx, tokens, reused, pin)
	b.stats.PromptTime += time.Since(start)
	b.stats.Calls++
	b.stats.PromptReused += reused
	if err != nil {
		// Count what was decoded before the error or cancellation.
		resp.Usage.PromptTokens = max(len(b.cache)-reused, 0)
		b.stats.PromptEvaluated += resp.Usage.PromptTokens
		smpl.free()
		return resp, err
	}
	b.stats.PromptEvaluated += resp.Usage.PromptTokens
	start = time.Now()
	defer func() {
		b.stats.GenTime += time.Since(start)
		b.callDone(req, resp.Usage, smpl, time.Since(start))
	}()

	out := pieceWriter{onToken: req.OnToken}
	for {
		d := b.drawToken(smpl, idx)
		if d.err != nil || d.eog {
			err = d.err
			break
		}
		resp.Usage.CompletionTokens++
		out.write(d.piece)
		var end bool
		if end, err = b.stopAfter(req, resp.Usage.CompletionTokens, ctx.Err(), len(b.cache)); end {
			break
		}
		if idx, err = b.decode(ctx, []int{d.tok}); err != nil {
			break
		}
	}
	out.flush()
	resp.Text = out.text.String()
	return resp, err
}

// reuse keeps the longest prefix of tokens already in the KV cache and drops
// the rest of the cache; it returns how many tokens need no evaluation. At
// least one token is always left to evaluate: its logits start sampling.
func (b *Backend) reuse(tokens []int) int {
	n := commonPrefix(b.cache, tokens)
	if n == len(tokens) {
		n--
	}
	if n < len(b.cache) {
		if !b.lc.KvCacheSeqRm(0, n, -1) {
			// Some memory types (recurrent) cannot drop a suffix.
			b.lc.KvCacheClear()
			n = 0
		}
		b.cache = b.cache[:n]
	}
	return n
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

// decode evaluates tokens after the cache in chunks of BatchSize (fitBatch
// while the call's threads may change), asking for logits of the last one
// only, and returns that token's index in its batch. Before each chunk the
// call's CPU turn is fitted to its fair share (fitCPU). Every decoded chunk
// joins b.cache, so the cache list always matches the KV cache, also after
// an error or a cancellation.
func (b *Backend) decode(ctx context.Context, tokens []int) (int, error) {
	idx := 0
	for start := 0; start < len(tokens); {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		b.fitCPU()
		size := b.opts.BatchSize
		if b.resizable() {
			size = min(size, fitBatch)
		}
		chunk := tokens[start:min(start+size, len(tokens))]
		last := start+len(chunk) == len(tokens)
		b.batch.Clear()
		pos := len(b.cache)
		for i, t := range chunk {
			b.batch.Add(t, nil, pos+i, last && i == len(chunk)-1, 0)
		}
		if err := b.lc.Decode(b.batch); err != nil {
			// llama.cpp rolled back the failed chunk; make sure of it.
			b.lc.KvCacheSeqRm(0, len(b.cache), -1)
			if b.abort.isSet() {
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				// A late abort from an earlier call's cancelled context
				// (context.AfterFunc does not wait): clear it, try again.
				b.abort.set(false)
				continue
			}
			if errors.Is(err, llama.ErrKvCacheFull) {
				return 0, fmt.Errorf("%w: no room for %d more tokens after %d (context %d)", ErrContextFull, len(chunk), len(b.cache), b.opts.CtxSize)
			}
			b.lc.KvCacheClear()
			b.cache = nil
			return 0, fmt.Errorf("llama.cpp decode: %w", err)
		}
		b.cache = append(b.cache, chunk...)
		idx = len(chunk) - 1
		start += len(chunk)
	}
	return idx, nil
}
