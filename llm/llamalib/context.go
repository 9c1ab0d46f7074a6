package llamalib

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Errors Decode returns (llama_decode's status codes 1 and 2).
var (
	// ErrKVFull: no room in the KV cache for the batch.
	ErrKVFull = errors.New("llama.cpp: no KV cache slot for the batch")
	// ErrAborted: the abort flag was set while the batch was computed.
	ErrAborted = errors.New("llama.cpp: decode aborted")
)

// Context is a llama_context: a KV cache of one or more sequences and the
// compute buffers. It is not safe for concurrent use, except SetAbort and
// LogitsIth (after a decode, from several goroutines).
type Context struct {
	l         *Lib
	m         *Model
	p         unsafe.Pointer
	mem       unsafe.Pointer // llama_memory_t
	abort     unsafe.Pointer // C memory: the abort flag, see SetAbort
	tp, tpBat unsafe.Pointer // threadpools attached (nil: ggml's own per decode)
}

// ContextOptions configures NewContext. Zero values take llama.cpp's
// defaults except where noted.
type ContextOptions struct {
	CtxSize   int   // KV cells in all (each sequence gets CtxSize/Seqs when split)
	BatchSize int   // most tokens one Decode takes (n_batch)
	UBatch    int   // tokens computed at once (n_ubatch); 0: BatchSize
	Seqs      int   // sequences; 0: 1
	Threads   int   // threads for generation and batches
	FlashAttn int32 // FlashAttnAuto, FlashAttnDisabled (the zero value) or FlashAttnEnabled
	TypeK     int32 // KV cache types (TypeF16 when 0)
	TypeV     int32
	KVUnified bool // one KV buffer for all sequences instead of one stream each
}

// NewContext creates a context on m.
func (m *Model) NewContext(o ContextOptions) (*Context, error) {
	l := m.l
	p := l.a.llamaContextDefaultParams()
	p.NCtx = uint32(o.CtxSize)
	if o.BatchSize > 0 {
		p.NBatch = uint32(o.BatchSize)
		p.NUbatch = uint32(o.BatchSize)
	}
	if o.UBatch > 0 {
		p.NUbatch = uint32(o.UBatch)
	}
	p.NSeqMax = uint32(max(o.Seqs, 1))
	if o.Threads > 0 {
		p.NThreads, p.NThreadsBatch = int32(o.Threads), int32(o.Threads)
	}
	p.FlashAttnType = o.FlashAttn
	if o.TypeK != 0 {
		p.TypeK = o.TypeK
	}
	if o.TypeV != 0 {
		p.TypeV = o.TypeV
	}
	p.KVUnified = o.KVUnified
	flag := l.malloc(8)
	if flag == nil {
		return nil, errors.New("out of memory")
	}
	*(*uint64)(flag) = 0
	// The abort flag goes in with the parameters, so no decode ever runs
	// without it (llama.cpp passes it to each backend it creates).
	p.AbortCallback, p.AbortCallbackData = l.strlen, flag
	c := l.a.llamaInitFromModel(m.p, p)
	if c == nil {
		l.free(flag)
		return nil, fmt.Errorf("llama.cpp cannot create a context of %d tokens (run with logs on to see why)", o.CtxSize)
	}
	return &Context{l: l, m: m, p: c, mem: l.a.llamaGetMemory(c), abort: flag}, nil
}

// Free releases the context (and its threadpools).
func (c *Context) Free() {
	if c.p == nil {
		return
	}
	c.l.a.llamaFree(c.p)
	c.p = nil
	c.freeThreadpools()
	c.l.free(c.abort)
	c.abort = nil
}

// Model is the model the context was made from.
func (c *Context) Model() *Model { return c.m }

// NCtx is the context's KV cells in all; NSeqMax its sequences.
func (c *Context) NCtx() int { return int(c.l.a.llamaNCtx(c.p)) }

// NSeqMax is the sequences the context holds.
func (c *Context) NSeqMax() int { return int(c.l.a.llamaNSeqMax(c.p)) }

// Decode computes batch: its tokens go into the KV cache and the logits
// it asks for become readable with LogitsIth. ErrKVFull and ErrAborted
// leave the cache as it was before the call, as far as llama.cpp rolls
// back (an abort keeps the ubatches finished before it: the caller trims
// its sequences).
func (c *Context) Decode(b *Batch) error {
	b.c.NTokens = int32(b.n)
	switch rc := c.l.a.llamaDecode(c.p, b.c); {
	case rc == 0:
		return nil
	case rc == 1:
		return ErrKVFull
	case rc == 2:
		return ErrAborted
	case rc == -1:
		return errors.New("llama.cpp decode: invalid batch")
	default:
		return fmt.Errorf("llama.cpp decode failed (%d)", rc)
	}
}

// LogitsIth is the logits of the batch's i-th output token (NVocab floats
// in llama.cpp's memory, valid until the next Decode); nil when there are
// none. The first call after a decode reorders llama.cpp's outputs, so
// make it before calling it from several goroutines.
func (c *Context) LogitsIth(i int) []float32 {
	p := c.l.a.llamaGetLogitsIth(c.p, int32(i))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(p), c.m.nVocab)
}

// SetThreads sets the threads of the next decodes (generation, batches).
func (c *Context) SetThreads(n, nBatch int) {
	c.l.a.llamaSetNThreads(c.p, int32(n), int32(nBatch))
}

// The abort flag is a word in C memory that llama.cpp's abort callback
// reads while it computes (ggml's CPU backend asks between graph nodes,
// on the thread that called Decode). The callback is libc's strlen on the
// flag's bytes: it returns 1 when the first byte is set and 0 when it is
// not, which is what a bool-returning callback with a void* argument
// returns, with nothing of Go's run per node (a Go callback would cost a
// scheduler round trip hundreds of times a decode). The word is written
// with atomic stores; its first byte is the flag on a little-endian CPU,
// the last on a big-endian one (abortOn is whichever makes byte 0 set).
var abortOn = func() uint32 {
	x := uint32(1)
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return 1
	}
	return 1 << 24
}()

// SetAbort raises or clears the abort flag; safe from any goroutine. A
// decode in flight when it is raised returns ErrAborted.
func (c *Context) SetAbort(on bool) {
	v := uint32(0)
	if on {
		v = abortOn
	}
	atomic.StoreUint32((*uint32)(c.abort), v)
}

// Aborting reports whether the abort flag is raised.
func (c *Context) Aborting() bool { return atomic.LoadUint32((*uint32)(c.abort)) != 0 }

// SeqRm removes sequence seq's cells at positions [p0, p1) (negative:
// open ends; seq < 0: every sequence). False when a part of the sequence
// cannot be removed (recurrent memory); a whole sequence always can.
func (c *Context) SeqRm(seq, p0, p1 int) bool {
	return c.l.a.llamaMemorySeqRm(c.mem, int32(seq), int32(p0), int32(p1))
}

// SeqCp copies sequence src's cells at [p0, p1) to dst. With a split KV
// cache only whole streams copy (p0 = p1 = -1).
func (c *Context) SeqCp(src, dst, p0, p1 int) {
	c.l.a.llamaMemorySeqCp(c.mem, int32(src), int32(dst), int32(p0), int32(p1))
}

// SeqKeep removes every sequence but seq.
func (c *Context) SeqKeep(seq int) { c.l.a.llamaMemorySeqKeep(c.mem, int32(seq)) }

// SeqAdd shifts the positions [p0, p1) of seq by delta.
func (c *Context) SeqAdd(seq, p0, p1, delta int) {
	c.l.a.llamaMemorySeqAdd(c.mem, int32(seq), int32(p0), int32(p1), int32(delta))
}

// SeqPosMin and SeqPosMax are seq's smallest and largest positions (-1:
// empty).
func (c *Context) SeqPosMin(seq int) int { return int(c.l.a.llamaMemorySeqPosMin(c.mem, int32(seq))) }

// SeqPosMax is seq's largest position (-1: empty).
func (c *Context) SeqPosMax(seq int) int { return int(c.l.a.llamaMemorySeqPosMax(c.mem, int32(seq))) }

// StateSeqSize is the bytes of sequence seq's state (StateSeqGet).
func (c *Context) StateSeqSize(seq int) int { return int(c.l.a.llamaStateSeqGetSize(c.p, int32(seq))) }

// StateSeqGet copies sequence seq's state into buf and returns the bytes
// written (0: buf too small or no state).
func (c *Context) StateSeqGet(seq int, buf []byte) int {
	if len(buf) == 0 {
		return 0
	}
	return int(c.l.a.llamaStateSeqGetData(c.p, &buf[0], uintptr(len(buf)), int32(seq)))
}

// StateSeqSet loads a state StateSeqGet wrote into sequence seq and
// returns the bytes read (0: refused; the sequence may hold part of it).
func (c *Context) StateSeqSet(seq int, buf []byte) int {
	if len(buf) == 0 {
		return 0
	}
	return int(c.l.a.llamaStateSeqSetData(c.p, &buf[0], uintptr(len(buf)), int32(seq)))
}

// AttachThreadpool gives the context a threadpool of threads workers
// with ggml's polling level poll (0: workers sleep between graphs and
// wait on a condition, 100: they spin; ggml's own pool uses 50), kept
// across decodes. SetThreads may then use at most threads. It replaces a
// pool attached before; an error when the CPU backend offers none.
func (c *Context) AttachThreadpool(threads, poll int) error {
	l := c.l
	if l.threadpoolNew == nil {
		return errors.New("llama.cpp's CPU backend offers no threadpool")
	}
	var p threadpoolParams
	l.a.ggmlThreadpoolParamsInit(&p, int32(threads))
	p.Poll = uint32(min(max(poll, 0), 100))
	tp := l.threadpoolNew(&p)
	if tp == nil {
		return fmt.Errorf("llama.cpp cannot start a threadpool of %d threads", threads)
	}
	l.a.llamaAttachThreadpool(c.p, tp, tp)
	c.freeThreadpools()
	c.tp = tp
	return nil
}

func (c *Context) freeThreadpools() {
	if c.tp == nil {
		return
	}
	if c.p != nil {
		c.l.a.llamaDetachThreadpool(c.p)
	}
	c.l.threadpoolFree(c.tp)
	c.tp = nil
}

// Batch is a llama_batch of tokens, in C memory.
type Batch struct {
	l      *Lib
	c      cBatch
	n      int // tokens added
	size   int
	seqMax int
	tok    []int32
	pos    []int32
	nSeq   []int32
	seqs   []unsafe.Pointer
	logits []int8
}

// NewBatch allocates a batch of up to size tokens, each in up to seqMax
// sequences.
func (l *Lib) NewBatch(size, seqMax int) (*Batch, error) {
	if size <= 0 || seqMax <= 0 {
		return nil, fmt.Errorf("batch of %d tokens in %d sequences", size, seqMax)
	}
	c := l.a.llamaBatchInit(int32(size), 0, int32(seqMax))
	if c.Token == nil || c.Pos == nil || c.NSeqID == nil || c.SeqID == nil || c.Logits == nil {
		l.a.llamaBatchFree(c)
		return nil, fmt.Errorf("cannot allocate a batch of %d tokens", size)
	}
	b := &Batch{l: l, c: c, size: size, seqMax: seqMax,
		tok:    unsafe.Slice((*int32)(c.Token), size),
		pos:    unsafe.Slice((*int32)(c.Pos), size),
		nSeq:   unsafe.Slice((*int32)(c.NSeqID), size),
		seqs:   unsafe.Slice((*unsafe.Pointer)(c.SeqID), size),
		logits: unsafe.Slice((*int8)(c.Logits), size),
	}
	for _, s := range b.seqs {
		if s == nil {
			l.a.llamaBatchFree(c)
			return nil, fmt.Errorf("cannot allocate a batch of %d tokens", size)
		}
	}
	return b, nil
}

// Clear empties the batch.
func (b *Batch) Clear() { b.n = 0 }

// Len is the tokens added since Clear; Cap how many fit.
func (b *Batch) Len() int { return b.n }

// Cap is the batch's size.
func (b *Batch) Cap() int { return b.size }

// Add appends token tok at position pos of sequence seq, asking for its
// logits when logits. It panics when the batch is full (a caller bug).
func (b *Batch) Add(tok int32, pos int, logits bool, seq int) {
	i := b.n
	b.tok[i] = tok
	b.pos[i] = int32(pos)
	b.nSeq[i] = 1
	unsafe.Slice((*int32)(b.seqs[i]), b.seqMax)[0] = int32(seq)
	b.logits[i] = 0
	if logits {
		b.logits[i] = 1
	}
	b.n++
}

// Free releases the batch.
func (b *Batch) Free() {
	if b.c.Token != nil {
		b.l.a.llamaBatchFree(b.c)
		b.c = cBatch{}
	}
}
