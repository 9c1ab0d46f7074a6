package cpulock

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func open(t *testing.T, slots int) *Lock {
	t.Helper()
	l, err := Open(filepath.Join(t.TempDir(), "run", "tact"), slots)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func acquire(t *testing.T, l *Lock, want int) *Turn {
	t.Helper()
	turn, err := l.Acquire(context.Background(), want)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return turn
}

// Goroutines contending for the slots never hold more threads than there
// are slots, and waiters report how long they waited.
func TestContendersNeverExceedTheSlots(t *testing.T) {
	for _, slots := range []int{1, 2, 3} {
		t.Run(strconv.Itoa(slots), func(t *testing.T) {
			l := open(t, slots)
			var inside, most, total atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 5 {
						turn, err := l.Acquire(context.Background(), 2)
						if err != nil {
							t.Error(err)
							return
						}
						total.Add(int64(turn.Waited))
						note := func(delta int) {
							n := inside.Add(int64(delta))
							for {
								m := most.Load()
								if n <= m || most.CompareAndSwap(m, n) {
									break
								}
							}
						}
						note(turn.Threads)
						// Fit the turn to its share at a few safe
						// points, as a model call does: threads go
						// down before the slots, up after them.
						for range 5 {
							time.Sleep(time.Millisecond + fairEvery)
							was := turn.Threads
							if n := turn.Fair(); n < was {
								note(n - was)
								turn.Resize(n)
							} else if n > was {
								note(turn.Resize(n) - was)
							}
						}
						inside.Add(-int64(turn.Threads))
						turn.Release()
					}
				}()
			}
			wg.Wait()
			if most.Load() > int64(slots) {
				t.Errorf("%d threads at once on %d slots", most.Load(), slots)
			}
			if total.Load() == 0 {
				t.Error("no Acquire reported a wait")
			}
		})
	}
}

// A lone turn gets every thread it asks for (up to the slots); with another
// turn active, each gets its share.
func TestFairShare(t *testing.T) {
	l := open(t, 4)
	a := acquire(t, l, 8)
	if a.Threads != 4 || a.Waited != 0 {
		t.Errorf("lone turn: %d threads, waited %v; want 4, 0", a.Threads, a.Waited)
	}
	a.Release()
	a.Release() // twice is harmless
	a = acquire(t, l, 1)
	b := acquire(t, l, 4)
	if a.Threads != 1 || b.Threads != 2 {
		t.Errorf("two turns: %d and %d threads; want 1 and 2 (the fair share of 4)", a.Threads, b.Threads)
	}
	c := acquire(t, l, 4)
	if c.Threads != 1 {
		t.Errorf("third turn: %d threads; want the one slot left", c.Threads)
	}
	for _, x := range []*Turn{a, b, c} {
		x.Release()
	}
	if n := l.active(""); n != 1 {
		t.Errorf("active after release = %d, want 1 (the caller)", n)
	}
}

// fitLoop fits turn to its fair share every 5ms, as a model call does
// between decodes, until stop is closed; it sends each new thread count.
func fitLoop(turn *Turn, stop <-chan struct{}) <-chan int {
	counts := make(chan int, 100)
	go func() {
		defer close(counts)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if n := turn.Fair(); n != turn.Threads {
				counts <- turn.Resize(n)
			}
		}
	}()
	return counts
}

// A turn that took every slot alone gives the surplus back soon after
// another turn starts waiting (not when its call ends), and takes the slot
// again once the other turn is released.
func TestHolderGivesSurplusBack(t *testing.T) {
	l := open(t, 2)
	a := acquire(t, l, 2)
	defer a.Release()
	if a.Threads != 2 {
		t.Fatalf("lone turn: %d threads, want 2", a.Threads)
	}
	stop := make(chan struct{})
	counts := fitLoop(a, stop)
	defer func() {
		close(stop)
		for range counts {
		}
	}()
	// What is checked is that nothing happens for a while (ten of the
	// holder's fits): a sleep is the behaviour here, not a stand-in.
	time.Sleep(50 * time.Millisecond)
	select {
	case n := <-counts:
		t.Fatalf("alone, the holder resized to %d threads", n)
	default:
	}

	start := time.Now()
	b := acquire(t, l, 2)
	got := time.Since(start)
	if b.Threads != 1 {
		t.Errorf("waiter got %d threads, want 1 (its fair share)", b.Threads)
	}
	// The holder fits every 5ms and the waiter polls at least every
	// maxPoll: a second is plenty even on a loaded machine.
	if got > time.Second {
		t.Errorf("waiter got its slot after %v, want well under a second", got)
	}
	select {
	case n := <-counts:
		if n != 1 {
			t.Errorf("holder resized to %d threads, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("holder did not report its resize")
	}
	t.Logf("waiter got its slot after %v", got)

	b.Release()
	select {
	case n := <-counts:
		if n != 2 {
			t.Errorf("alone again, the holder resized to %d threads, want 2", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("holder did not take the freed slot again")
	}
}

// Resize keeps between 1 and the threads asked for, takes only free slots,
// and does nothing to a released turn.
func TestResize(t *testing.T) {
	l := open(t, 3)
	a := acquire(t, l, 2)
	if a.Threads != 2 {
		t.Fatalf("lone turn of 2 on 3 slots: %d threads", a.Threads)
	}
	for _, tc := range []struct{ n, want int }{{0, 1}, {5, 2}, {1, 1}, {2, 2}} {
		if got := a.Resize(tc.n); got != tc.want || a.Threads != tc.want {
			t.Errorf("Resize(%d) = %d (Threads %d), want %d", tc.n, got, a.Threads, tc.want)
		}
	}
	a.Resize(1)
	b := acquire(t, l, 2) // 2 of 3 left, and 2 turns: a share of 1
	if b.Threads != 1 {
		t.Fatalf("second turn: %d threads, want 1", b.Threads)
	}
	c := acquire(t, l, 1)
	if got := a.Resize(2); got != 1 {
		t.Errorf("Resize(2) with no slot free = %d, want 1", got)
	}
	c.Release()
	b.Release()
	if got := a.Resize(2); got != 2 {
		t.Errorf("Resize(2) with slots free = %d, want 2", got)
	}
	a.Release()
	if got := a.Resize(2); got != 2 || len(a.fds) != 0 {
		t.Errorf("Resize after Release = %d with %d slots held", got, len(a.fds))
	}
	if n := l.active(""); n != 1 {
		t.Errorf("active after release = %d, want 1", n)
	}
	d := acquire(t, l, 3)
	defer d.Release()
	if d.Threads != 3 {
		t.Errorf("after everyone released: %d threads, want 3", d.Threads)
	}
}

func TestWaiterGetsSlotWhenReleased(t *testing.T) {
	l := open(t, 1)
	held := acquire(t, l, 1)
	time.AfterFunc(200*time.Millisecond, held.Release)
	start := time.Now()
	turn := acquire(t, l, 1)
	defer turn.Release()
	if turn.Waited < 150*time.Millisecond || time.Since(start) > 5*time.Second {
		t.Errorf("waited %v (reported), %v (wall); want about 200ms", turn.Waited, time.Since(start))
	}
}

// Cancelling a waiter returns promptly with ctx's error and leaves nothing
// behind that would hold a slot or count as a turn.
func TestCancelWhileWaiting(t *testing.T) {
	l := open(t, 1)
	held := acquire(t, l, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	turn, err := l.Acquire(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second || turn.Waited < 50*time.Millisecond {
		t.Errorf("cancelled Acquire took %v, reported %v", d, turn.Waited)
	}
	held.Release()
	if n := l.active(""); n != 1 {
		t.Errorf("active = %d after the cancelled wait, want 1", n)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	turn, err = l.Acquire(ctx2, 1)
	if err != nil || turn.Waited != 0 {
		t.Fatalf("Acquire after the holder let go: %v, waited %v", err, turn.Waited)
	}
	turn.Release()

	// An already cancelled context never takes a slot.
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := l.Acquire(done, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire(cancelled) = %v", err)
	}
}

// Release empties the pid record, and a holder writes its own.
func TestHolderPID(t *testing.T) {
	l := open(t, 1)
	turn := acquire(t, l, 1)
	if got := l.holders(); len(got) != 1 || got[0] != os.Getpid() {
		t.Errorf("holders = %v, want [%d]", got, os.Getpid())
	}
	turn.Release()
	if got := l.holders(); len(got) != 0 {
		t.Errorf("holders after release = %v, want none", got)
	}
}

// TestHelperHold is not a test: it is the child process of the tests below,
// which takes a one-thread turn in CPULOCK_TEST_DIR (2 slots) and holds it
// until it is killed.
func TestHelperHold(t *testing.T) {
	dir := os.Getenv("CPULOCK_TEST_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	l, err := Open(dir, 2)
	if err != nil {
		os.Exit(3)
	}
	if _, err := l.Acquire(context.Background(), 1); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Minute) // holds the slot until the test kills it
	os.Exit(0)
}

// holdInChild starts a process that holds one of the 2 slots in dir and
// returns once it does.
func holdInChild(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHold$")
	cmd.Env = append(os.Environ(), "CPULOCK_TEST_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	return cmd
}

// Another process's turn counts and excludes, and a holder killed with
// SIGKILL releases its slot and its share at once: a crash never leaves a
// stale lock.
func TestKilledHolderReleasesLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tact")
	l, err := Open(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	child := holdInChild(t, dir)
	if got := l.holders(); len(got) != 1 || got[0] != child.Process.Pid {
		t.Errorf("holders = %v, want the child's pid %d", got, child.Process.Pid)
	}
	turn := acquire(t, l, 2)
	if turn.Threads != 1 {
		t.Errorf("with the child's turn active: %d threads, want 1", turn.Threads)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with both slots held = %v, want DeadlineExceeded", err)
	}
	turn.Release()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	turn = acquire(t, l, 2)
	defer turn.Release()
	if turn.Threads != 2 || turn.Waited != 0 {
		t.Errorf("after the holder was killed: %d threads, waited %v; want 2, 0", turn.Threads, turn.Waited)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, wantDir)); len(entries) != 1 {
		t.Errorf("want/ holds %d files, want 1 (the dead child's was removed)", len(entries))
	}
}

// A stopped holder (Ctrl-Z) would block every other run for as long as it
// stays stopped: the waiter notices and goes ahead with one thread.
func TestStoppedHolderIsSkipped(t *testing.T) {
	old := stoppedPoll
	stoppedPoll = 50 * time.Millisecond
	t.Cleanup(func() { stoppedPoll = old })
	dir := filepath.Join(t.TempDir(), "tact")
	l, err := Open(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	child := holdInChild(t, dir)
	mine := acquire(t, l, 1) // the other slot
	defer mine.Release()
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	turn, err := l.Acquire(ctx, 1)
	if err != nil {
		t.Fatalf("Acquire with a stopped holder: %v", err)
	}
	turn.Release()
	if turn.Threads != 1 || turn.Waited > 5*time.Second {
		t.Errorf("%d threads, waited %v", turn.Threads, turn.Waited)
	}
}

func TestOpenRefusesUnsafeDirectories(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	target := mk("target", 0o700)
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	lockLink := mk("locklink", 0o700)
	os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(lockLink, "cpu.0"))
	fifo := mk("fifo", 0o700)
	if err := syscall.Mkfifo(filepath.Join(fifo, "cpu.0"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, dir, want string
	}{
		{"symlink", link, "is a symlink"},
		{"not a directory", file, "not a directory"},
		{"world-writable", mk("open", 0o777), "writable by others"},
		{"group-writable", mk("group", 0o770), "writable by others"},
		{"lock file is a symlink", lockLink, "too many levels of symbolic links"},
		{"lock file is a FIFO", fifo, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.dir, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%s) = %v, want an error containing %q", tc.dir, err, tc.want)
			}
		})
	}

	// A new directory is created private.
	fresh := filepath.Join(base, "a", "tact")
	if _, err := Open(fresh, 2); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(fresh)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("new lock directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	fi, err = os.Stat(filepath.Join(fresh, "cpu.0"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new lock file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
}

// Another user's directory (planted in /tmp before the user's first run) or
// lock file is refused. Needs root to create files owned by someone else.
func TestOpenRefusesOtherUsersFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "planted")
	os.Mkdir(dir, 0o700)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, 1); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("Open(another user's dir) = %v", err)
	}
	own := filepath.Join(base, "own")
	os.Mkdir(own, 0o700)
	lock := filepath.Join(own, "cpu.0")
	os.WriteFile(lock, nil, 0o600)
	if err := os.Chown(lock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(own, 1); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("Open(dir with another user's lock file) = %v", err)
	}
}

func TestDefaultDir(t *testing.T) {
	uid := strconv.Itoa(os.Geteuid())
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/x")
	if got := DefaultDir(); got != "/run/user/x/tact" {
		t.Errorf("with XDG_RUNTIME_DIR: %s", got)
	}
	// A relative XDG_RUNTIME_DIR is invalid (XDG spec) and ignored.
	t.Setenv("XDG_RUNTIME_DIR", "rel")
	t.Setenv("TMPDIR", "/tmp/x")
	got := DefaultDir()
	run := filepath.Join("/run/user", uid)
	if fi, err := os.Stat(run); err == nil && fi.IsDir() {
		if got != filepath.Join(run, "tact") {
			t.Errorf("without XDG_RUNTIME_DIR, with %s: %s", run, got)
		}
	} else if got != "/tmp/x/tact-"+uid {
		t.Errorf("without XDG_RUNTIME_DIR or %s: %s", run, got)
	}
}

func TestProcState(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want byte
	}{
		{"123 (tact) S 1 123", 'S'},
		{"123 (a) b) T 1 123", 'T'},
		{"123 (x) t 1", 't'},
		{"123 (x)", 0},
		{"", 0},
		{"garbage", 0},
	} {
		if got := procState(tc.stat); got != tc.want {
			t.Errorf("procState(%q) = %q, want %q", tc.stat, got, tc.want)
		}
	}
	if stopped(os.Getpid()) {
		t.Error("this running process reads as stopped")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("123\n")
	f.Add("123 (tact) T 1")
	f.Add(")")
	f.Fuzz(func(t *testing.T, s string) {
		if n := parsePID(s); n < 0 {
			t.Errorf("parsePID(%q) = %d", s, n)
		}
		procState(s)
	})
}
