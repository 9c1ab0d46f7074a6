package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/mcptest"
)

// mcpTestSetup links this test binary as bin/tact (testscript.Main runs it
// as tact) and returns it with a clean environment for it.
func mcpTestSetup(t *testing.T) (tact, dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tact = filepath.Join(dir, "bin", "tact")
	if err := os.MkdirAll(filepath.Dir(tact), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, tact); err != nil {
		t.Fatal(err)
	}
	env = []string{"PATH=" + os.Getenv("PATH"), runtimeEnv(), "HOME=" + dir, "XDG_CONFIG_HOME=" + dir + "/.config",
		"XDG_DATA_HOME=" + dir + "/.local/share", "TACT_NO_INPUT=1"}
	return tact, dir, env
}

// stdioServerConfig is an mcp.json running this test binary as the test
// MCP server with args.
func stdioServerConfig(t *testing.T, name string, args ...string) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	entry := map[string]any{"command": self, "env": map[string]string{mcptest.EnvServe: mcptest.EnvValue(args...)}}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{name: entry}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mcpWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waitFor(time.Minute, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// processGone reports whether pid has ended (not running, not a zombie),
// waiting a little: a killed orphan is reaped by init a moment later.
func processGone(pid int) bool {
	return waitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		i := strings.LastIndexByte(string(b), ')')
		return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
	})
}

// An MCP stdio server (and the child it started, in its process group)
// ends with tact: after Ctrl-C, after SIGTERM, and after a second Ctrl-C
// that exits at once.
func TestMCPNoOrphansAfterSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tact and an MCP server for a few seconds")
	}
	tests := []struct {
		name string
		sigs []syscall.Signal
		code int
	}{
		{"SIGINT", []syscall.Signal{syscall.SIGINT}, 130},
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, 143},
		{"second SIGINT", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tact, dir, env := mcpTestSetup(t)
			pidFile := filepath.Join(dir, "pids")
			writeTestFile(t, filepath.Join(dir, ".config", "tact", "mcp.json"), stdioServerConfig(t, "s", "-child", "-pid-file", pidFile))
			plan := filepath.Join(dir, "slow.jsonl")
			writeTestFile(t, plan, `{"tool":"s.slow","args":{"seconds":60}}`+"\n"+`{"tool":"final_answer","args":{"answer":"late"}}`+"\n")
			trace := filepath.Join(dir, "trace.jsonl")
			ws := filepath.Join(dir, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tact, "exec", "--backend", "none", "--workspace", ws, "--trace", trace, plan)
			cmd.Env = env
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The step runs once the server and its child are up: both
			// pids are in the file.
			mcpWaitFor(t, "the server and its child", func() bool { return len(strings.Fields(readFile(pidFile))) == 2 })
			// And tact is in the step (a signal while the server still
			// starts is a failed start, exit 2, not the case under test).
			mcpWaitFor(t, "the step", func() bool { return strings.Contains(readFile(trace), `"execute_start"`) })
			var pids []int
			for _, f := range strings.Fields(readFile(pidFile)) {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, n)
			}
			if len(pids) != 2 {
				t.Fatalf("pid file %q", readFile(pidFile))
			}
			for _, s := range tt.sigs {
				if err := cmd.Process.Signal(s); err != nil {
					t.Fatal(err)
				}
				// Two signals, not one: the kernel merges a signal
				// sent while the same one is still pending.
				time.Sleep(5 * time.Millisecond)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("tact did not exit")
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tt.code {
				t.Fatalf("exit: %v, want %d", err, tt.code)
			}
			for i, p := range pids {
				if !processGone(p) {
					_ = syscall.Kill(p, syscall.SIGKILL)
					t.Errorf("%s pid %d outlived tact", []string{"server", "server's child"}[i], p)
				}
			}
		})
	}
}

// A secret in an MCP server's headers (from ${VAR}) reaches the server but
// never tact's outputs: stdout (plain and --json), stderr (debug logs
// included), the trace and the plan's own final answer.
func TestMCPHeaderSecretRedacted(t *testing.T) {
	const secret = "zq8-header-secret-771"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tact, dir, env := mcpTestSetup(t)
	urlFile := filepath.Join(dir, "url")
	srv := exec.Command(self)
	srv.Env = append(os.Environ(), mcptest.EnvServe+"="+mcptest.EnvValue("-http", "-url-file", urlFile, "-require-header", "Authorization=Bearer "+secret))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	mcpWaitFor(t, "the HTTP server", func() bool { return readFile(urlFile) != "" })
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"web": map[string]any{"url": readFile(urlFile), "headers": map[string]string{"Authorization": "Bearer ${MCPTEST_AUTH}"}},
	}})
	writeTestFile(t, filepath.Join(dir, "mcp.json"), string(cfg))
	plan := filepath.Join(dir, "plan.jsonl")
	writeTestFile(t, plan, `{"tool":"web.whoami","args":{}}`+"\n"+`{"tool":"final_answer","args":{"answer":{"$jq":".steps[0].output"}}}`+"\n")
	// The variable's name does not look secret: only the config makes it one.
	env = append(env, "MCPTEST_AUTH="+secret, "TACT_MCP_CONFIG="+filepath.Join(dir, "mcp.json"))
	for _, args := range [][]string{
		{"exec", "-v", "--backend", "none", "--workspace", dir, "--trace", filepath.Join(dir, "t1.jsonl"), plan},
		{"exec", "-v", "--backend", "none", "--workspace", dir, "--json", "--trace", filepath.Join(dir, "t2.jsonl"), plan},
		{"tools", "-v", "--json"},
		{"mcp", "list", "-v", "--json"},
	} {
		cmd := exec.Command(tact, args...)
		cmd.Env = env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("tact %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
		}
		for what, text := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
			if strings.Contains(text, secret) || strings.Contains(text, "zq8") {
				t.Errorf("tact %s: %s holds the secret:\n%s", strings.Join(args, " "), what, text)
			}
		}
		if args[0] == "exec" && !strings.Contains(stdout.String(), "client: tact dev; authorization: [REDACTED]") {
			t.Errorf("tact %s: stdout %q lacks the redacted answer", strings.Join(args, " "), stdout.String())
		}
		if args[0] == "mcp" && !strings.Contains(stdout.String(), `"state":"ready"`) {
			t.Errorf("mcp list: %s", stdout.String())
		}
	}
	for _, tr := range []string{"t1.jsonl", "t2.jsonl"} {
		text := readFile(filepath.Join(dir, tr))
		if strings.Contains(text, secret) || strings.Contains(text, "zq8") || !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s holds the secret or lacks the redacted observation:\n%s", tr, text)
		}
	}
}

// On a terminal an MCP write tool asks like a built-in one: the prompt
// names the tool, its class and its server, and "always" stores a rule for
// the tool that the next unattended run honours.
func TestMCPApprovalOnTerminal(t *testing.T) {
	c := newE2E(t)
	mark := filepath.Join(c.dir, "marks.txt")
	writeTestFile(t, filepath.Join(c.dir, ".config", "tact", "mcp.json"), stdioServerConfig(t, "t", "-mark", mark))
	plan := `{"tool":"t.write_note","args":{"text":"hello"}}` + "\n" + `{"tool":"final_answer","args":{"answer":"done"}}` + "\n"
	p, screen := ptyRun(t, c, plan, "a", false)
	for _, want := range []string{"t.write_note (write)", `MCP tool "write_note" of server t`, `"text": "hello"`} {
		if !strings.Contains(screen, want) {
			t.Errorf("the prompt lacks %q; terminal showed:\n%s", want, screen)
		}
	}
	res := p.result()
	if !res.Success || len(res.Trace.Steps) == 0 || res.Trace.Steps[0].Decision != "approved_always" {
		t.Fatalf("first run: %s\nstderr: %s", p.stdout.String(), p.stderr.String())
	}
	if got := readFile(mark); got != "hello\n" {
		t.Errorf("marks %q", got)
	}
	var pol struct {
		Allow []map[string]string `json:"allow"`
	}
	if err := json.Unmarshal([]byte(readFile(c.pol)), &pol); err != nil || len(pol.Allow) != 1 || pol.Allow[0]["tool"] != "t.write_note" || pol.Allow[0]["command"] != "" || pol.Allow[0]["path"] != "" {
		t.Fatalf("policy file %q (%v), want one rule {\"tool\": \"t.write_note\"}", readFile(c.pol), err)
	}
	p2 := c.run(c.args("--json", "--no-input", c.file("plan2.jsonl", plan))...)
	if code := p2.wait(10 * time.Second); code != 0 {
		t.Fatalf("second run exit %d\nstdout: %s\nstderr: %s", code, p2.stdout.String(), p2.stderr.String())
	}
	if st := p2.result().Trace.Steps[0]; st.Decision != "allow" {
		t.Errorf("second run decision %q, want allow (by the saved rule)", st.Decision)
	}
	if got := readFile(mark); got != "hello\nhello\n" {
		t.Errorf("marks after the second run %q", got)
	}
}
