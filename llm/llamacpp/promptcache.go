package llamacpp

// The prompt cache on disk (Options.PromptCacheDir): warm starts for
// processes that begin with the same system prompt and tools, a cron job's
// runs say.
//
//   - What is persisted: only the pinned prefix, the leading messages a
//     request marks persistable (llm.Request.PersistableMessages: the
//     system prompt with the tool list, never a query, plan, observation
//     or anything else a user typed), as the chat template formats them.
//     The full prompt must start with exactly those tokens, else nothing
//     is persisted. Prefixes under minPinned tokens are not worth a file.
//   - When: a call whose pinned prefix is not in its sequence loads it
//     from disk into that sequence; on a miss the sequence evaluating the
//     prefix stops its prompt chunks at the prefix's end, saves its state
//     there, then evaluates the rest of the prompt. With --parallel
//     (sched.go) the scheduler's prefix copy shares a loaded prefix
//     with the other sequences. Warm (tact serve at start) does either
//     ahead of the first request.
//   - The key (internal/promptcache.Key) covers the model file (path,
//     size, modification time), the context size, batch size, KV cache
//     type, flash attention, GPU offload, the payload's layout and the
//     build (tact's version and the llama.cpp that computes: the runtime's
//     version, directory and CPU library, or the cgo build's module and
//     flags); the exact tokens name the file and are checked on load.
//   - The payload: llama.cpp's sequence state (kvstate.go). After a
//     header (the runtime's llama.cpp writes a magic word and the source
//     sequence's id; the cgo one nothing), its first word is the
//     context's KV stream count and one cell count follows per stream, all
//     zero but the saved sequence's; for a plain KV cache the file keeps
//     only the saved stream's part, and a load frames it for the loading
//     context, so a prefix saved at --parallel 1 seeds a sequence of a
//     --parallel 8 context too. Other memory kinds (sliding
//     window, recurrent) keep the raw state, shared only with a context of
//     the same shape.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/internal/buildinfo"
	"github.com/tactcli/tact/internal/promptcache"
	"github.com/tactcli/tact/llm"
)

// minPinned is the shortest prefix worth a file: a few dozen tokens
// evaluate in about the time a load takes.
const minPinned = 32

// promptCache is a Backend's view of the prompt cache directory.
type promptCache struct {
	store promptcache.Store
	key   promptcache.Key
	// streams is the context's KV stream count when its sequence states
	// are plain KV cache states (stateLayout); 0: other memory, raw
	// states. header is what precedes the stream count in a state (an
	// empty sequence's, replayed on load; llama.cpp ignores its sequence
	// id).
	streams int
	header  []byte
	// pinned memoizes the latest pinned prefix's text and tokens.
	pinned struct {
		text   string
		tokens []int
	}
	// saved lists the entries this process saved or tried to: a prefix is
	// written at most once a process. Guarded by mu: the scheduler
	// claims entries without the backend's lock.
	mu    sync.Mutex
	saved map[string]bool
}

// claim says whether pin's entry is still to be saved by this process,
// and marks it as being saved.
func (pc *promptCache) claim(pin []int) bool {
	name := promptcache.Name(pc.key, pin)
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.saved[name] {
		return false
	}
	pc.saved[name] = true
	return true
}

// unsaved says whether pin's entry has not been saved (or claimed) yet.
func (pc *promptCache) unsaved(pin []int) bool {
	name := promptcache.Name(pc.key, pin)
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return !pc.saved[name]
}

// newPromptCache sets up the prompt cache of a loaded backend; nil (with
// a debug line) when the model file cannot be identified, and nil with a
// warning when the directory cannot be trusted (promptcache.CheckDir):
// the run goes on without the cache.
func newPromptCache(b *Backend) *promptCache {
	o := b.opts
	if err := promptcache.CheckDir(o.PromptCacheDir); err != nil {
		slog.Warn("running without the prompt cache", "err", err)
		return nil
	}
	path, err := filepath.Abs(o.ModelPath)
	if err == nil {
		path, err = filepath.EvalSymlinks(path)
	}
	var st os.FileInfo
	if err == nil {
		st, err = os.Stat(path)
	}
	if err != nil {
		slog.Debug("prompt cache off: cannot identify the model file", "err", err)
		return nil
	}
	pc := &promptCache{
		store: promptcache.Store{Dir: o.PromptCacheDir, Max: o.PromptCacheMax},
		key: promptcache.Key{Model: path, ModelSize: st.Size(), ModelMTime: st.ModTime().UnixNano(),
			CtxSize: o.CtxSize, BatchSize: o.BatchSize, KVType: o.KVCacheType, FlashAttn: o.flashAttnOn(),
			Build: buildID()},
		saved: map[string]bool{},
	}
	if o.GPULayers > 0 && len(b.gpus) > 0 {
		pc.key.GPU = fmt.Sprintf("%d layers on %s", o.GPULayers, strings.Join(b.gpus, ", "))
	}
	empty, err := seqState(b.lc, 0)
	if head, n, ok := stateLayout(empty, o.Parallel); err == nil && ok {
		pc.streams, pc.header = n, empty[:head]
		pc.key.Layout = fmt.Sprintf("kv-sequence-1+%d", head)
	} else {
		pc.key.Layout = fmt.Sprintf("raw-%d-%d", len(empty), o.Parallel)
	}
	return pc
}

// stateLayout reads an empty sequence's state, seqs sequences in the
// context: for a plain KV cache it is a header (none, or the runtime's
// magic word and sequence id: 8 bytes), the stream count and a zero cell
// count a stream (one stream a sequence when split, one in all when
// unified). ok is false for other memory (sliding window, recurrent).
func stateLayout(empty []byte, seqs int) (head, streams int, ok bool) {
	for _, head := range []int{0, 8} {
		rest := empty[min(head, len(empty)):]
		n := len(rest)/4 - 1
		if len(rest)%4 != 0 || (n != 1 && n != seqs) || binary.LittleEndian.Uint32(rest) != uint32(n) {
			continue
		}
		if slices.ContainsFunc(rest[4:], func(b byte) bool { return b != 0 }) {
			continue
		}
		return head, n, true
	}
	return 0, 0, false
}

var buildOnce = sync.OnceValue(func() string {
	id := "tact " + buildinfo.Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				id += ", " + s.Key + "=" + s.Value
			}
		}
	}
	return id
})

// buildID names the build that computes KV states: tact's version and the
// provider's llama.cpp (its version, or the module and flags it was
// compiled from). A variable for the tests.
var buildID = func() string { return buildOnce() + "; " + prov.buildID() }

// pinnedPrefix is the prompt's persistable prefix: the tokens of req's
// first PersistableMessages messages as the chat template formats them,
// when tokens (the whole prompt) starts with exactly them and goes on
// after them; else nil. b.mu is held.
func (b *Backend) pinnedPrefix(req llm.Request, tokens []int) []int {
	pc := b.pc
	k := min(req.PersistableMessages, len(req.Messages))
	if pc == nil || k <= 0 {
		return nil
	}
	text, err := b.formatMessages(req.Messages[:k], false)
	if err != nil {
		return nil
	}
	if text != pc.pinned.text || pc.pinned.tokens == nil {
		t, err := b.tokenizePrompt(text)
		if err != nil {
			return nil
		}
		pc.pinned.text, pc.pinned.tokens = text, t
	}
	pin := pc.pinned.tokens
	if len(pin) < minPinned || len(pin) >= len(tokens) || !slices.Equal(tokens[:len(pin)], pin) {
		return nil
	}
	return tokens[:len(pin):len(pin)]
}

// loadSeq reads pin's entry into sequence seq. On a miss or an entry that
// cannot be trusted the sequence is untouched; cleared says it was emptied
// (it holds pin when loaded).
func (b *Backend) loadSeq(seq int, pin []int) (loaded, cleared bool) {
	pc := b.pc
	start := time.Now()
	frame := promptcache.Frame{}
	if pc.streams > 0 {
		frame = promptcache.Frame{Before: len(pc.header) + 4, After: 4 * (pc.streams - 1)}
	}
	buf, err := pc.store.Load(pc.key, pin, frame)
	if err != nil {
		var bad *promptcache.BadEntryError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			slog.Debug("prompt cache miss", "tokens", len(pin), "file", pc.store.Path(pc.key, pin))
		case errors.As(err, &bad):
			slog.Debug("prompt cache entry ignored; it will be replaced", "file", bad.Path, "why", bad.Why)
		default:
			slog.Debug("prompt cache entry unreadable", "err", err)
		}
		return false, false
	}
	if pc.streams > 0 {
		copy(buf, pc.header)
		binary.LittleEndian.PutUint32(buf[len(pc.header):], uint32(pc.streams))
	}
	b.lc.KvCacheSeqRm(seq, -1, -1)
	if err := setSeqState(b.lc, seq, buf); err != nil {
		b.lc.KvCacheSeqRm(seq, -1, -1)
		slog.Debug("prompt cache entry ignored; it will be replaced", "file", pc.store.Path(pc.key, pin), "why", err)
		return false, true
	}
	took := time.Since(start)
	b.statsMu(func(st *Stats) {
		st.DiskLoads++
		st.DiskLoaded += len(pin)
		st.DiskLoadTime += took
		st.DiskFileBytes = int64(len(buf))
	})
	slog.Debug("prompt cache loaded", "tokens", len(pin), "bytes", len(buf), "ms", float64(took.Microseconds())/1000, "file", pc.store.Path(pc.key, pin))
	return true, true
}

// statsMu updates the stats under b.mu (the scheduler goroutine does not
// hold it).
func (b *Backend) statsMu(f func(*Stats)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.stats)
}

// saveSeq writes sequence seq's state, which holds exactly pin, to pin's
// entry, and returns the time it took. Failures are debug lines: the cache
// only ever saves time.
func (b *Backend) saveSeq(seq int, pin []int) time.Duration {
	pc := b.pc
	start := time.Now()
	state, err := seqState(b.lc, seq)
	if err == nil && pc.streams > 0 {
		state, err = streamPart(state, len(pc.header), pc.streams, seq)
	}
	if err == nil {
		err = pc.store.Save(pc.key, pin, state)
	}
	took := time.Since(start)
	if err != nil {
		slog.Debug("prompt cache entry not saved", "tokens", len(pin), "err", err)
		return took
	}
	b.statsMu(func(st *Stats) {
		st.DiskSaves++
		st.DiskSaveTime += took
		st.DiskFileBytes = int64(len(state))
	})
	slog.Debug("prompt cache saved", "tokens", len(pin), "bytes", len(state), "ms", float64(took.Microseconds())/1000, "file", pc.store.Path(pc.key, pin))
	return took
}

// streamPart is the part of a plain KV cache's sequence state that belongs
// to the stream of seq: the state without its header, its stream count
// and the other streams' zero cell counts. An unexpected shape is an error
// (nothing is saved).
func streamPart(state []byte, head, streams, seq int) ([]byte, error) {
	s := 0 // the stream holding seq: its own when split, the one otherwise
	if streams > 1 {
		s = seq
	}
	lead, trail := head+4+4*s, 4*(streams-1-s)
	if len(state) < lead+4+trail || binary.LittleEndian.Uint32(state[head:]) != uint32(streams) {
		return nil, errors.New("unexpected sequence state layout")
	}
	for _, w := range [][]byte{state[head+4 : lead], state[len(state)-trail:]} {
		for i := 0; i < len(w); i += 4 {
			if binary.LittleEndian.Uint32(w[i:]) != 0 {
				return nil, errors.New("sequence state holds cells of other streams")
			}
		}
	}
	return state[lead : len(state)-trail], nil
}

// seedSlot is the scheduler's hook (sched.start): when the slot a job got
// does not hold the job's pinned prefix (j.pin, found by the caller), it
// loads it from disk into the slot's sequence and returns the tokens
// loaded. On a miss j.savePin is the prefix, to be saved once the slot has
// evaluated it.
func (b *Backend) seedSlot(sl *slot, j *job) int {
	pin := j.pin
	if b.pc == nil || len(pin) == 0 || commonPrefix(sl.cache, pin) == len(pin) {
		return 0
	}
	defer func() {
		if len(sl.cache) < len(pin) && b.pc.unsaved(pin) {
			j.savePin = pin
		}
	}()
	loaded, cleared := b.loadSeq(sl.seq, pin)
	if cleared {
		sl.cache = sl.cache[:0]
	}
	if !loaded {
		return 0
	}
	sl.cache = append(sl.cache, pin...)
	return len(pin)
}

// warmKind names Warm's calls in debug lines.
const warmKind llm.Kind = "warm"

// Warm readies msgs, a persistable system prompt, for the calls that will
// start with it (llm.Warmer): the prefix is loaded from the prompt cache,
// or evaluated and saved there, and stays in a sequence the next calls
// reuse or copy. It is one call of a single generated token with a
// placeholder user message after msgs, so it takes the path every call
// takes.
func (b *Backend) Warm(ctx context.Context, msgs []llm.Message) (llm.Usage, error) {
	if len(msgs) == 0 {
		return llm.Usage{}, nil
	}
	req := llm.Request{Kind: warmKind, MaxTokens: 1, PersistableMessages: len(msgs),
		Messages: append(slices.Clip(msgs), llm.Message{Role: llm.RoleUser, Content: "."})}
	resp, err := b.Complete(ctx, req)
	return resp.Usage, err
}
