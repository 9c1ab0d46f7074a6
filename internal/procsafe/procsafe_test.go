package procsafe

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv makes this test binary the "tact" of TestInheritedDescriptors:
// its init sealed what it inherited; it runs the command given and
// reports whether it is dumpable.
const childEnv = "TACT_PROCSAFE_TEST_CHILD"

// hideChildEnv makes this test binary a process that hides its secrets,
// says so and waits for stdin to close.
const hideChildEnv = "TACT_PROCSAFE_TEST_HIDE"

func TestMain(m *testing.M) {
	if cmd, ok := os.LookupEnv(childEnv); ok {
		os.Exit(child(cmd))
	}
	if _, ok := os.LookupEnv(hideChildEnv); ok {
		err := HideEnviron(func(name, _ string) bool { return strings.HasSuffix(name, "_TOKEN") })
		fmt.Printf("hidden %v getenv=%s\n", err, os.Getenv("SERVE_TOKEN"))
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child(cmd string) int {
	d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fmt.Printf("dumpable=%d\n", d)
	c := exec.Command("bash", "-c", cmd)
	c.Stdout, c.Stderr = os.Stdout, os.Stdout
	if err := c.Run(); err != nil {
		fmt.Printf("command: %v\n", err)
	}
	return 0
}

// TestInheritedDescriptors starts "tact" the way cron jobs do, with
// descriptors of its caller open (a lock file for appending, a pipe, a
// directory, numbered low and high), and checks that a command it starts
// can use none of them.
func TestInheritedDescriptors(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "outside.lock")
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The reader end stays open here, so the child's writes could land.
	r, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Each write names its descriptor; a sealed one fails ("Bad file
	// descriptor") and the command goes on to the next.
	probe := `for fd in 3 9 63 200 1000; do eval "echo leak-$fd >&$fd" 2>/dev/null && echo "wrote fd $fd"; done; ` +
		`ls /proc/self/fd | tr '\n' ' '`
	shell := fmt.Sprintf(`exec 3>>%q 9>>%q 63>%q 200<%q 1000>>%q; exec %q`, lock, lock, fifo, dir, lock, exe)
	c := exec.Command("bash", "-c", shell) // dash takes one-digit descriptors only
	c.Env = append(os.Environ(), childEnv+"="+probe)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := string(out)
	if strings.Contains(got, "wrote fd") {
		t.Errorf("a command wrote through an inherited descriptor:\n%s", got)
	}
	if b, _ := os.ReadFile(lock); len(b) > 0 {
		t.Errorf("the lock file outside got %q", b)
	}
	buf := make([]byte, 64)
	if n, _ := r.Read(buf); n > 0 {
		t.Errorf("the pipe got %q", buf[:n])
	}
	if !strings.Contains(got, "dumpable=0") {
		t.Errorf("the process is dumpable; output:\n%s", got)
	}
}

// TestSealLaterDescriptor: a descriptor opened without O_CLOEXEC after
// init (as C code does) is sealed by the Seal before a start.
func TestSealLaterDescriptor(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "late"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd())) // dup(2) clears close-on-exec
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	write := func() string {
		c := exec.Command("sh", "-c", fmt.Sprintf("echo leak >&%d && echo wrote", fd))
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		_ = c.Run()
		return out.String()
	}
	if got := write(); !strings.Contains(got, "wrote") {
		t.Skipf("the unsealed descriptor did not reach the child either (%q): nothing to test", got)
	}
	if err := Seal(); err != nil {
		t.Fatal(err)
	}
	if got := write(); strings.Contains(got, "wrote") {
		t.Errorf("after Seal the child still wrote through fd %d", fd)
	}
	// Sealing does not close: this process still uses it.
	if _, err := unix.Write(fd, []byte("own\n")); err != nil {
		t.Errorf("Seal broke the descriptor for this process: %v", err)
	}
}

func TestStatus(t *testing.T) {
	seal, dumpable := Status()
	if seal != nil || dumpable != nil {
		t.Fatalf("init: seal %v, dumpable %v", seal, dumpable)
	}
	if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); d != 0 {
		t.Errorf("PR_GET_DUMPABLE = %d, want 0", d)
	}
}

// TestHideEnviron: once hidden, a secret is gone from /proc/PID/environ,
// for the process itself and for any other (this test runs as root in CI,
// where CAP_SYS_PTRACE reads any process), while os.Getenv still has it.
func TestHideEnviron(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "tok-9f8e7d6c5b4a"
	c := exec.Command(exe)
	c.Env = append(os.Environ(), hideChildEnv+"=1", "SERVE_TOKEN="+secret, "OTHER=visible-value", "EMPTY_TOKEN=")
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if want := "hidden <nil> getenv=" + secret + "\n"; line != want {
		t.Fatalf("child said %q, want %q", line, want)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	if strings.Contains(env, secret) {
		t.Errorf("the secret is still in /proc/PID/environ")
	}
	if !strings.Contains(env, "SERVE_TOKEN=\x00") || !strings.Contains(env, "\x00OTHER=visible-value\x00") {
		t.Errorf("the block lost its shape: %q", env)
	}
}
