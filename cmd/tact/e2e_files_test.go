package main

// End-to-end tests of the files tact opens by name (issue 23, items 8 and
// 9): every file flag or argument against every kind of file that is not
// what it expects. Each case must end at once with one line naming the
// input and its kind, exit 2, and never wait on a FIFO or read a device
// for ever. And a signal ends tact within a bounded time whatever it is
// blocked in. They run this test binary as tact (TestMain's "tact"
// command), so they need no `make build` and no model.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// selfTact is this test binary under the name "tact" (testscript.Main runs
// tactMain for it).
func selfTact(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bin", "tact")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// newFilesCase is an e2eCase running this binary, in a scratch home.
func newFilesCase(t *testing.T) *e2eCase {
	c := newE2ECase(t, selfTact(t))
	c.env = append(c.env,
		"XDG_CACHE_HOME="+filepath.Join(c.dir, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(c.dir, ".local", "state"),
		"TACT_NO_INPUT=1")
	return c
}

// fileKinds makes one file of each kind under dir. "fifo-held" has a
// process at its other end (this test, holding it open for reading and
// writing): a writer for an input, a reader for an output.
func fileKinds(t *testing.T, dir string, oversize int64) map[string]string {
	t.Helper()
	k := map[string]string{
		"fifo":      filepath.Join(dir, "k.fifo"),
		"fifo-held": filepath.Join(dir, "k-held.fifo"),
		"zero":      "/dev/zero",
		"dir":       filepath.Join(dir, "k.dir"),
		"socket":    filepath.Join(dir, "k.sock"),
		"link-fifo": filepath.Join(dir, "k-link"),
	}
	for _, name := range []string{"fifo", "fifo-held"} {
		if err := syscall.Mkfifo(k[name], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.OpenFile(k["fifo-held"], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	if _, err := held.Write([]byte(`{"x": 1}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(k["dir"], 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", k["socket"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Symlink(k["fifo"], k["link-fifo"]); err != nil {
		t.Fatal(err)
	}
	if oversize > 0 {
		k["oversize"] = filepath.Join(dir, "k.big")
		f, err := os.Create(k["oversize"])
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: the size is what counts.
		if err := f.Truncate(oversize + 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return k
}

// kindWhy is the refusal's text for each kind, after "WHAT PATH: ".
var kindWhy = map[string]string{
	"fifo":      "is a named pipe (FIFO), not a regular file",
	"fifo-held": "is a named pipe (FIFO), not a regular file",
	"link-fifo": "is a named pipe (FIFO), not a regular file",
	"zero":      "is a character device, not a regular file",
	"dir":       "is a directory, not a regular file",
	"socket":    "is a socket, not a regular file",
}

// Regression (issue 23, items 8 and 9): a FIFO given as --policy,
// --mcp-config, --script or --trace blocked tact in open(2) for ever, and
// --policy /dev/zero grew memory without limit. Every input tact opens by
// name now refuses at once what is not a regular file, and what is larger
// than its cap, in one line.
func TestE2EFileFlagsRefuseOtherKinds(t *testing.T) {
	c := newFilesCase(t)
	plan := c.file("plan.jsonl", `{"tool":"final_answer","args":{"answer":"done"}}`+"\n")
	script := c.file("script.jsonl", `{"text":"{\"tool\":\"final_answer\",\"args\":{\"answer\":\"done\"}}"}`+"\n")
	for _, in := range []struct {
		what     string   // the error's subject
		oversize int64    // its cap; 0: none
		args     []string // %s is the file
		why      string   // the wording's suffix, when not kindWhy's
	}{
		{what: "policy", oversize: 1 << 20, args: []string{"exec", "--workspace", c.ws, "--policy", "%s", plan}},
		{what: "MCP servers file", oversize: 1 << 20, args: []string{"exec", "--workspace", c.ws, "--mcp-config", "%s", plan}},
		{what: "plan", oversize: 64 << 20, args: []string{"exec", "--workspace", c.ws, "%s"}},
		{what: "script backend", oversize: 64 << 20, args: []string{"run", "--workspace", c.ws, "--no-plan", "--script", "%s", "q"}},
		{what: "queries", args: []string{"batch", "--workspace", c.ws, "--script", script, "%s"}},
		{what: "model", args: []string{"run", "--workspace", c.ws, "--no-plan", "--model", "%s", "q"}, why: "; refused"},
		{what: "--trace", args: []string{"exec", "--workspace", c.ws, "--trace", "%s", plan}},
	} {
		kinds := fileKinds(t, t.TempDir(), in.oversize)
		for kind, path := range kinds {
			output := in.what == "--trace"
			want := "tact: " + in.what + " " + path + ": "
			switch {
			case output && kind == "fifo-held":
				want = "" // a FIFO that a process reads is a fine trace
			case output && (kind == "fifo" || kind == "link-fifo"):
				want += "is a named pipe (FIFO) with no reader"
			case kind == "oversize":
				want += "larger than the " + fmt.Sprint(in.oversize>>20) + " MiB cap"
			default:
				want += kindWhy[kind] + in.why
			}
			t.Run(strings.ReplaceAll(in.what, " ", "_")+"/"+kind, func(t *testing.T) {
				c.t = t
				args := make([]string, len(in.args))
				for i, a := range in.args {
					args[i] = strings.ReplaceAll(a, "%s", path)
				}
				p := c.run(args...)
				code := p.wait(10 * time.Second) // fails by name if tact waits on the file
				stderr := strings.TrimRight(p.stderr.String(), "\n")
				if want == "" {
					if code != 0 {
						t.Fatalf("exit %d, want 0\nstderr: %s", code, stderr)
					}
					return
				}
				if code != exitUsage || stderr != want {
					t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and the one line:\n%s", code, stderr, exitUsage, want)
				}
			})
		}
	}
}

// --trace to a FIFO that a process reads gets the run's events, and /dev/null
// takes them: outputs may be pipes, terminals and /dev/null.
func TestE2ETraceToPipeAndNull(t *testing.T) {
	c := newFilesCase(t)
	plan := c.file("plan.jsonl", `{"tool":"final_answer","args":{"answer":"done"}}`+"\n")
	fifo := filepath.Join(c.dir, "trace.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The test reads it (opened read-write: the open does not wait, and
	// the FIFO has a reader before tact opens it) until the run's last event.
	rd, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"event":"termination"`) {
				got <- sc.Text()
				return
			}
		}
	}()
	if code := c.run("exec", "--workspace", c.ws, "--trace", fifo, plan).wait(10 * time.Second); code != 0 {
		t.Fatalf("--trace FIFO: exit %d", code)
	}
	select {
	case <-got:
	case <-time.After(time.Minute):
		t.Fatal("no termination event came through the FIFO")
	}
	if code := c.run("exec", "--workspace", c.ws, "--trace", "/dev/null", plan).wait(10 * time.Second); code != 0 {
		t.Fatalf("--trace /dev/null: exit %d", code)
	}
}

// The history file of tact chat: a FIFO there is skipped at once, not
// waited on (the session starts with no history).
func TestChatHistoryFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- loadHistory(path).Len() }()
	select {
	case n := <-done:
		if n != 0 {
			t.Fatalf("%d entries from a FIFO", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("loadHistory blocked on a FIFO")
	}
}

// Regression (issue 23, item 8): SIGTERM did not end a tact blocked where
// no cancellation reaches (it lived 10 minutes past it). tact exec reading
// its plan from a pipe whose writer never closes is such a place; the
// watchdog ends it with 143 (130 for SIGINT), and says so in one line.
func TestE2ESignalEndsBlockedTact(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGTERM, "SIGTERM", 143}, {syscall.SIGINT, "SIGINT", 130}} {
		sig := tt.sig
		t.Run(tt.name, func(t *testing.T) {
			c := newFilesCase(t)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close() // held open: the read never ends by itself
			p := c.start(r, nil, "exec", "--workspace", c.ws, "-")
			r.Close()
			// Wait until tact reads the pipe: it is blocked in read(2) on fd 0.
			if !waitFor(time.Minute, func() bool { return blockedReading(p.cmd.Process.Pid) }) {
				t.Fatalf("tact never blocked reading its standard input\nstderr: %s", p.stderr.String())
			}
			sent := time.Now()
			p.signal(sig)
			code := p.wait(signalExitAfter + 5*time.Second)
			took := p.exited.Sub(sent)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tt.code, p.stderr.String())
			}
			// The watchdog's time and room for a busy machine; tact
			// blocked on its input would wait forever.
			if took > signalExitAfter+10*time.Second {
				t.Fatalf("exited %s after the signal, want about %s", took, signalExitAfter)
			}
			line := regexp.MustCompile(`^tact: still running [0-9.]+s after ` + tt.name + `; exiting\n$`)
			if !line.MatchString(p.stderr.String()) {
				t.Fatalf("stderr %q, want the watchdog's one line", p.stderr.String())
			}
			t.Logf("%s: exit %d %s after the signal", tt.name, code, took.Round(time.Millisecond))
		})
	}
}

// blockedReading reports whether some thread of pid sits in a read(2) of
// fd 0 (/proc/PID/task/*/syscall: the number, then the arguments).
func blockedReading(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) > 1 && fields[0] == fmt.Sprint(syscall.SYS_READ) && fields[1] == "0x0" {
			return true
		}
	}
	return false
}
