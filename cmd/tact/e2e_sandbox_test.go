package main

// End-to-end tests of run_command's kernel sandbox and of the helper that
// ends what a command leaves behind, through the built bin/tact (see
// e2e_safety_test.go for the harness).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sandboxOf returns the sandbox recorded in the trace's run_start event.
func (c *e2eCase) sandboxOf() map[string]any {
	c.t.Helper()
	ev := findEvent(c.events(), "run_start")
	if ev == nil {
		c.t.Fatal("no run_start event in the trace")
	}
	sb, ok := ev["sandbox"].(map[string]any)
	if !ok {
		c.t.Fatalf("run_start has no sandbox object: %v", ev)
	}
	return sb
}

func TestE2ESandboxConfinesWrites(t *testing.T) {
	c := newE2E(t)
	escape := filepath.Join(c.dir, "escape.txt") // beside the workspace
	plan := c.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": "sh -c 'echo in > inside.txt'"}),
		step("run_command", map[string]any{"command": fmt.Sprintf("sh -c 'echo out > %s'", escape)}),
		finalStep("done"),
	))
	p := c.run(c.args("--yes", "--json", "--backend", "none", plan)...)
	code := p.wait(10 * time.Second)
	sb := c.sandboxOf()
	if sb["mode"] != "workspace-write" {
		t.Fatalf("trace sandbox = %v", sb)
	}
	if sb["enforced"] != true {
		t.Skipf("this kernel has no Landlock: %v", sb)
	}
	if code != 3 {
		t.Fatalf("exit %d, want 3 (the write outside failed)\nstderr: %s", code, p.stderr.String())
	}
	r := p.result()
	if len(r.Trace.Steps) < 2 || r.Trace.Steps[0].ExitCode != 0 || r.Trace.Steps[1].ExitCode == 0 {
		t.Fatalf("steps: %+v", r.Trace.Steps)
	}
	if !strings.Contains(r.Trace.Steps[1].Error, "exit status") {
		t.Errorf("step 2 error = %q", r.Trace.Steps[1].Error)
	}
	if _, err := os.Stat(escape); err == nil {
		t.Fatalf("%s was written: the sandbox let a command write outside the workspace", escape)
	}
	if b, err := os.ReadFile(filepath.Join(c.ws, "inside.txt")); err != nil || string(b) != "in\n" {
		t.Fatalf("inside.txt: %q, %v", b, err)
	}
	if !strings.Contains(p.stderr.String(), "step 2 (run_command) failed") {
		t.Errorf("stderr: %s", p.stderr.String())
	}

	// --sandbox off: the same plan writes outside.
	c2 := newE2E(t)
	escape2 := filepath.Join(c2.dir, "escape.txt")
	plan2 := c2.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": fmt.Sprintf("sh -c 'echo out > %s'", escape2)}),
		finalStep("done"),
	))
	if code := c2.run(c2.args("--yes", "--sandbox", "off", plan2)...).wait(10 * time.Second); code != 0 {
		t.Fatalf("--sandbox off: exit %d", code)
	}
	if _, err := os.Stat(escape2); err != nil {
		t.Fatalf("--sandbox off did not write outside: %v", err)
	}
}

func TestE2ESandboxBadMode(t *testing.T) {
	c := newE2E(t)
	plan := c.file("plan.jsonl", planJSONL(t, finalStep("done")))
	want := `tact: --sandbox: unknown mode "bogus" (want workspace-write, read-only or off)` + "\n"
	p := c.run("exec", "--workspace", c.ws, "--sandbox", "bogus", plan)
	if code := p.wait(10 * time.Second); code != 2 || p.stderr.String() != want || p.stdout.Len() != 0 {
		t.Fatalf("--sandbox bogus: exit %d, stdout %q, stderr %q", code, p.stdout.String(), p.stderr.String())
	}
	c.env = append(c.env, "TACT_SANDBOX=bogus")
	p = c.run("exec", "--workspace", c.ws, plan)
	if code := p.wait(10 * time.Second); code != 2 || !strings.Contains(p.stderr.String(), `unknown mode "bogus"`) {
		t.Fatalf("TACT_SANDBOX=bogus: exit %d, stderr %q", code, p.stderr.String())
	}
}

func TestE2ESandboxShownInDryRun(t *testing.T) {
	c := newE2E(t)
	plan := c.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": "touch x"}),
		finalStep("done"),
	))
	p := c.run(c.args("--dry-run", "--sandbox", "read-only", "--no-network", plan)...)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "dry-run: run_command sandbox: read-only, no network") {
		t.Fatalf("stderr: %s", p.stderr.String())
	}
	if sb := c.sandboxOf(); sb["mode"] != "read-only" || sb["no_network"] != true {
		t.Fatalf("trace sandbox = %v", sb)
	}
}

// A daemon (setsid) or a double-forked process does not outlive the call,
// nor tact itself when it is killed with SIGKILL.
func TestE2EDaemonDoesNotOutliveTool(t *testing.T) {
	c := newE2E(t)
	m := sleepMarker()
	killMarked(t, m)
	plan := c.file("plan.jsonl", planJSONL(t,
		step("run_command", map[string]any{"command": fmt.Sprintf("sh -c 'setsid sleep %[1]s & (sleep %[1]s &); echo hi'", m)}),
		finalStep(map[string]any{"$jq": ".steps[0].output | rtrimstr(\"\\n\")"}),
	))
	p := c.run(c.args("--yes", plan)...)
	if code := p.wait(10 * time.Second); code != 0 || p.stdout.String() != "hi\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, p.stdout.String(), p.stderr.String())
	}
	assertNoSurvivors(t, m, 10*time.Second)

	c = newE2E(t)
	m = sleepMarker()
	killMarked(t, m)
	// sh, the daemon and the foreground sleep.
	p = startLongTool(t, c, fmt.Sprintf("sh -c 'setsid sleep %[1]s & sleep %[1]s'", m), m, 3)
	p.signal(syscall.SIGKILL)
	p.wait(5 * time.Second)
	assertNoSurvivors(t, m, 10*time.Second)
}
