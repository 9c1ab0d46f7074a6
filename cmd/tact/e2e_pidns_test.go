package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestE2EConfinedCommandSeesOwnProcesses: run_command's `cat
// /proc/[0-9]*/environ` reads no other process's environment (the shell or
// cron that started tact holds the same secrets as tact): the command has
// its own PID namespace and /proc. Where the kernel refuses one, -v says so
// in one line and the test is skipped (today's behaviour is the fallback).
func TestE2EConfinedCommandSeesOwnProcesses(t *testing.T) {
	c := newE2E(t)
	shell := exec.Command("sleep", "1000")
	shell.Env = []string{"PARENT_SHELL_TOKEN=parent-shell-secret-4711"}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { shell.Process.Kill(); shell.Wait() }()
	plan := c.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": `sh -c 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n" | grep -c parent-shell-secret; ls /proc | grep -c "^[0-9]"'`}),
		finalStep(map[string]any{"$jq": ".steps[0].output"}),
	))
	p := c.run(c.args("--yes", "-v", plan)...)
	code := p.wait(20 * time.Second)
	if strings.Contains(p.stderr.String(), "no PID namespace of its own") {
		t.Skipf("the kernel refused the PID namespace: %s", p.stderr.String())
	}
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, p.stderr.String())
	}
	lines := strings.Fields(p.stdout.String())
	if len(lines) != 2 || lines[0] != "0" {
		t.Fatalf("the command read another process's environment: %q", p.stdout.String())
	}
	if n, err := strconv.Atoi(lines[1]); err != nil || n > 9 {
		t.Errorf("the command sees %s processes, want only its own few", lines[1])
	}
}
