package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Items 2 and 3 of issue 23, as a cron job runs tact: a lock file held open
// on fd 9 (`exec 9>>job.lock; flock 9; tact ...`) and an API key in the
// environment. A plan's commands try to write through the descriptor and
// to read tact's environment from /proc (its grandparent: the command's
// parent is the sandbox helper), raw and in base64, which redaction would
// not recognise. Neither reaches the lock file, stdout or the trace.
func TestCronJobDescriptorsAndEnvironment(t *testing.T) {
	tact := e2eTact(t)
	const secret = "sk-cron-0123456789abcdef"
	for _, mode := range []string{"workspace-write", "read-only", "off"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			os.Mkdir(ws, 0o755)
			plan := `{"type":"plan","query":"probe"}
{"type":"step","step":1,"thought":"write through an inherited descriptor","tool":"run_command","args":{"command":"sh -c 'echo leaked >&9; echo rc=$?'"}}
{"type":"step","step":2,"thought":"read tact's environment","tool":"run_command","args":{"command":"sh -c 't=$(awk \"/^PPid:/{print \\$2}\" /proc/$PPID/status); tr \"\\0\" \"\\n\" < /proc/$t/environ | grep API_KEY; base64 -w0 /proc/$t/environ; true'"}}
{"type":"step","step":3,"thought":"done","tool":"final_answer","args":{"answer":{"$jq":".steps[0].output + .steps[1].output"}}}
`
			os.WriteFile(filepath.Join(dir, "plan.jsonl"), []byte(plan), 0o644)
			line := fmt.Sprintf(`exec 9>>job.lock; flock 9; exec %q exec --yes --sandbox %s --workspace ws --json --trace t.jsonl plan.jsonl`, tact, mode)
			c := exec.Command("bash", "-c", line)
			c.Dir = dir
			c.Env = append(os.Environ(), "OPENAI_API_KEY="+secret)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("tact: %v\n%s", err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "job.lock")); len(b) > 0 {
				t.Errorf("the command wrote %q into the lock file outside the workspace", b)
			}
			if !strings.Contains(string(out), `rc=2`) { // sh: Bad file descriptor
				t.Errorf("the write through fd 9 did not fail: %s", out)
			}
			trace, _ := os.ReadFile(filepath.Join(dir, "t.jsonl"))
			all := string(out) + string(trace)
			if strings.Contains(all, secret) {
				t.Errorf("the key reached stdout or the trace")
			}
			for _, b64 := range regexp.MustCompile(`[A-Za-z0-9+/]{40,}=*`).FindAllString(all, -1) {
				if b, err := base64.StdEncoding.DecodeString(b64); err == nil && strings.Contains(string(b), secret) {
					t.Errorf("the key reached stdout or the trace in base64")
				}
			}
			// The probe did read the block (as root), with the value gone.
			if os.Geteuid() == 0 && !strings.Contains(all, "OPENAI_API_KEY=") {
				t.Logf("the environment block was not readable at all")
			}
		})
	}
}
