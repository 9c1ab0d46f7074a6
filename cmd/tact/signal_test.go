package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Regression (was a bug; fixed) (main.go signalError, react.ExitCoder):
// tact exited 143 on SIGTERM, but the trace's termination
// event said exit_code 130. testscript can send only SIGINT and SIGKILL, so
// this runs the test binary as tact (testscript.Main's convention: argv[0]
// named "tact") and sends SIGTERM itself.
func TestSIGTERMTraceSays143(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a command for a second")
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tact := filepath.Join(dir, "bin", "tact")
	if err := os.MkdirAll(filepath.Dir(tact), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, tact); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "slow.jsonl")
	m := sleepMarker()
	killMarked(t, m)
	if err := os.WriteFile(plan, []byte(`{"tool":"run_command","args":{"command":"sleep `+m+`"}}`+"\n"+
		`{"tool":"final_answer","args":{"answer":"late"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "trace.jsonl")
	cmd := exec.Command(tact, "exec", "--workspace", ws, "--yes", "--trace", trace, plan)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), runtimeEnv(), "HOME=" + dir, "XDG_CONFIG_HOME=" + dir + "/.config",
		"XDG_DATA_HOME=" + dir + "/.local/share", "TACT_NO_INPUT=1"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the command runs (its step has started), then SIGTERM.
	if !waitFor(time.Minute, func() bool { return len(procsWith(m)) > 0 }) {
		cmd.Process.Kill()
		t.Fatalf("the command did not start; trace:\n%s", readFile(trace))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("exit: %v, want 143", err)
	}
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(readFile(trace)))
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("trace line %q: %v", sc.Text(), err)
		}
	}
	if last["event"] != "termination" || last["exit_code"] != float64(143) || last["reason"] != "cancelled" {
		t.Fatalf("last event %v", last)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
