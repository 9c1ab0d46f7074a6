// Package threads chooses how many threads a local model runs with when the
// user did not say (--threads 0): the physical cores this process may use
// (the affinity mask, a cgroup v2 CPU quota), less the cores other work
// keeps busy at start.
//
// Why the load counts: ggml's worker threads spin at a barrier after every
// graph node until all of them arrive. When another process holds a core,
// the thread that shares it is descheduled for a whole time slice and the
// others spin meanwhile, so a run with a thread per core beside a busy
// process is many times slower than the same run on fewer threads (on 2
// cores beside two CPU burners: 130 s against 5.6 s for one thread). One
// thread never waits at a barrier, so on a busy machine fewer is faster.
//
// The package reads /proc and /sys only (no cgo), so every model provider
// can call it.
package threads

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Choice is a thread count and why it was chosen, for a -v log line.
type Choice struct {
	Threads int
	Reason  string
}

// Machine is what the choice is made from; Read fills it from the system.
type Machine struct {
	Allowed  int     // CPUs in the affinity mask
	Online   int     // CPUs online on the machine (what the load counts run on)
	Cores    int     // physical cores among the allowed CPUs (0: unknown)
	Quota    float64 // cgroup cpu.max quota in CPUs (0: none)
	Others   int     // other tasks runnable at start (median of samples)
	Load1    float64 // the 1-minute load average, for the reason only
	LoadRead bool    // Others was read (false: /proc/loadavg unreadable)
}

// BytesPerThread is the least model weight a thread is given: a thread's
// share of a token's work must outweigh waking it and the barriers it
// meets at each graph node (the 0.3 MB test model runs fastest on one
// thread, idle or not). Real models are far larger.
const BytesPerThread = 16 << 20

// Default reads the machine and chooses for a model of modelBytes weights
// (0: unknown), see Choose. A model small enough for one thread needs no
// look at the load.
func Default(modelBytes int64) Choice {
	if modelBytes > 0 && modelBytes < 2*BytesPerThread {
		return Choice{1, smallModel(modelBytes)}
	}
	return Choose(Read(), modelBytes)
}

// Choose is the thread count for m and a model of modelBytes weights (0:
// unknown): the physical cores allowed, at most the cgroup quota (rounded
// up), at most one per BytesPerThread of the model, and at most the CPUs
// not taken by other runnable tasks (at least 1). The other tasks are
// counted machine-wide, so when only some of the online CPUs are allowed
// (a container, taskset) they are scaled to the allowed share.
func Choose(m Machine, modelBytes int64) Choice {
	allowed := max(m.Allowed, 1)
	capacity := allowed
	what := fmt.Sprintf("%d CPUs", allowed)
	if m.Cores > 0 && m.Cores < capacity {
		capacity = m.Cores
		what = fmt.Sprintf("%d physical cores", m.Cores)
	}
	if m.Quota > 0 && int(math.Ceil(m.Quota)) < capacity {
		capacity = max(int(math.Ceil(m.Quota)), 1)
		what = fmt.Sprintf("a cgroup CPU quota of %s", strconv.FormatFloat(m.Quota, 'f', -1, 64))
	}
	if n := max(int(modelBytes/BytesPerThread), 1); modelBytes > 0 && n < capacity {
		capacity = n
		what = smallModel(modelBytes)
		if n == 1 {
			return Choice{1, what}
		}
	}
	if !m.LoadRead {
		return Choice{capacity, fmt.Sprintf("%s (the load could not be read)", what)}
	}
	busy := float64(m.Others)
	scope := ""
	if m.Online > allowed {
		busy = busy * float64(allowed) / float64(m.Online)
		scope = fmt.Sprintf(" (%d machine-wide, scaled to %d of %d CPUs)", m.Others, allowed, m.Online)
	}
	free := allowed - int(math.Round(busy))
	load := fmt.Sprintf("load average %.2f", m.Load1)
	if free >= capacity {
		return Choice{capacity, fmt.Sprintf("%s, %d other tasks running at start%s, %s", what, m.Others, scope, load)}
	}
	n := max(free, 1)
	return Choice{n, fmt.Sprintf("%s, but %d other tasks running at start%s, %s: %d CPUs free (a thread per busy core would wait at every step)",
		what, m.Others, scope, load, max(free, 0))}
}

func smallModel(bytes int64) string {
	return fmt.Sprintf("a small model (%.1f MB: a thread per %d MB of weights)", float64(bytes)/1e6, BytesPerThread>>20)
}

// Read looks at the system: the affinity mask, the physical cores in it,
// the cgroup quota and the tasks running now.
func Read() Machine {
	m := Machine{Allowed: runtime.NumCPU(), Online: onlineCPUs("/sys/devices/system/cpu/online")}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		m.Allowed = set.Count()
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		m.Cores = coresIn(f, func(cpu int) bool { return set.Count() == 0 || set.IsSet(cpu) })
		f.Close()
	}
	m.Online = max(m.Online, m.Allowed)
	m.Quota = cgroupQuota("/proc/self/cgroup", "/sys/fs/cgroup")
	m.Others, m.Load1, m.LoadRead = othersRunning(5, 8*time.Millisecond)
	return m
}

// PhysicalCores counts the physical cores among the CPUs this process may
// run on (unique physical id and core id pairs in /proc/cpuinfo):
// llama.cpp runs best with one thread per core, since hyperthreads share
// the core's vector units. It falls back to the allowed CPUs.
func PhysicalCores() int {
	m := Machine{Allowed: runtime.NumCPU()}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		m.Allowed = set.Count()
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		m.Cores = coresIn(f, func(cpu int) bool { return set.Count() == 0 || set.IsSet(cpu) })
		f.Close()
	}
	if m.Cores > 0 && m.Cores < m.Allowed {
		return m.Cores
	}
	return m.Allowed
}

// coresIn counts the unique (physical id, core id) pairs of the processors
// in /proc/cpuinfo that allowed accepts; 0 when it names no cores.
func coresIn(r io.Reader, allowed func(cpu int) bool) int {
	cores := map[[2]string]bool{}
	cpu, phys, core := -1, "", ""
	flush := func() {
		if core != "" && (cpu < 0 || allowed(cpu)) {
			cores[[2]string{phys, core}] = true
		}
		cpu, phys, core = -1, "", ""
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "processor":
			if n, err := strconv.Atoi(v); err == nil {
				cpu = n
			}
		case "physical id":
			phys = v
		case "core id":
			core = v
		}
	}
	flush()
	return len(cores)
}

// onlineCPUs counts the CPUs in a list such as "0-3,8-11" (0: unreadable).
func onlineCPUs(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return countList(strings.TrimSpace(string(b)))
}

func countList(s string) int {
	n := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// cgroupQuota is the tightest cgroup v2 cpu.max quota, in CPUs, on the path
// from this process's cgroup up to root (0: none, or no cgroup v2).
func cgroupQuota(selfCgroup, root string) float64 {
	b, err := os.ReadFile(selfCgroup)
	if err != nil {
		return 0
	}
	var rel string
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
			break
		}
	}
	if rel == "" {
		return 0
	}
	quota := 0.0
	for dir := filepath.Join(root, filepath.Clean("/"+rel)); ; dir = filepath.Dir(dir) {
		if q := parseCPUMax(dir); q > 0 && (quota == 0 || q < quota) {
			quota = q
		}
		if dir == root || !strings.HasPrefix(dir, root) {
			break
		}
	}
	return quota
}

// parseCPUMax reads dir/cpu.max ("max 100000" or "QUOTA PERIOD") as CPUs.
func parseCPUMax(dir string) float64 {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return 0
	}
	return cpuMax(string(b))
}

func cpuMax(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 || f[0] == "max" {
		return 0
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	period := 100000.0
	if len(f) > 1 {
		p, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return 0
		}
		period = p
	}
	if err1 != nil || q <= 0 || period <= 0 {
		return 0
	}
	return q / period
}

// othersRunning samples the tasks running now (/proc/loadavg's fourth
// field), minus this process's own running threads, n times interval
// apart, and returns the median, with the 1-minute load average. The
// instant count, not the load average, decides: the average trails a
// minute behind (a burner started 10 s ago barely shows), and a run meets
// the machine as it is now. The median ignores a task that was running in
// one sample only.
func othersRunning(n int, interval time.Duration) (others int, load1 float64, ok bool) {
	var samples []int
	for i := range n {
		if i > 0 {
			time.Sleep(interval)
		}
		b, err := os.ReadFile("/proc/loadavg")
		if err != nil {
			return 0, 0, false
		}
		running, l1, ok := parseLoadavg(string(b))
		if !ok {
			return 0, 0, false
		}
		load1 = l1
		samples = append(samples, max(running-ownRunning(), 0))
	}
	slices.Sort(samples)
	return samples[len(samples)/2], load1, true
}

// parseLoadavg reads "0.50 0.40 0.30 3/456 12345": the running tasks (3)
// and the 1-minute load (0.50).
func parseLoadavg(s string) (running int, load1 float64, ok bool) {
	f := strings.Fields(s)
	if len(f) < 4 {
		return 0, 0, false
	}
	l1, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, 0, false
	}
	r, _, found := strings.Cut(f[3], "/")
	if !found {
		return 0, 0, false
	}
	running, err = strconv.Atoi(r)
	if err != nil || running < 0 {
		return 0, 0, false
	}
	return running, l1, true
}

// ownRunning counts this process's threads in state R (at least 1: the
// one reading /proc/loadavg counts itself there).
func ownRunning() int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 1
	}
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The state follows the command name's closing parenthesis.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'R' {
			n++
		}
	}
	return max(n, 1)
}
