package sandbox

import (
	"bufio"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Stop asks first and kills what does not listen: a group that ends on
// SIGTERM is gone before the grace; one that ignores it is killed after;
// a child left in the group goes with it.
func TestProcessGroupStop(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		gone         bool // wait on the leader's reaping rather than the group emptying
		wantSignal   syscall.Signal
	}{
		{"listens", "sleep 60", false, syscall.SIGTERM},
		{"ignores TERM", `trap "" TERM; sleep 60 & echo ready; wait`, false, syscall.SIGKILL},
		{"ignores TERM, Gone", `trap "" TERM; sleep 60 & echo ready; wait`, true, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", "exec "+tc.script)
			if tc.script != "sleep 60" {
				cmd = exec.Command("/bin/sh", "-c", tc.script)
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.script != "sleep 60" {
				// The trap is set once it says so.
				if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			g := ProcessGroup(cmd.Process.Pid)
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			e := Ending{Signal: syscall.SIGTERM, Grace: 200 * time.Millisecond}
			if tc.gone {
				e.Gone = exited
			}
			g.Stop(e)
			<-exited
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != tc.wantSignal {
				t.Errorf("ended by %v (%v), want %v", ws.Signal(), ws, tc.wantSignal)
			}
			if !eventually(func() bool { return !g.Alive() }) {
				t.Error("the group outlived its SIGKILL")
			}
		})
	}
}
