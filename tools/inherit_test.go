package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kballard/go-shellquote"
	"golang.org/x/sys/unix"
)

// TestCommandGetsNoInheritedDescriptors starts "tact" (this test binary
// running one run_command) as a cron job would, with its caller's
// descriptors open: a lock file for appending, a FIFO with a reader, a
// directory, a socket, at low and high numbers. In every sandbox mode the
// command can use none of them.
func TestCommandGetsNoInheritedDescriptors(t *testing.T) {
	for _, mode := range []string{"workspace-write", "read-only", "off"} {
		t.Run(mode, func(t *testing.T) {
			if mode != "off" {
				requireLandlock(t, 1)
			}
			env, outside := twLayout(t)
			lock := filepath.Join(outside, "job.lock")
			fifo := filepath.Join(outside, "fifo")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			probe := `bash -c 'for fd in 3 4 5 6 7 8 9 42 200 1023; do { echo leak-$fd >&$fd; } 2>/dev/null && echo "wrote fd $fd"; done; ls /proc/self/fd | wc -l'`
			args, _ := json.Marshal(m{"command": probe})
			shell := fmt.Sprintf(`exec 3>>%q 9>>%q 42>%q 200<%q; exec 1023<>%q; exec %q`,
				lock, lock, fifo, outside, fifo, os.Args[0])
			c := exec.Command("bash", "-c", shell)
			c.Dir = env.Workspace
			c.Env = append(os.Environ(), testRunCmdEnv+"="+string(args), testSandboxEnv+"="+mode)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("tact: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "wrote fd") {
				t.Errorf("the command wrote through an inherited descriptor: %s", out)
			}
			// ls sees 0, 1, 2 and the directory it reads: 4 lines.
			if !strings.Contains(string(out), `"4\n"`) {
				t.Errorf("the command holds more than stdin, stdout and stderr: %s", out)
			}
			if b, _ := os.ReadFile(lock); len(b) > 0 {
				t.Errorf("the lock file outside the workspace got %q", b)
			}
			buf := make([]byte, 64)
			if n, _ := r.Read(buf); n > 0 {
				t.Errorf("the FIFO outside got %q", buf[:n])
			}
		})
	}
}

// TestCommandCannotReadTactSecrets: tact's secrets (API keys, the serve
// token) are out of a command's reach through /proc: tact hides their
// values from its environment block, the helper gets no environment, both
// are not dumpable, and a confined command holds no CAP_SYS_PTRACE, so it
// cannot read their memory either. The command is this test binary
// reading its parent (the helper) and grandparent (tact).
func TestCommandCannotReadTactSecrets(t *testing.T) {
	const value = "s3cr3t-value-4242"
	for _, mode := range []string{"workspace-write", "read-only", "off"} {
		t.Run(mode, func(t *testing.T) {
			if mode != "off" {
				requireLandlock(t, 1)
			}
			env, _ := twLayout(t)
			args, _ := json.Marshal(m{"command": shellquote.Join(os.Args[0], probeProcArg)})
			c := exec.Command(os.Args[0])
			c.Dir = env.Workspace
			c.Env = append(os.Environ(), testRunCmdEnv+"="+string(args), testSandboxEnv+"="+mode, "TACT_TEST_API_KEY="+value)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("tact: %v\n%s", err, out)
			}
			var printed string
			if _, err := fmt.Sscanf(string(out), "%q", &printed); err != nil {
				t.Fatalf("tact printed %s", out)
			}
			var probes []procProbe
			if err := json.Unmarshal([]byte(printed), &probes); err != nil || len(probes) != 2 {
				t.Fatalf("probe printed %q (%v)", printed, err)
			}
			for i, p := range probes {
				who := [...]string{"the helper", "tact"}[i]
				if strings.Contains(string(p.Environ)+string(p.Cmdline), value) {
					t.Errorf("the command read the secret from %s's /proc", who)
				}
				// Without the sandbox a root command keeps CAP_SYS_PTRACE
				// (documented); a confined one never reads tact's memory.
				if len(p.Mem) > 0 && (mode != "off" || os.Geteuid() != 0) {
					t.Errorf("the command read %s's memory", who)
				}
			}
			// The probe itself works: as root without the sandbox it reads
			// tact's memory and environment block, the secret hidden.
			if mode == "off" && os.Geteuid() == 0 {
				if len(probes[1].Mem) == 0 || !strings.Contains(string(probes[1].Environ), "TACT_TEST_API_KEY=\x00") {
					t.Errorf("the probe could not read tact as root: %+v", probes[1])
				}
			}
		})
	}
}
