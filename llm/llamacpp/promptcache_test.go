package llamacpp

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/promptcache"
	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/llm"
)

// cachedTiny is newTiny with the prompt cache in dir.
func cachedTiny(t *testing.T, dir string, mod func(*Options)) *Backend {
	t.Helper()
	return newTiny(t, func(o *Options) {
		o.PromptCacheDir, o.PromptCacheMax = dir, 1<<30
		if mod != nil {
			mod(o)
		}
	})
}

// pinnedReq is a greedy call whose system prompt (longSystem) may be
// persisted and whose user message holds the query.
func pinnedReq(query string) llm.Request {
	return llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: longSystem()},
			{Role: llm.RoleUser, Content: "Query: " + query},
		},
		PersistableMessages: 1,
		MaxTokens:           8,
		Sampling:            llm.Sampling{Temperature: 0},
	}
}

// prompt returns req's prompt tokens and pinned prefix on b.
func prompt(t *testing.T, b *Backend, req llm.Request) (tokens, pin []int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	tokens, err := b.promptTokens(req.Messages)
	if err != nil {
		t.Fatal(err)
	}
	pin = b.pinnedPrefix(req, tokens)
	if len(pin) < minPinned {
		t.Fatalf("no pinned prefix (%d of %d tokens)", len(pin), len(tokens))
	}
	return tokens, slices.Clone(pin)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+promptcache.Ext))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func complete(t *testing.T, b *Backend, req llm.Request) llm.Response {
	t.Helper()
	r, err := b.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// copyModel copies the tiny model into a new file (tests change its
// identity without touching the shared cached one).
func copyModel(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(synth.Cached(t, synth.Tiny))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The provider's reach into llama.cpp's state: llama.cpp reports the
// context tact asked for, and an empty sequence's state has the layout
// promptcache.go frames (a stream count and one zero cell count a
// stream). A llama.cpp upgrade that changes any of it fails here.
func TestKVStateReach(t *testing.T) {
	for _, par := range []int{1, 3} {
		b := newTiny(t, func(o *Options) { o.Parallel = par })
		cells, seqs := b.lc.shape()
		if seqs != par || cells < b.opts.CtxSize*par {
			t.Fatalf("Parallel %d: llama.cpp reports %d cells, %d sequences; want %d sequences, %d cells at least",
				par, cells, seqs, par, b.opts.CtxSize*par)
		}
		empty, err := seqState(b.lc, 0)
		if _, n, ok := stateLayout(empty, par); err != nil || !ok || n != par {
			t.Fatalf("Parallel %d: an empty sequence's state is % x (%v): not a header, %d streams and their zero cell counts; llama.cpp's state layout changed (see promptcache.go)", par, empty, err, par)
		}
	}
}

// A loaded prefix gives the same next-token logits as evaluating it: the
// cold process evaluates the prefix, saves it, then the rest of the prompt;
// the warm one loads it and evaluates the same rest.
func TestPromptCacheSameLogits(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	req := pinnedReq("what does main.go do?")
	logits := func(b *Backend, wantDisk bool) []float32 {
		t.Helper()
		tokens, pin := prompt(t, b, req)
		var got []float32
		b.sched.decodedHook = func(s *sched, batch []*job) {
			for _, j := range batch {
				if j.idx >= 0 && j.last < 0 && j.next+j.inBatch == len(tokens) {
					got = slices.Clone(b.lc.logits(j.idx))
				}
			}
		}
		r, err := b.Complete(ctx, llm.Request{Messages: req.Messages, PersistableMessages: req.PersistableMessages, MaxTokens: 1})
		if err != nil {
			t.Fatal(err)
		}
		if disk := r.Usage.DiskCachedTokens; (disk == len(pin)) != wantDisk || (disk != 0 && disk != len(pin)) {
			t.Fatalf("loaded %d tokens of a %d-token prefix; want a load: %v", disk, len(pin), wantDisk)
		}
		if got == nil {
			t.Fatal("no decode ended the prompt")
		}
		return got
	}
	cold := logits(cachedTiny(t, dir, nil), false)
	if n := len(entries(t, dir)); n != 1 {
		t.Fatalf("%d files after the cold call, want 1", n)
	}
	warm := logits(cachedTiny(t, dir, nil), true)
	if !slices.Equal(cold, warm) {
		t.Fatal("the loaded prefix gives other logits than the evaluated one")
	}
}

// End to end through Complete: the second backend (a later process) loads
// the prefix, reports it as disk-cached, answers the same, and loads it
// only once however many calls share it.
func TestPromptCacheWarmStart(t *testing.T) {
	dir := t.TempDir()
	req := pinnedReq("what does main.go do?")
	a := cachedTiny(t, dir, nil)
	tokens, pin := prompt(t, a, req)
	cold := complete(t, a, req)
	if cold.Usage.DiskCachedTokens != 0 || cold.Usage.PromptTokens != len(tokens) {
		t.Fatalf("cold usage %+v, want all %d tokens evaluated", cold.Usage, len(tokens))
	}
	if st := a.Stats(); st.DiskSaves != 1 || st.DiskLoads != 0 || st.DiskFileBytes == 0 {
		t.Fatalf("cold stats %+v", st)
	}
	files := entries(t, dir)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if stored, err := promptcache.Tokens(files[0]); err != nil || !slices.Equal(stored, pin) {
		t.Fatalf("the file holds %d tokens (%v), want the %d of the prefix", len(stored), err, len(pin))
	}
	if st, _ := os.Stat(files[0]); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", st.Mode())
	}

	b := cachedTiny(t, dir, nil)
	warm := complete(t, b, req)
	if want := (llm.Usage{PromptTokens: len(tokens) - len(pin), CachedTokens: len(pin), DiskCachedTokens: len(pin),
		CompletionTokens: warm.Usage.CompletionTokens, CPUWaitMS: warm.Usage.CPUWaitMS, FirstTokenMS: warm.Usage.FirstTokenMS}); warm.Usage != want {
		t.Fatalf("warm usage %+v, want %+v", warm.Usage, want)
	}
	if warm.Text != cold.Text {
		t.Fatalf("warm reply %q, cold %q", warm.Text, cold.Text)
	}
	// The same prefix again (another query): from memory, not from disk.
	again := complete(t, b, pinnedReq("and util.go?"))
	if again.Usage.DiskCachedTokens != 0 || again.Usage.CachedTokens < len(pin) {
		t.Fatalf("second call usage %+v", again.Usage)
	}
	if st := b.Stats(); st.DiskLoads != 1 || st.DiskSaves != 0 || st.DiskLoaded != len(pin) {
		t.Fatalf("warm stats %+v, want one load and no save", st)
	}
	if len(entries(t, dir)) != 1 {
		t.Fatal("the warm process wrote a file")
	}
	// Another system prompt pushes the prefix out of the KV cache; coming
	// back loads it again rather than evaluating it.
	other := pinnedReq("x")
	other.Messages[0].Content = strings.ToUpper(longSystem())
	complete(t, b, other)
	back := complete(t, b, req)
	if back.Usage.DiskCachedTokens != len(pin) || back.Text != cold.Text {
		t.Fatalf("back to the first prefix: usage %+v, text %q", back.Usage, back.Text)
	}
}

// A different model file, context size, KV cache type, flash attention or
// batch size misses (and saves its own entry).
func TestPromptCacheMisses(t *testing.T) {
	req := pinnedReq("what does main.go do?")
	small := synth.Cached(t, synth.Small) // head size 32: a quantized KV cache works
	for _, c := range []struct {
		name      string
		base, mod func(*Options)
	}{
		{"another model file", nil, func(o *Options) { o.ModelPath = copyModel(t) }},
		{"the model file changed", nil, func(o *Options) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(o.ModelPath, later, later); err != nil {
				t.Fatal(err)
			}
		}},
		{"context size", nil, func(o *Options) { o.CtxSize = 2048 }},
		{"batch size", nil, func(o *Options) { o.BatchSize = 32 }},
		{"flash attention", func(o *Options) { o.FlashAttn = "off" }, func(o *Options) { o.FlashAttn = "on" }},
		{"KV cache type", func(o *Options) { o.ModelPath, o.FlashAttn = small, "on" },
			func(o *Options) { o.ModelPath, o.FlashAttn, o.KVCacheType = small, "on", "q8_0" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			model := copyModel(t)
			base := func(o *Options) {
				o.ModelPath = model
				if c.base != nil {
					c.base(o)
				}
			}
			complete(t, cachedTiny(t, dir, base), req)
			b := cachedTiny(t, dir, func(o *Options) { base(o); c.mod(o) })
			r := complete(t, b, req)
			if r.Usage.DiskCachedTokens != 0 || b.Stats().DiskLoads != 0 {
				t.Fatalf("a hit across %s: usage %+v", c.name, r.Usage)
			}
			if n := len(entries(t, dir)); n != 2 {
				t.Fatalf("%d files, want 2 (one a key)", n)
			}
		})
	}
}

// Entries are named by the llama.cpp that computed them: the runtime's
// release, directory and CPU library, or the cgo build's module and
// flags. A state saved by one llama.cpp is never loaded by another.
func TestPromptCacheOtherLlamaCpp(t *testing.T) {
	dir := t.TempDir()
	req := pinnedReq("what does main.go do?")
	a := cachedTiny(t, dir, nil)
	id := buildID()
	want := []string{"github.com/ollama/ollama v0.17.4", "CGO_CFLAGS="}
	if ProviderName == "runtime" {
		want = []string{"llama.cpp runtime 0.5.0", testRuntimeDir(t), "libggml-cpu-"}
	}
	for _, w := range want {
		if !strings.Contains(id, w) {
			t.Errorf("buildID() = %q, want it to name %q", id, w)
		}
	}
	complete(t, a, req)

	old := buildID
	buildID = func() string { return old() + ", another llama.cpp" }
	b := cachedTiny(t, dir, nil)
	buildID = old
	r := complete(t, b, req)
	if r.Usage.DiskCachedTokens != 0 || b.Stats().DiskLoads != 0 {
		t.Fatalf("another llama.cpp loaded the state: usage %+v", r.Usage)
	}
	if n := len(entries(t, dir)); n != 2 {
		t.Fatalf("%d files, want 2 (one a llama.cpp)", n)
	}
	// The first llama.cpp still finds its own.
	c := cachedTiny(t, dir, nil)
	if r := complete(t, c, req); r.Usage.DiskCachedTokens == 0 {
		t.Fatalf("the same llama.cpp missed its entry: usage %+v", r.Usage)
	}
}

// Truncated, corrupt and mismatching files are ignored (the call evaluates
// the prefix and answers the same) and replaced by a good one.
func TestPromptCacheBadFilesReplaced(t *testing.T) {
	req := pinnedReq("what does main.go do?")
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, a *Backend, pin []int, path string)
	}{
		{"truncated", func(t *testing.T, _ *Backend, _ []int, path string) {
			st, _ := os.Stat(path)
			if err := os.Truncate(path, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"flipped byte", func(t *testing.T, _ *Backend, _ []int, path string) {
			data, _ := os.ReadFile(path)
			data[len(data)-100] ^= 0x40
			os.WriteFile(path, data, 0o600)
		}},
		{"zeroed", func(t *testing.T, _ *Backend, _ []int, path string) {
			st, _ := os.Stat(path)
			os.WriteFile(path, make([]byte, st.Size()), 0o600)
		}},
		{"another key's file", func(t *testing.T, a *Backend, pin []int, path string) {
			k := a.pc.key
			k.CtxSize++
			data, _ := os.ReadFile(path)
			s := promptcache.Store{Dir: t.TempDir(), Max: 1 << 30}
			payload := data[len(data)-int(a.Stats().DiskFileBytes):]
			if err := s.Save(k, pin, payload); err != nil {
				t.Fatal(err)
			}
			os.Rename(s.Path(k, pin), path)
		}},
		// A checksum that matches a state llama.cpp cannot read (cut
		// short): llama.cpp refuses it, the sequence is cleared.
		{"state llama.cpp refuses", func(t *testing.T, a *Backend, pin []int, path string) {
			buf, err := a.pc.store.Load(a.pc.key, pin, promptcache.Frame{})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.pc.store.Save(a.pc.key, pin, buf[:len(buf)-300]); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a := cachedTiny(t, dir, nil)
			cold := complete(t, a, req)
			_, pin := prompt(t, a, req)
			path := entries(t, dir)[0]
			c.spoil(t, a, pin, path)

			b := cachedTiny(t, dir, nil)
			r := complete(t, b, req)
			if r.Usage.DiskCachedTokens != 0 || r.Text != cold.Text {
				t.Fatalf("with a bad file: usage %+v, reply %q (cold %q)", r.Usage, r.Text, cold.Text)
			}
			if st := b.Stats(); st.DiskSaves != 1 {
				t.Fatalf("the bad file was not replaced: %+v", st)
			}
			w := complete(t, cachedTiny(t, dir, nil), req)
			if w.Usage.DiskCachedTokens != len(pin) || w.Text != cold.Text {
				t.Fatalf("after the replacement: usage %+v, reply %q", w.Usage, w.Text)
			}
		})
	}
}

// Two processes' worth of backends saving the same entry at once: the
// entry ends whole and loads.
func TestPromptCacheConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	req := pinnedReq("what does main.go do?")
	var bs []*Backend
	for range 3 {
		bs = append(bs, cachedTiny(t, dir, func(o *Options) { o.NoCPULock = true }))
	}
	var wg sync.WaitGroup
	for _, b := range bs {
		wg.Go(func() {
			if _, err := b.Complete(context.Background(), req); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	des, _ := os.ReadDir(dir)
	if len(des) != 1 {
		t.Fatalf("%d files, want the entry alone (no temporary files)", len(des))
	}
	_, pin := prompt(t, bs[0], req)
	if r := complete(t, cachedTiny(t, dir, nil), req); r.Usage.DiskCachedTokens != len(pin) {
		t.Fatalf("the entry does not load: %+v", r.Usage)
	}
}

// The directory is capped: the least recently used entry goes.
func TestPromptCacheEviction(t *testing.T) {
	dir := t.TempDir()
	first, second := pinnedReq("q"), pinnedReq("q")
	second.Messages[0].Content = strings.ToUpper(longSystem())
	complete(t, cachedTiny(t, dir, nil), first)
	one := entries(t, dir)
	st, _ := os.Stat(one[0])
	// Room for one entry and a half.
	b := cachedTiny(t, dir, func(o *Options) { o.PromptCacheMax = st.Size() * 3 / 2 })
	complete(t, b, second)
	left := entries(t, dir)
	if len(left) != 1 || left[0] == one[0] {
		t.Fatalf("after a save over the cap: %v (the first was %v)", left, one)
	}
	// An entry over the cap is not written at all.
	tiny := cachedTiny(t, t.TempDir(), func(o *Options) { o.PromptCacheMax = 1000 })
	complete(t, tiny, first)
	if n := len(entries(t, tiny.opts.PromptCacheDir)); n != 0 || tiny.Stats().DiskSaves != 0 {
		t.Fatalf("a 1000-byte cap kept %d files", n)
	}
}

// Off (no directory), or a call that marks nothing persistable, or a
// prefix too short, or a prompt that does not start with the prefix's
// tokens: nothing is read or written.
func TestPromptCacheOff(t *testing.T) {
	req := pinnedReq("what does main.go do?")
	off := newTiny(t, nil)
	if r := complete(t, off, req); off.pc != nil || r.Usage.DiskCachedTokens != 0 || off.Stats().DiskSaves != 0 {
		t.Fatalf("no directory: %+v", off.Stats())
	}

	dir := t.TempDir()
	b := cachedTiny(t, dir, nil)
	none := req
	none.PersistableMessages = 0
	complete(t, b, none)
	short := pinnedReq("q")
	short.Messages[0].Content = "Be brief."
	complete(t, b, short)
	if n := len(entries(t, dir)); n != 0 {
		t.Fatalf("%d files written", n)
	}
	tokens, pin := prompt(t, b, req)
	changed := slices.Clone(tokens)
	changed[len(pin)/2]++
	b.mu.Lock()
	got := b.pinnedPrefix(req, changed)
	b.mu.Unlock()
	if got != nil {
		t.Fatal("a prompt that does not start with the prefix's tokens has a pinned prefix")
	}
}

// The query and the observations never reach a cache file: the file's
// token list is the system message's alone (as the chat template writes
// it), it reads back without them, and the state holds that many cells.
func TestPromptCacheNeverHoldsQuery(t *testing.T) {
	dir := t.TempDir()
	b := cachedTiny(t, dir, nil)
	req := pinnedReq("QUERY-MARKER-8812 list the secrets")
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: `{"thought":"look","tool":"read_file","args":{"path":"a"}}`},
		llm.Message{Role: llm.RoleUser, Content: "Observation: OBS-MARKER-5521 password=hunter2"})
	complete(t, b, req)
	files := entries(t, dir)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	stored, err := promptcache.Tokens(files[0])
	if err != nil {
		t.Fatal(err)
	}
	sys, err := b.format.Format(req.Messages[:1], false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := b.tokenizePrompt(sys)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stored, want) {
		t.Fatalf("the file holds %d tokens, not the %d of the system message", len(stored), len(want))
	}
	var text strings.Builder
	for _, tok := range stored {
		text.WriteString(b.model.TokenToPiece(tok))
	}
	for _, bad := range []string{"QUERY-MARKER", "OBS-MARKER", "hunter2", "Query:", "Observation"} {
		if strings.Contains(text.String(), bad) {
			t.Errorf("the cached tokens read %q", bad)
		}
	}
	if !strings.Contains(text.String(), "Every tool call is checked") {
		t.Error("the cached tokens are not the system prompt")
	}
	payload, err := b.pc.store.Load(b.pc.key, stored, promptcache.Frame{})
	if err != nil {
		t.Fatal(err)
	}
	if cells := binary.LittleEndian.Uint32(payload); int(cells) != len(stored) {
		t.Fatalf("the state holds %d cells, the prefix is %d tokens", cells, len(stored))
	}
	raw, _ := os.ReadFile(files[0])
	for _, bad := range []string{"QUERY-MARKER", "OBS-MARKER", "hunter2"} {
		if bytes.Contains(raw, []byte(bad)) {
			t.Errorf("the file's bytes hold %q", bad)
		}
	}
}

// --parallel: a prefix saved by a serial process seeds one sequence of a
// parallel context (framed for its streams), the others copy it from
// there: one load for many calls.
func TestPromptCacheSeedsParallel(t *testing.T) {
	dir := t.TempDir()
	req := pinnedReq("q0")
	complete(t, cachedTiny(t, dir, nil), req)
	saved, _ := os.ReadFile(entries(t, dir)[0])

	p := cachedTiny(t, dir, func(o *Options) { o.Parallel = 3 })
	_, pin := prompt(t, p, req)
	// Right after a seed, before any decode, the seeded sequence's state
	// read back is the file's payload.
	var mu sync.Mutex
	checked := 0
	p.sched.stepHook = func(s *sched) {
		for _, sl := range s.slots {
			if sl.job == nil || len(sl.cache) != len(pin) || sl.job.usage.DiskCachedTokens == 0 || sl.job.next != len(pin) {
				continue
			}
			state, err := seqState(s.b.lc, sl.seq)
			if err == nil {
				state, err = streamPart(state, len(s.b.pc.header), s.b.pc.streams, sl.seq)
			}
			mu.Lock()
			if err != nil || !bytes.HasSuffix(saved, state) {
				t.Errorf("sequence %d after the seed: %v, its state is not the file's", sl.seq, err)
			}
			checked++
			mu.Unlock()
		}
	}
	var reqs []llm.Request
	for i := range 6 {
		reqs = append(reqs, pinnedReq(strings.Repeat("q", i+1)))
	}
	disk := 0
	for i, r := range completeAll(p, nil, reqs) {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.resp.Usage.CachedTokens < len(pin) {
			t.Errorf("call %d: %+v, the prefix not reused", i, r.resp.Usage)
		}
		disk += r.resp.Usage.DiskCachedTokens
	}
	p.sched.stepHook = nil
	if st := p.Stats(); st.DiskLoads != 1 || disk != len(pin) || st.DiskSaves != 0 {
		t.Fatalf("%d loads, %d tokens from disk, %d saves; want one load of %d tokens, no save", st.DiskLoads, disk, st.DiskSaves, len(pin))
	}
	if checked == 0 {
		t.Fatal("no seeded sequence was checked")
	}
}

// --parallel on an empty cache: the sequence that evaluates the prefix
// stops its prompt chunks at the prefix's end and saves it there, once for
// all the calls; a later serial process loads that file and answers as
// one that evaluated the prefix itself.
func TestPromptCacheParallelSaves(t *testing.T) {
	dir := t.TempDir()
	p := cachedTiny(t, dir, func(o *Options) { o.Parallel = 3 })
	req := pinnedReq("q0")
	tokens, pin := prompt(t, p, req)
	var reqs []llm.Request
	for i := range 6 {
		reqs = append(reqs, pinnedReq(strings.Repeat("q", i+1)))
	}
	for i, r := range completeAll(p, nil, reqs) {
		if r.err != nil || r.resp.Usage.DiskCachedTokens != 0 {
			t.Fatalf("call %d: %+v, %v", i, r.resp.Usage, r.err)
		}
	}
	if st := p.Stats(); st.DiskSaves != 1 || st.DiskLoads != 0 {
		t.Fatalf("%d saves, %d loads; want one save", st.DiskSaves, st.DiskLoads)
	}
	files := entries(t, dir)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if stored, err := promptcache.Tokens(files[0]); err != nil || !slices.Equal(stored, pin) {
		t.Fatalf("the file holds %d tokens (%v), want the %d of the prefix", len(stored), err, len(pin))
	}
	payload, err := p.pc.store.Load(p.pc.key, pin, promptcache.Frame{})
	if err != nil {
		t.Fatal(err)
	}
	if cells := binary.LittleEndian.Uint32(payload); int(cells) != len(pin) {
		t.Fatalf("the state holds %d cells, the prefix is %d tokens", cells, len(pin))
	}

	want := complete(t, newTiny(t, nil), req) // no cache: evaluates it all
	warm := complete(t, cachedTiny(t, dir, nil), req)
	if warm.Usage.DiskCachedTokens != len(pin) || warm.Usage.PromptTokens != len(tokens)-len(pin) {
		t.Fatalf("serial process after the parallel one: %+v, want the %d-token prefix from disk", warm.Usage, len(pin))
	}
	if warm.Text != want.Text {
		t.Fatalf("reply from the loaded prefix %q, evaluated %q", warm.Text, want.Text)
	}
}

// Warm (tact serve at start) readies a system prompt: on an empty cache it
// evaluates and saves it, in a later process it loads it; either way the
// next call with that system prompt finds it in the KV cache. Serial and
// parallel alike.
func TestPromptCacheWarm(t *testing.T) {
	for _, par := range []int{1, 3} {
		dir := t.TempDir()
		req := pinnedReq("what does main.go do?")
		sys := req.Messages[:1]
		mod := func(o *Options) { o.Parallel = par }

		a := cachedTiny(t, dir, mod)
		_, pin := prompt(t, a, req)
		u, err := a.Warm(context.Background(), sys)
		if err != nil || u.DiskCachedTokens != 0 || u.PromptTokens < len(pin) {
			t.Fatalf("parallel %d: cold warm-up %+v, %v; want the prefix evaluated", par, u, err)
		}
		if st := a.Stats(); st.DiskSaves != 1 || len(entries(t, dir)) != 1 {
			t.Fatalf("parallel %d: %d saves, files %v after the cold warm-up", par, st.DiskSaves, entries(t, dir))
		}
		if r := complete(t, a, req); r.Usage.CachedTokens < len(pin) {
			t.Fatalf("parallel %d: the call after the warm-up %+v, want the %d-token prefix reused", par, r.Usage, len(pin))
		}

		b := cachedTiny(t, dir, mod)
		u, err = b.Warm(context.Background(), sys)
		if err != nil || u.DiskCachedTokens != len(pin) {
			t.Fatalf("parallel %d: warm-up of a later process %+v, %v; want the prefix loaded", par, u, err)
		}
		reqs := []llm.Request{req, pinnedReq("and util.go?")}
		for i, r := range completeAll(b, nil, reqs) {
			if r.err != nil || r.resp.Usage.CachedTokens < len(pin) || r.resp.Usage.DiskCachedTokens != 0 {
				t.Fatalf("parallel %d: call %d after the warm-up %+v, %v; want the prefix from memory", par, i, r.resp.Usage, r.err)
			}
		}
		if st := b.Stats(); st.DiskLoads != 1 || st.DiskSaves != 0 {
			t.Fatalf("parallel %d: %d loads, %d saves; want the one load of the warm-up", par, st.DiskLoads, st.DiskSaves)
		}
	}
}
