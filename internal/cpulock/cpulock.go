// Package cpulock lets tact processes on one machine share its CPUs for
// model work instead of oversubscribing them.
//
// ggml's CPU worker threads spin at barriers, so two processes that each run
// one thread per core slow each other down many times over (on 2 cores, two
// concurrent runs took 159 s where the same two one after the other took
// 24 s). A Lock divides the machine's CPUs into slots, one lock file per
// CPU. A model call (or a model load) takes a Turn: as many free slots as
// it wants threads, but no more than its fair share among the processes that
// want the CPU at that moment, and at least one, waiting while none is free.
// The call then runs with one thread per slot held, and at its safe points
// (between llama.cpp decodes) fits its turn to the fair share of the moment
// (Turn.Fair, Turn.Resize): a call that started alone gives slots back as
// soon as another process waits, and takes them again once they are free.
// So a lone run gets every thread it asks for; two concurrent runs on 2 CPUs get one thread
// each and run side by side (which beats taking turns with two threads
// each: a single thread spends no time at barriers); and model threads never
// outnumber CPUs, whatever the number of processes.
//
// Slots are flock(2) locks: the kernel releases them when the holder exits
// or crashes, so a stale file never blocks anyone. The files live in the
// user's runtime directory and are per user: another user cannot create,
// replace or hold them.
package cpulock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tactcli/tact/internal/filekind"
)

const (
	slotPrefix = "cpu." // slot files cpu.0, cpu.1, ...
	wantDir    = "want" // one locked file per Turn being taken or held
	maxPoll    = 20 * time.Millisecond
)

// stoppedPoll is how often a waiter checks whether a holder is stopped.
var stoppedPoll = time.Second

var turnSeq atomic.Int64

// Lock is the per-user set of CPU slots in one directory. Acquire opens its
// own descriptors each time, so two turns in one process exclude each other
// too.
type Lock struct {
	dir   string
	slots int
}

// DefaultDir is where the lock lives: $XDG_RUNTIME_DIR/tact; when that is
// unset (cron), /run/user/UID/tact if the user's runtime directory exists, so
// cron jobs and login sessions share one lock; else TMPDIR/tact-UID.
func DefaultDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "tact")
	}
	uid := os.Geteuid()
	run := filepath.Join("/run/user", strconv.Itoa(uid))
	if fi, err := os.Lstat(run); err == nil && fi.IsDir() && owner(fi) == uid {
		return filepath.Join(run, "tact")
	}
	return filepath.Join(os.TempDir(), "tact-"+strconv.Itoa(uid))
}

// Open prepares a lock of slots CPU slots (at least 1; use the machine's
// CPU count, the same in every process) in dir, creating dir (mode 0700)
// when missing. It refuses a dir that is a symlink, is not the user's own
// or that others may write to: in a shared directory such as /tmp another
// user could otherwise plant it and hold the slots, or swap the files.
func Open(dir string, slots int) (*Lock, error) {
	for _, d := range []string{dir, filepath.Join(dir, wantDir)} {
		if err := privateDir(d); err != nil {
			return nil, err
		}
	}
	l := &Lock{dir: dir, slots: max(slots, 1)}
	fd, err := l.openSlot(0)
	if err != nil {
		return nil, err
	}
	syscall.Close(fd)
	return l, nil
}

func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cpu lock directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("cpu lock directory: %w", err)
	}
	switch uid := os.Geteuid(); {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("cpu lock directory %s is a symlink", dir)
	case !fi.IsDir():
		return fmt.Errorf("cpu lock directory %s is not a directory", dir)
	case owner(fi) != uid:
		return fmt.Errorf("cpu lock directory %s belongs to uid %d, not to uid %d", dir, owner(fi), uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("cpu lock directory %s is writable by others (mode %04o; want 0700)", dir, fi.Mode().Perm())
	}
	return nil
}

// Dir is the lock's directory.
func (l *Lock) Dir() string { return l.dir }

// Slots is the number of CPU slots.
func (l *Lock) Slots() int { return l.slots }

func owner(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func (l *Lock) slotPath(i int) string {
	return filepath.Join(l.dir, slotPrefix+strconv.Itoa(i))
}

// openSlot opens (creating) a slot file without following a symlink or
// blocking on a FIFO, and checks it is a regular file of the user's.
func (l *Lock) openSlot(i int) (int, error) {
	path := l.slotPath(i)
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, fmt.Errorf("cpu lock %s: %w", path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("cpu lock %s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return -1, fmt.Errorf("cpu lock %s is not a regular file", path)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		syscall.Close(fd)
		return -1, fmt.Errorf("cpu lock %s belongs to uid %d, not to uid %d", path, st.Uid, uid)
	}
	return fd, nil
}

// Turn is the CPU share one model call holds.
type Turn struct {
	Threads int           // slots held: the threads the call may run; at least 1
	Waited  time.Duration // time spent waiting for a free slot
	lock    *Lock
	asked   int    // threads asked for: the most Resize grows to
	fds     []int  // held slot files
	want    string // this turn's presence file
	wantFD  int
	checked time.Time // last Fair that looked at the other turns
}

// fairEvery bounds how often Fair looks at the other turns (a directory
// read): a call may check between every generated token.
const fairEvery = 2 * time.Millisecond

// Fair is the threads the turn should hold now: the threads it asked for,
// but no more than the fair share among the turns being taken or held at
// this moment. It is the turn's own count between checks (at most one per
// fairEvery) and for a turn that holds no slot. A call checks it at its
// safe points (between decodes) and Resizes when it differs from Threads:
// so a turn that started alone with every slot gives the surplus back
// soon after another process starts waiting, and takes slots again once
// they are free.
func (t *Turn) Fair() int {
	if t.lock == nil || len(t.fds) == 0 || t.asked <= 1 {
		return t.Threads
	}
	now := time.Now()
	if now.Sub(t.checked) < fairEvery {
		return t.Threads
	}
	t.checked = now
	return min(t.asked, max(1, t.lock.slots/t.lock.active(t.want)))
}

// Resize makes the turn hold n slots (at least 1, at most what it asked
// for): it releases the surplus at once, or takes free slots without
// waiting (it may get fewer than n). Lower the threads that run before
// shrinking, raise them after growing. It returns Threads, the slots held.
// A turn that holds no slot (a stopped holder's) stays as it is.
func (t *Turn) Resize(n int) int {
	if len(t.fds) == 0 {
		return t.Threads
	}
	n = min(max(n, 1), t.asked)
	for len(t.fds) > n {
		fd := t.fds[len(t.fds)-1]
		syscall.Ftruncate(fd, 0)
		syscall.Close(fd)
		t.fds = t.fds[:len(t.fds)-1]
	}
	if len(t.fds) < n {
		if err := t.lock.grab(t, n); err != nil {
			slog.Debug("cpu lock: taking more slots", "err", err)
		}
	}
	t.Threads = len(t.fds)
	return t.Threads
}

// Release gives the slots back. It may be called more than once.
func (t *Turn) Release() {
	for _, fd := range t.fds {
		// Empty the file first, so it never names a process that no
		// longer holds the slot.
		syscall.Ftruncate(fd, 0)
		syscall.Close(fd)
	}
	t.fds = nil
	if t.want != "" {
		// Unlink before unlocking: a visible presence file is always a
		// live one.
		syscall.Unlink(t.want)
		syscall.Close(t.wantFD)
		t.want = ""
	}
}

// Acquire takes a turn of up to want threads: free slots up to want and up
// to the fair share (slots divided by the turns being taken or held now, at
// least one), polling while none is free, until ctx ends (then it returns
// ctx's error). Release the turn when the model call ends.
//
// A holder that is stopped (Ctrl-Z, a debugger) would make everyone wait for
// as long as it stays stopped; a waiter that finds one logs a warning and
// goes ahead with one thread and no slot.
func (l *Lock) Acquire(ctx context.Context, want int) (*Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	want = min(max(want, 1), l.slots)
	t := &Turn{lock: l, asked: want}
	if err := l.register(t); err != nil {
		return nil, err
	}
	start := time.Now()
	lastCheck := start
	delay := time.Millisecond
	for i := 0; ; i++ {
		share := max(1, l.slots/l.active(t.want))
		if err := l.grab(t, min(want, share)); err != nil {
			t.Release()
			return nil, err
		}
		if len(t.fds) > 0 {
			break
		}
		if i == 0 {
			slog.Debug("waiting for a cpu slot: other tact processes are running models", "lock", l.dir, "holder_pids", l.holders())
		}
		if time.Since(lastCheck) >= stoppedPoll {
			lastCheck = time.Now()
			if pid := l.stoppedHolder(); pid > 0 {
				slog.Warn("a process holding a cpu slot is stopped; running without the cpu lock", "holder_pid", pid, "lock", l.dir)
				t.Waited, t.Threads = time.Since(start), 1
				return t, nil
			}
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			t.Release()
			return &Turn{Waited: time.Since(start)}, ctx.Err()
		case <-timer.C:
		}
		delay = min(2*delay, maxPoll)
		t.Waited = time.Since(start)
	}
	t.Threads = len(t.fds)
	t.checked = time.Now()
	if t.Waited > 0 {
		slog.Debug("got cpu slots", "threads", t.Threads, "waited_ms", t.Waited.Milliseconds())
	}
	return t, nil
}

// register makes the turn visible to other processes' fair-share counts: a
// file in want/, locked while the turn lives, renamed into place only once
// locked so a counter never mistakes it for a stale one.
func (l *Lock) register(t *Turn) error {
	name := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(turnSeq.Add(1), 10)
	tmp := filepath.Join(l.dir, wantDir, "."+name)
	fd, err := syscall.Open(tmp, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("cpu lock: %w", err)
	}
	path := filepath.Join(l.dir, wantDir, name)
	if err := flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		err = syscall.Rename(tmp, path)
	}
	if err != nil {
		syscall.Unlink(tmp)
		syscall.Close(fd)
		return fmt.Errorf("cpu lock: %w", err)
	}
	t.want, t.wantFD = path, fd
	return nil
}

// active counts the turns being taken or held (self is the caller's own,
// always counted) and removes the files of processes that died.
func (l *Lock) active(self string) int {
	dir := filepath.Join(l.dir, wantDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 1
	}
	n := 1
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if path == self {
			continue
		}
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue // released meanwhile
		}
		if err := flock(fd, syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
			// Nobody holds it: its turn ended without cleaning up (a
			// crash), or it was released just now.
			syscall.Unlink(path)
		} else if !strings.HasPrefix(e.Name(), ".") {
			n++
		}
		syscall.Close(fd)
	}
	return n
}

// grab takes free slots, without waiting, until the turn holds n. It starts
// at a slot that depends on the pid, so processes spread over the slots.
func (l *Lock) grab(t *Turn, n int) error {
	first := os.Getpid() % l.slots
	for k := 0; k < l.slots && len(t.fds) < n; k++ {
		fd, err := l.openSlot((first + k) % l.slots)
		if err != nil {
			return err
		}
		err = flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			syscall.Close(fd)
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return fmt.Errorf("cpu lock %s: %w", l.slotPath((first+k)%l.slots), err)
		}
		syscall.Ftruncate(fd, 0)
		syscall.Pwrite(fd, []byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		t.fds = append(t.fds, fd)
	}
	return nil
}

func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// holders lists the pids that slot holders wrote.
func (l *Lock) holders() []int {
	var pids []int
	for i := range l.slots {
		// A slot file holds a pid; anything else there (a FIFO) is skipped
		// at once, never waited on.
		if b, err := filekind.ReadFile(filekind.Spec{What: "cpu lock slot", Max: 64, NoFollow: true}, l.slotPath(i)); err == nil {
			if pid := parsePID(string(b)); pid > 0 {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// stoppedHolder is the pid of a slot holder that is stopped, or 0.
func (l *Lock) stoppedHolder() int {
	for _, pid := range l.holders() {
		if stopped(pid) {
			return pid
		}
	}
	return 0
}

func parsePID(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// stopped reports whether process pid is stopped or stopped by a tracer.
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	state := procState(string(b))
	return state == 'T' || state == 't'
}

// procState is the state field of /proc/PID/stat: the first field after the
// command name, which is in parentheses and may itself contain ") ".
func procState(stat string) byte {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+1] != ' ' {
		return 0
	}
	return stat[i+2]
}
