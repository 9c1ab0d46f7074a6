package llamacpp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/cpulock"
	"github.com/tactcli/tact/llm"
)

// holdCPULock takes every CPU slot in dir as another process would.
func holdCPULock(t *testing.T, dir string) func() {
	t.Helper()
	l, err := cpulock.Open(dir, cpuSlots())
	if err != nil {
		t.Fatal(err)
	}
	turn, err := l.Acquire(context.Background(), cpuSlots())
	if err != nil || turn.Threads != cpuSlots() {
		t.Fatalf("holding every slot: %v, %+v", err, turn)
	}
	// Once: the test may release it from a timer's goroutine, and the
	// cleanup must see that (go test -race).
	var once sync.Once
	release := func() { once.Do(turn.Release) }
	t.Cleanup(release)
	return release
}

// A call waits while another process holds the CPU lock, reports the wait
// in its usage, and gives up when its context ends.
func TestCallWaitsForCPULock(t *testing.T) {
	dir := t.TempDir()
	b := newTiny(t, func(o *Options) { o.CPULockDir = dir })
	if !strings.Contains(b.Describe(), fmt.Sprintf("cpu lock %s (%d slots)", dir, cpuSlots())) {
		t.Errorf("Describe() = %q, want the lock's path", b.Describe())
	}
	req := llm.Request{Messages: conversation(0), MaxTokens: 4}
	r, err := b.Complete(context.Background(), req)
	if err != nil || r.Usage.CPUWaitMS != 0 {
		t.Fatalf("free lock: %+v, %v", r.Usage, err)
	}

	release := holdCPULock(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := b.Complete(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Complete while the lock is held, with a 100ms timeout = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancelled wait took %v", d)
	}

	time.AfterFunc(300*time.Millisecond, release)
	r, err = b.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage.CPUWaitMS < 250 || r.Usage.CPUWaitMS > 5000 {
		t.Errorf("cpu_wait_ms = %d, want about 300", r.Usage.CPUWaitMS)
	}
}

// Loading waits for the lock too; its wait is reported by the first call.
func TestLoadWaitsForCPULock(t *testing.T) {
	dir := t.TempDir()
	release := holdCPULock(t, dir)
	o := withRuntime(t, Options{ModelPath: tinyPath(t), CtxSize: 1024, BatchSize: 64, Threads: 1, CPULockDir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if b, err := Load(ctx, o); !errors.Is(err, context.DeadlineExceeded) {
		if b != nil {
			b.Close()
		}
		t.Fatalf("Load while the lock is held, with a 100ms timeout = %v", err)
	}
	time.AfterFunc(200*time.Millisecond, release)
	b, err := Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	req := llm.Request{Messages: conversation(0), MaxTokens: 4}
	r, err := b.Complete(context.Background(), req)
	if err != nil || r.Usage.CPUWaitMS < 150 {
		t.Errorf("first call after a waiting load: %+v, %v; want cpu_wait_ms about 200", r.Usage, err)
	}
	r, err = b.Complete(context.Background(), req)
	if err != nil || r.Usage.CPUWaitMS != 0 {
		t.Errorf("second call: %+v, %v; want no wait", r.Usage, err)
	}
}

// NoCPULock opts out: calls run while another process holds the lock.
func TestNoCPULock(t *testing.T) {
	dir := t.TempDir()
	holdCPULock(t, dir)
	b := newTiny(t, func(o *Options) { o.CPULockDir = dir; o.NoCPULock = true })
	if !strings.HasSuffix(b.Describe(), "cpu lock off") {
		t.Errorf("Describe() = %q", b.Describe())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := b.Complete(ctx, llm.Request{Messages: conversation(0), MaxTokens: 4})
	if err != nil || r.Usage.CPUWaitMS != 0 {
		t.Errorf("%+v, %v", r.Usage, err)
	}
}

// An unusable lock directory (another user's, or open to others) is one
// warning, and the model runs without the lock.
func TestUnusableCPULockRunsWithoutIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	b := newTiny(t, func(o *Options) { o.CPULockDir = dir })
	if b.cpu != nil || !strings.HasSuffix(b.Describe(), "cpu lock off") {
		t.Errorf("a world-writable lock directory was used: %s", b.Describe())
	}
	if _, err := b.Complete(context.Background(), llm.Request{Messages: conversation(0), MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
}

func tinyPath(t *testing.T) string {
	t.Helper()
	b := newTiny(t, func(o *Options) { o.NoCPULock = true })
	return b.opts.ModelPath
}

// TestHelperTurns is not a test: it is a child process of
// TestProcessesTakeTurns. It loads the tiny model (2 threads) with the lock
// in LLAMACPP_TURNS_DIR, runs a few calls and prints one line per stretch
// of a CPU turn with one thread count, "hold START END THREADS" (Unix
// nanoseconds), "turn" at the end of each turn, then "wait MS" in all.
func TestHelperTurns(t *testing.T) {
	dir := os.Getenv("LLAMACPP_TURNS_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	var mu sync.Mutex
	var start time.Time
	var threads int
	cpuLockHook = func(n int) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if threads > 0 {
			fmt.Printf("hold %d %d %d\n", start.UnixNano(), now.UnixNano(), threads)
		}
		start, threads = now, n
		if n == 0 {
			fmt.Println("turn")
		}
	}
	fmt.Println("loading")
	b, err := New(withRuntime(t, Options{ModelPath: os.Getenv("LLAMACPP_TURNS_MODEL"), CtxSize: 1024, BatchSize: 64, Threads: 2, CPULockDir: dir}))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var waited int64
	for i := range 6 {
		b.Reset()
		r, err := b.Complete(context.Background(), llm.Request{Messages: conversation(4), MaxTokens: 32, Sampling: llm.Sampling{Seed: i}})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		waited += r.Usage.CPUWaitMS
	}
	fmt.Println("wait", waited)
	os.Exit(0)
}

// Two processes running the model share the CPU: at no moment do their
// turns (model loading and every call) hold more threads than there are
// cores.
func TestProcessesTakeTurns(t *testing.T) {
	dir := t.TempDir()
	model := tinyPath(t)
	release := holdCPULock(t, dir)
	type child struct {
		cmd   *exec.Cmd
		lines chan string
	}
	var children []child
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTurns$")
		cmd.Env = append(os.Environ(), "LLAMACPP_TURNS_DIR="+dir, "LLAMACPP_TURNS_MODEL="+model)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		lines := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		children = append(children, child{cmd, lines})
	}
	// Both children reach their model load while this test holds the lock,
	// so both must wait, and then they contend with each other.
	for _, c := range children {
		select {
		case l := <-c.lines:
			if l != "loading" {
				t.Fatalf("child: %q", l)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("child did not start")
		}
	}
	time.Sleep(200 * time.Millisecond)
	release()

	type hold struct{ start, end, threads int64 }
	var holds []hold
	turns := 0
	deadline := time.After(60 * time.Second)
	for i, c := range children {
		var waited int64 = -1
	read:
		for {
			select {
			case l, ok := <-c.lines:
				if !ok {
					break read
				}
				f := strings.Fields(l)
				switch {
				case len(f) == 4 && f[0] == "hold":
					s, _ := strconv.ParseInt(f[1], 10, 64)
					e, _ := strconv.ParseInt(f[2], 10, 64)
					n, _ := strconv.ParseInt(f[3], 10, 64)
					holds = append(holds, hold{s, e, n})
				case len(f) == 1 && f[0] == "turn":
					turns++
				case len(f) == 2 && f[0] == "wait":
					waited, _ = strconv.ParseInt(f[1], 10, 64)
				default:
					t.Errorf("child %d: %s", i, l)
				}
			case <-deadline:
				t.Fatal("children did not finish in 60s")
			}
		}
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v", i, err)
		}
		if waited < 100 {
			t.Errorf("child %d waited %d ms in all, want at least the 200ms this test held the lock", i, waited)
		}
		t.Logf("child %d waited %d ms", i, waited)
	}
	// Each child held the lock to load and for its 6 calls; a call's turn
	// may change its threads midway. A call submitted before the
	// scheduler saw the last one end goes on in its turn, so a child may
	// take fewer than 7 turns (seen once in a clean-clone CI run).
	if turns < 2*2 || turns > 2*7 || len(holds) < turns {
		t.Fatalf("%d turns in %d stretches, want 4 to 14 turns", turns, len(holds))
	}
	resized := len(holds) - turns
	t.Logf("%d turns, resized %d times", turns, resized)
	// Sweep the turns' starts and ends: threads held at once never exceed
	// the cores (an end sorts before a start at the same instant).
	type event struct{ at, delta int64 }
	var events []event
	for _, h := range holds {
		if h.threads < 1 || h.threads > int64(cpuSlots()) {
			t.Errorf("a turn of %d threads on %d cores", h.threads, cpuSlots())
		}
		events = append(events, event{h.start, h.threads}, event{h.end, -h.threads})
	}
	slices.SortFunc(events, func(a, b event) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.delta - b.delta)
	})
	var now, most int64
	for _, e := range events {
		now += e.delta
		most = max(most, now)
	}
	if most > int64(cpuSlots()) {
		t.Errorf("%d threads at once on %d cores", most, cpuSlots())
	}
	t.Logf("at most %d threads at once on %d cores", most, cpuSlots())
}

// A call runs with its share of the cores: fewer threads while another
// process holds a turn, all of them again once it is gone.
func TestCallRunsWithItsShare(t *testing.T) {
	cores := cpuSlots()
	if cores < 2 {
		t.Skip("needs 2 CPUs")
	}
	dir := t.TempDir()
	b := newTiny(t, func(o *Options) { o.CPULockDir = dir; o.Threads = cores })
	l, err := cpulock.Open(dir, cores)
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.Acquire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Messages: conversation(0), MaxTokens: 4}
	if _, err := b.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if b.threads != cores/2 {
		t.Errorf("with another turn active: %d threads, want %d", b.threads, cores/2)
	}
	other.Release()
	if _, err := b.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if b.threads != cores {
		t.Errorf("alone again: %d threads, want %d", b.threads, cores)
	}
}

// A call that took every slot alone gives the surplus back at its next
// safe point once another process waits for a slot, so the waiter need not
// wait for the whole call; its turn takes the slots again once they are
// free.
func TestCallGivesSurplusBack(t *testing.T) {
	cores := cpuSlots()
	if cores < 2 {
		t.Skip("needs 2 CPUs")
	}
	dir := t.TempDir()
	b := newTiny(t, func(o *Options) { o.CPULockDir = dir; o.Threads = cores; o.CtxSize = 2048; o.BatchSize = 512 })
	l, err := cpulock.Open(dir, cores)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		turn *cpulock.Turn
		err  error
		at   time.Time
	}
	other := make(chan got, 1)
	var mu sync.Mutex
	var counts []int
	var shrunk time.Time
	cpuLockHook = func(n int) {
		mu.Lock()
		counts = append(counts, n)
		if len(counts) > 1 && n > 0 && n < counts[len(counts)-2] && shrunk.IsZero() {
			shrunk = time.Now()
		}
		first := len(counts) == 1
		mu.Unlock()
		if first {
			// The call has its turn: another process starts waiting
			// before the first decode.
			go func() {
				tu, err := l.Acquire(context.Background(), cores)
				other <- got{tu, err, time.Now()}
			}()
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Cleanup(func() { cpuLockHook = nil })
	req := llm.Request{Messages: conversation(12), MaxTokens: 16}
	if _, err := b.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	var o got
	select {
	case o = <-other:
	case <-time.After(10 * time.Second):
		t.Fatal("the other turn never got a slot")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	mu.Lock()
	t.Logf("thread counts %v; the other turn got %d threads after %v, %v before the call ended", counts, o.turn.Threads, o.turn.Waited, ended.Sub(o.at))
	if len(counts) < 3 || counts[0] != cores || counts[1] != cores/2 {
		t.Errorf("thread counts %v, want %d then %d (the call's share) then 0", counts, cores, cores/2)
	}
	if shrunk.IsZero() || shrunk.After(ended) {
		t.Errorf("the call did not give slots back before it ended")
	}
	mu.Unlock()
	if o.turn.Threads != cores/2 {
		t.Errorf("the other turn got %d threads, want %d", o.turn.Threads, cores/2)
	}
	// The other turn waited for the safe point, not for the whole call.
	if o.turn.Waited > 2*time.Second {
		t.Errorf("the other turn waited %v", o.turn.Waited)
	}
	o.turn.Release()
}

// modelLayers reads the layer count that decides whether a model is fully
// offloaded to a GPU (and so takes no CPU turns for its calls).
func TestModelLayers(t *testing.T) {
	b := newTiny(t, nil)
	if n := b.model.layers(); n != 2 {
		t.Errorf("tiny model: %d layers, want 2", n)
	}
}
