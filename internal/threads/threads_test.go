package threads

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      Machine
		model  int64
		want   int
		reason string // a part of the reason
	}{
		{"idle 2 cores", Machine{Allowed: 2, Online: 2, Cores: 2, LoadRead: true}, 0, 2, "2 CPUs, 0 other tasks"},
		{"hyperthreads: one per core", Machine{Allowed: 8, Online: 8, Cores: 4, LoadRead: true}, 0, 4, "4 physical cores"},
		{"two burners on 2 cores", Machine{Allowed: 2, Online: 2, Cores: 2, Others: 2, Load1: 2.1, LoadRead: true}, 0, 1, "but 2 other tasks running at start, load average 2.10: 0 CPUs free"},
		{"one busy of 2", Machine{Allowed: 2, Online: 2, Others: 1, LoadRead: true}, 0, 1, "1 CPUs free"},
		{"busy beyond the CPUs", Machine{Allowed: 4, Online: 4, Others: 9, LoadRead: true}, 0, 1, "0 CPUs free"},
		{"some busy of 8", Machine{Allowed: 8, Online: 8, Cores: 8, Others: 3, LoadRead: true}, 0, 5, "5 CPUs free"},
		{"quota rounds up", Machine{Allowed: 8, Online: 8, Cores: 8, Quota: 1.5, LoadRead: true}, 0, 2, "a cgroup CPU quota of 1.5"},
		{"quota under one CPU", Machine{Allowed: 8, Online: 8, Quota: 0.25, LoadRead: true}, 0, 1, "quota of 0.25"},
		{"machine-wide load scaled to the mask", Machine{Allowed: 2, Online: 64, Cores: 2, Others: 32, LoadRead: true}, 0, 1, "32 machine-wide, scaled to 2 of 64 CPUs"},
		{"a few busy on a big host", Machine{Allowed: 2, Online: 64, Cores: 2, Others: 8, LoadRead: true}, 0, 2, "8 other tasks running at start (8 machine-wide"},
		{"load unreadable", Machine{Allowed: 4, Cores: 4}, 0, 4, "the load could not be read"},
		{"nothing known", Machine{}, 0, 1, "1 CPUs"},
		{"tiny model", Machine{Allowed: 8, Online: 8, Cores: 8, LoadRead: true}, 300 << 10, 1, "a small model (0.3 MB: a thread per 16 MB of weights)"},
		{"small model", Machine{Allowed: 8, Online: 8, Cores: 8, LoadRead: true}, 40 << 20, 2, "a small model (41.9 MB"},
		{"small model on a busy machine", Machine{Allowed: 8, Online: 8, Cores: 8, Others: 7, LoadRead: true}, 40 << 20, 1, "1 CPUs free"},
		{"big model", Machine{Allowed: 8, Online: 8, Cores: 8, LoadRead: true}, 4 << 30, 8, "8 CPUs, 0 other"},
	} {
		c := Choose(tc.m, tc.model)
		if c.Threads != tc.want || !strings.Contains(c.Reason, tc.reason) {
			t.Errorf("%s: Choose = %d (%q), want %d (with %q)", tc.name, c.Threads, c.Reason, tc.want, tc.reason)
		}
	}
}

func TestCoresIn(t *testing.T) {
	ht := "processor: 0\nphysical id: 0\ncore id: 0\n\nprocessor: 1\nphysical id: 0\ncore id: 0\n\n" +
		"processor: 2\nphysical id: 0\ncore id: 1\n\nprocessor: 3\nphysical id: 0\ncore id: 1\n"
	all := func(int) bool { return true }
	for _, tc := range []struct {
		name, cpuinfo string
		allowed       func(int) bool
		want          int
	}{
		{"hyperthreads", ht, all, 2},
		{"mask of one core's two threads", ht, func(c int) bool { return c < 2 }, 1},
		{"mask of one thread per core", ht, func(c int) bool { return c%2 == 0 }, 2},
		{"two sockets", "physical id: 0\ncore id: 0\n\nphysical id: 1\ncore id: 0\n", all, 2},
		{"no core ids", "processor: 0\nmodel name: x\n\nprocessor: 1\n", all, 0},
		{"empty", "", all, 0},
	} {
		if got := coresIn(strings.NewReader(tc.cpuinfo), tc.allowed); got != tc.want {
			t.Errorf("%s: %d cores, want %d", tc.name, got, tc.want)
		}
	}
	if PhysicalCores() < 1 {
		t.Error("PhysicalCores() < 1")
	}
}

func TestCountList(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-1": 2, "0-3,8-11": 8, "0,2,4": 3, "": 0, "x": 0, "3-1": 0, "0-": 0} {
		if got := countList(in); got != want {
			t.Errorf("countList(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestCPUMax(t *testing.T) {
	for in, want := range map[string]float64{"max 100000\n": 0, "200000 100000\n": 2, "150000 100000": 1.5, "50000": 0.5, "": 0, "x 100000": 0, "100 0": 0, "-1 100000": 0} {
		if got := cpuMax(in); got != want {
			t.Errorf("cpuMax(%q) = %v, want %v", in, got, want)
		}
	}
}

// The tightest quota on the path from the process's cgroup to the root
// counts; a machine without cgroup v2 has none.
func TestCgroupQuota(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "cgroup")
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self := filepath.Join(dir, "self")
	write(self, "0::/a/b\n")
	write(filepath.Join(root, "cpu.max"), "max 100000\n")
	write(filepath.Join(root, "a", "cpu.max"), "300000 100000\n")
	write(filepath.Join(root, "a", "b", "cpu.max"), "max 100000\n")
	if q := cgroupQuota(self, root); q != 3 {
		t.Errorf("quota %v, want 3 (the parent's)", q)
	}
	write(filepath.Join(root, "a", "b", "cpu.max"), "100000 100000\n")
	if q := cgroupQuota(self, root); q != 1 {
		t.Errorf("quota %v, want 1 (the tighter child's)", q)
	}
	write(self, "12:cpu,cpuacct:/x\n") // cgroup v1 only
	if q := cgroupQuota(self, root); q != 0 {
		t.Errorf("v1: quota %v, want 0", q)
	}
	if q := cgroupQuota(filepath.Join(dir, "missing"), root); q != 0 {
		t.Errorf("no file: quota %v, want 0", q)
	}
}

func TestParseLoadavg(t *testing.T) {
	for _, tc := range []struct {
		in      string
		running int
		load1   float64
		ok      bool
	}{
		{"0.50 0.40 0.30 3/456 12345\n", 3, 0.5, true},
		{"11.32 8.00 5.00 9/140 1", 9, 11.32, true},
		{"0.50 0.40 0.30", 0, 0, false},
		{"x 0.40 0.30 3/456 1", 0, 0, false},
		{"0.5 0.4 0.3 3 1", 0, 0, false},
		{"0.5 0.4 0.3 -3/4 1", 0, 0, false},
	} {
		r, l, ok := parseLoadavg(tc.in)
		if r != tc.running || l != tc.load1 || ok != tc.ok {
			t.Errorf("parseLoadavg(%q) = %d, %v, %v; want %d, %v, %v", tc.in, r, l, ok, tc.running, tc.load1, tc.ok)
		}
	}
}

// On this machine the choice is at least one thread and at most the
// allowed physical cores, with a reason.
func TestDefault(t *testing.T) {
	if c := Default(300 << 10); c.Threads != 1 {
		t.Errorf("Default(tiny model) = %+v, want 1 thread", c)
	}
	c := Default(0)
	if c.Threads < 1 || c.Threads > PhysicalCores() || c.Reason == "" {
		t.Errorf("Default() = %+v (physical cores %d)", c, PhysicalCores())
	}
	if ownRunning() < 1 {
		t.Error("ownRunning() < 1")
	}
}

func FuzzParsers(f *testing.F) {
	f.Add("0.50 0.40 0.30 3/456 12345")
	f.Add("0-3,8-11")
	f.Add("150000 100000")
	f.Fuzz(func(t *testing.T, s string) {
		if r, _, ok := parseLoadavg(s); ok && r < 0 {
			t.Errorf("negative running count from %q", s)
		}
		if n := countList(s); n < 0 {
			t.Errorf("negative count from %q", s)
		}
		if q := cpuMax(s); q < 0 {
			t.Errorf("negative quota from %q", s)
		}
		coresIn(strings.NewReader(s), func(int) bool { return true })
	})
}
