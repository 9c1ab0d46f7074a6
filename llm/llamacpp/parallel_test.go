package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tactcli/tact/llm"
)

func newTinyParallel(t *testing.T, n int, mod func(*Options)) *Backend {
	t.Helper()
	return newTiny(t, func(o *Options) {
		o.Parallel = n
		if mod != nil {
			mod(o)
		}
	})
}

// longSystem is a system prompt of several hundred tokens on the tiny
// model, shared by the calls of a test.
func longSystem() string {
	return "You are tact. Tools: read_file(path), list_dir(path, depth), run_command(argv). Reply with one JSON action.\n" +
		strings.Repeat("Every tool call is checked against the policy before it runs. ", 12)
}

func sharedPrefixMsgs(i int) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: longSystem()},
		{Role: llm.RoleUser, Content: fmt.Sprintf("Query %d: which file holds configuration %d?", i, i*7)},
	}
}

type result struct {
	resp llm.Response
	err  error
}

// completeAll runs reqs concurrently and returns their results in order.
func completeAll(b *Backend, ctxs []context.Context, reqs []llm.Request) []result {
	out := make([]result, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		ctx := context.Background()
		if ctxs != nil && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		wg.Go(func() {
			r, err := b.Complete(ctx, req)
			out[i] = result{r, err}
		})
	}
	wg.Wait()
	return out
}

// Many concurrent calls under a grammar on fewer sequences: every reply is
// valid, none is lost, and the batches held several sequences.
func TestParallelGrammarRepliesValidate(t *testing.T) {
	b := newTinyParallel(t, 4, nil)
	sch := compileSchema(t, actionSchema)
	var reqs []llm.Request
	for i := range 16 {
		reqs = append(reqs, llm.Request{Kind: llm.KindAction, Messages: conversation(i % 3), Schema: []byte(actionSchema),
			Sampling: llm.Sampling{Temperature: 1, Seed: i}, MaxTokens: 400})
	}
	for i, r := range completeAll(b, nil, reqs) {
		if r.err != nil {
			t.Fatalf("reply %d: %v", i, r.err)
		}
		if r.resp.Usage.CompletionTokens >= 400 {
			t.Fatalf("reply %d hit MaxTokens: %q", i, r.resp.Text)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(r.resp.Text))
		if err != nil {
			t.Fatalf("reply %d is not JSON: %v\n%s", i, err, r.resp.Text)
		}
		if err := sch.Validate(inst); err != nil {
			t.Fatalf("reply %d does not validate: %v\n%s", i, err, r.resp.Text)
		}
	}
	st := b.Stats()
	t.Logf("stats: %+v", st)
	if st.Calls != 16 || st.GrammarTokens != st.Generated || st.Generated == 0 {
		t.Errorf("stats %+v", st)
	}
	// Sixteen calls' tokens in far fewer decodes: sequences were batched.
	if st.Decodes >= st.Generated {
		t.Errorf("%d decodes for %d generated tokens: no batching", st.Decodes, st.Generated)
	}
}

// N calls with the same long system prompt evaluate it once: the others
// copy it from the first call's sequence. Greedy replies match the same
// requests answered one at a time, so the copied and batched KV cache is
// the evaluated one.
func TestParallelSharedPrefixEvaluatedOnce(t *testing.T) {
	const n = 4
	b := newTinyParallel(t, n, nil)
	var reqs []llm.Request
	var prompts [][]int
	for i := range n {
		m := sharedPrefixMsgs(i)
		reqs = append(reqs, llm.Request{Messages: m, MaxTokens: 12})
		p, err := b.promptTokens(m)
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p)
	}
	shared := len(prompts[0])
	total := 0
	for _, p := range prompts {
		shared = min(shared, commonPrefix(prompts[0], p))
		total += len(p)
	}
	if shared < 200 {
		t.Fatalf("shared prefix %d tokens: make the system prompt longer", shared)
	}
	res := completeAll(b, nil, reqs)
	evaluated, cached := 0, 0
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
		evaluated += r.resp.Usage.PromptTokens
		cached += r.resp.Usage.CachedTokens
		if r.resp.Usage.PromptTokens+r.resp.Usage.CachedTokens != len(prompts[i]) {
			t.Errorf("call %d: usage %+v for a %d-token prompt", i, r.resp.Usage, len(prompts[i]))
		}
	}
	st := b.Stats()
	t.Logf("prompts %d tokens in all, %d shared; evaluated %d, cached %d; stats %+v", total, shared, evaluated, cached, st)
	if evaluated > total-(n-1)*shared {
		t.Errorf("evaluated %d prompt tokens, want at most %d (the shared %d once)", evaluated, total-(n-1)*shared, shared)
	}
	if cached < (n-1)*shared || st.PromptCopied < (n-1)*shared || st.PromptReused != cached {
		t.Errorf("cached %d, copied %d; want at least %d", cached, st.PromptCopied, (n-1)*shared)
	}

	serial := newTiny(t, nil)
	for i, req := range reqs {
		serial.Reset()
		want, err := serial.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if res[i].resp.Text != want.Text {
			t.Errorf("call %d: parallel reply %q, alone %q", i, res[i].resp.Text, want.Text)
		}
	}

	// A second round finds the prefix in the idle sequences.
	again := completeAll(b, nil, reqs[:1])
	if u := again[0].resp.Usage; again[0].err != nil || u.CachedTokens < shared {
		t.Errorf("second round: %+v, %v", u, again[0].err)
	}
}

// Cancelling one call mid-generation ends only that call; the others'
// replies are what they would have been, and its sequence serves the next
// call.
func TestParallelCancelOne(t *testing.T) {
	b := newTinyParallel(t, 3, nil)
	reqs := make([]llm.Request, 3)
	for i := range reqs {
		reqs[i] = llm.Request{Messages: sharedPrefixMsgs(i), MaxTokens: 40}
	}
	// Reference replies, the three decoded together without a cancel.
	ref := completeAll(b, nil, reqs)
	for i, r := range ref {
		if r.err != nil {
			t.Fatalf("reference %d: %v", i, r.err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reqs[1].MaxTokens = 0
	reqs[1].Sampling = llm.Sampling{Temperature: 1, Seed: 3}
	// Cancelled from the scheduler once it has sampled 5 tokens, and held
	// until the cancel has reached the job (it travels through a goroutine
	// of context.AfterFunc): a caller's token callback, or that goroutine
	// on a busy machine, lags the scheduler by a varying few tokens.
	b.sched.stepHook = func(s *sched) {
		for _, j := range s.active {
			if j.req.Sampling.Seed == 3 && j.usage.CompletionTokens >= 5 && !j.cancelled.Load() {
				cancel()
				for deadline := time.Now().Add(5 * time.Second); !j.cancelled.Load() && time.Now().Before(deadline); {
					time.Sleep(100 * time.Microsecond)
				}
			}
		}
	}
	b.Reset()
	start := time.Now()
	got := completeAll(b, []context.Context{nil, ctx, nil}, reqs)
	b.sched.stepHook = nil
	if !errors.Is(got[1].err, context.Canceled) {
		t.Fatalf("cancelled call: err = %v", got[1].err)
	}
	if n := got[1].resp.Usage.CompletionTokens; n < 5 || n > 6 {
		t.Errorf("cancelled call generated %d tokens after cancelling at 5", n)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	for _, i := range []int{0, 2} {
		if got[i].err != nil {
			t.Fatalf("call %d: %v", i, got[i].err)
		}
		if got[i].resp.Text != ref[i].resp.Text || got[i].resp.Usage.CompletionTokens != ref[i].resp.Usage.CompletionTokens {
			t.Errorf("call %d changed by another's cancel:\n got %q\nwant %q", i, got[i].resp.Text, ref[i].resp.Text)
		}
	}
	// All three sequences serve new calls.
	for i, r := range completeAll(b, nil, []llm.Request{{Messages: conversation(0), MaxTokens: 3}, {Messages: conversation(1), MaxTokens: 3}, {Messages: conversation(2), MaxTokens: 3}}) {
		if r.err != nil || r.resp.Usage.CompletionTokens != 3 {
			t.Errorf("call %d after the cancel: %+v, %v", i, r.resp.Usage, r.err)
		}
	}
}

// More callers than sequences: at most Parallel are served at once, the
// others wait and all finish; a waiting caller's ctx ends its wait.
func TestParallelMoreCallersThanSlots(t *testing.T) {
	const slots = 2
	b := newTinyParallel(t, slots, nil)
	// The sequences decoded together, counted by the scheduler itself (a
	// caller's own bookkeeping would lag behind its slot's release).
	var mu sync.Mutex
	most := 0
	b.sched.stepHook = func(s *sched) {
		mu.Lock()
		most = max(most, len(s.active))
		mu.Unlock()
	}
	var reqs []llm.Request
	for i := range 7 {
		reqs = append(reqs, llm.Request{Messages: conversation(i % 3), MaxTokens: 10, Sampling: llm.Sampling{Temperature: 1, Seed: i}})
	}
	var wg sync.WaitGroup
	errs := make([]error, len(reqs))
	for i, req := range reqs {
		wg.Go(func() {
			r, err := b.Complete(context.Background(), req)
			if err == nil && r.Usage.CompletionTokens == 0 {
				err = errors.New("no tokens")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	mu.Lock()
	if most > slots || most < 2 {
		t.Errorf("%d calls decoded at once on %d sequences (7 callers)", most, slots)
	}
	mu.Unlock()
	if st := b.Stats(); st.Calls != len(reqs) {
		t.Errorf("stats count %d calls, want %d", st.Calls, len(reqs))
	}

	// Both sequences busy (the scheduler held before a decode): a third
	// caller waits, and its deadline ends the wait at once.
	release := make(chan struct{})
	busy := make(chan struct{})
	var once sync.Once
	b.sched.stepHook = func(s *sched) {
		select {
		case <-release:
			return
		default:
		}
		// No decode until both calls are in (running or waiting): the first
		// could otherwise end before the second arrives, and the sequences
		// would never both be busy.
		waitForCalls(s, slots)
		if len(s.active) == slots {
			once.Do(func() { close(busy) })
			<-release
		}
	}
	for i := range slots {
		wg.Go(func() { b.Complete(context.Background(), llm.Request{Messages: conversation(i), MaxTokens: 8}) })
	}
	select {
	case <-busy:
	case <-time.After(30 * time.Second):
		t.Fatal("the sequences never became busy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := b.Complete(ctx, llm.Request{Messages: conversation(2), MaxTokens: 3})
	if !errors.Is(err, context.DeadlineExceeded) || r.Usage.CompletionTokens != 0 {
		t.Errorf("waiting caller: %+v, %v; want DeadlineExceeded before any token", r.Usage, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the wait ended after %v", d)
	}
	close(release)
	wg.Wait()
	// The withdrawn call left no trace; the backend goes on.
	if r, err := b.Complete(context.Background(), llm.Request{Messages: conversation(2), MaxTokens: 3}); err != nil || r.Usage.CompletionTokens != 3 {
		t.Errorf("after a withdrawn call: %+v, %v", r.Usage, err)
	}
}

// Each sequence has its own CtxSize window: two calls whose prompts fill
// most of it run at once, and a reply that overflows its window fails
// alone.
func TestParallelWindowPerSequence(t *testing.T) {
	b := newTinyParallel(t, 2, func(o *Options) { o.CtxSize = 256; o.BatchSize = 64 })
	if n := b.ContextSize(); n != 256 {
		t.Fatalf("ContextSize %d, want the per-sequence 256", n)
	}
	msgs := func(i int) []llm.Message {
		return []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("%d ", i) + strings.Repeat(fmt.Sprintf("word%d ", i), 35)}}
	}
	for i := range 2 {
		p, err := b.promptTokens(msgs(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(p) < 160 || len(p) > 220 {
			t.Fatalf("prompt %d is %d tokens, want about 200", i, len(p))
		}
	}
	res := completeAll(b, nil, []llm.Request{
		{Messages: msgs(0), MaxTokens: 20, Sampling: llm.Sampling{Temperature: 1, Seed: 1}},
		{Messages: msgs(1), Sampling: llm.Sampling{Temperature: 1, Seed: 2}}, // unbounded
	})
	if res[0].err != nil || res[0].resp.Usage.CompletionTokens == 0 {
		t.Errorf("bounded call: %+v, %v", res[0].resp.Usage, res[0].err)
	}
	if !errors.Is(res[1].err, ErrContextFull) || res[1].resp.Text == "" {
		t.Errorf("unbounded call: %v (%d tokens), want ErrContextFull with the partial reply", res[1].err, res[1].resp.Usage.CompletionTokens)
	}
	long := []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("word ", 300)}}
	if _, err := b.Complete(context.Background(), llm.Request{Messages: long}); !errors.Is(err, ErrContextFull) {
		t.Errorf("long prompt: %v, want ErrContextFull", err)
	}
}

// Close ends the calls in flight and the waiting ones with an error.
func TestParallelClose(t *testing.T) {
	b := newTinyParallel(t, 2, nil)
	closing := make(chan struct{})
	busy := make(chan struct{})
	var once sync.Once
	b.sched.stepHook = func(s *sched) {
		// No decode until all four calls are in (running or waiting), so
		// none can end on its own first.
		waitForCalls(s, 4)
		once.Do(func() { close(busy) })
		<-closing
	}
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := b.Complete(context.Background(), llm.Request{Messages: conversation(i % 3), MaxTokens: 50})
			errs <- err
		}()
	}
	select {
	case <-busy:
	case <-time.After(30 * time.Second):
		t.Fatal("the sequences never became busy")
	}
	close(closing)
	b.Close()
	for range 4 {
		select {
		case err := <-errs:
			if !errors.Is(err, errClosed) {
				t.Errorf("call ended with %v, want errClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call did not end after Close")
		}
	}
	if _, err := b.Complete(context.Background(), llm.Request{Messages: conversation(0)}); !errors.Is(err, errClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// Parallel 0 and 1 are the scheduler with one sequence: calls run one at a
// time, and a caller waiting behind a running call can still give up.
func TestParallelOneIsSerial(t *testing.T) {
	for _, n := range []int{0, 1} {
		b := newTinyParallel(t, n, nil)
		if len(b.sched.slots) != 1 || b.opts.Parallel != 1 {
			t.Errorf("Parallel %d: %d slots, parallel %d", n, len(b.sched.slots), b.opts.Parallel)
		}
	}
	b := newTiny(t, nil)
	running, release := make(chan struct{}), make(chan struct{})
	b.sched.stepHook = func(s *sched) {
		if len(s.active) == 1 && s.active[0].req.MaxTokens == 3 {
			select {
			case running <- struct{}{}:
				<-release
			default:
			}
		}
	}
	first := make(chan error, 1)
	go func() {
		_, err := b.Complete(context.Background(), llm.Request{Messages: conversation(0), MaxTokens: 3})
		first <- err
	}()
	<-running // a call is running
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Complete(ctx, llm.Request{Messages: conversation(0), MaxTokens: 2}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting caller: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	b.sched.stepHook = nil
	if _, err := b.Complete(context.Background(), llm.Request{Messages: conversation(0), MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(withRuntime(t, Options{ModelPath: b.opts.ModelPath, Parallel: MaxParallel + 1})); err == nil || !strings.Contains(err.Error(), "parallel") {
		t.Errorf("Parallel %d: err = %v", MaxParallel+1, err)
	}
}

// waitForCalls, in a step hook, holds the scheduler until n calls are in
// (running or waiting), or 30 s have passed: the hook's caller then fails
// by name instead of hanging.
func waitForCalls(s *sched, n int) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		in := len(s.inbox) + len(s.queue) + len(s.active)
		s.mu.Unlock()
		if in >= n {
			return
		}
	}
}
