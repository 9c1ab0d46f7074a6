package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tactcli/tact/internal/procsafe"
	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/sandbox"
)

// Environment switches that make this test binary a small program for the
// sandbox tests: the commands they run are real processes, so they can be
// put under Landlock and killed like any other.
const (
	testNetEnv     = "TACT_EXEC_TEST_NET"     // "dial ADDR" or "listen": try it, exit 0 on success, 3 if denied
	testRunCmdEnv  = "TACT_EXEC_TEST_RUNCMD"  // run_command JSON args: run them as tact would, in the working directory
	testSandboxEnv = "TACT_EXEC_TEST_SANDBOX" // the sandbox mode of that run (default: the default)
)

// TestMain lets this test binary serve as run_command's sandbox helper: the
// helper re-executes the binary, which must not run the tests again.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == probeProcArg {
		os.Exit(probeProc())
	}
	if v, ok := os.LookupEnv(testNetEnv); ok {
		os.Exit(testNetProgram(v))
	}
	sandbox.ServeHelper()
	if v, ok := os.LookupEnv(testRunCmdEnv); ok {
		os.Exit(testRunCmdProgram(v))
	}
	os.Exit(m.Run())
}

// testNetProgram tries one plain-TCP operation (not Multipath TCP, which
// Landlock does not cover).
func testNetProgram(op string) int {
	var err error
	var addr string
	switch {
	case op == "listen":
		lc := net.ListenConfig{}
		lc.SetMultipathTCP(false)
		var l net.Listener
		if l, err = lc.Listen(context.Background(), "tcp", "127.0.0.1:0"); err == nil {
			l.Close()
		}
	case len(op) > 5 && op[:5] == "dial ":
		addr = op[5:]
		d := net.Dialer{}
		d.SetMultipathTCP(false)
		var c net.Conn
		if c, err = d.Dial("tcp", addr); err == nil {
			c.Close()
		}
	default:
		fmt.Fprintf(os.Stderr, "bad %s=%q\n", testNetEnv, op)
		return 2
	}
	if err != nil {
		fmt.Println("net error:", err)
		return 3
	}
	fmt.Println("net ok")
	return 0
}

// testRunCmdProgram runs one run_command call, like a tact process would,
// and prints the result; the test kills this process meanwhile.
func testRunCmdProgram(args string) int {
	wd, _ := os.Getwd()
	env, err := NewEnv(wd)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if mode, ok := os.LookupEnv(testSandboxEnv); ok {
		if env.Sandbox, err = sandbox.ParseMode(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	// As tact's runtime does once it knows its secrets.
	if err := procsafe.HideEnviron(func(name, _ string) bool { return redact.IsSecretEnvName(name) }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	res := RunCommand{}.Run(context.Background(), env, json.RawMessage(args))
	fmt.Printf("%q %v\n", res.Output, res.Err)
	return 0
}

// probeProcArg makes this test binary the command of
// TestCommandCannotReadTactSecrets: it reads what it can of its parent (the
// helper) and grandparent (tact) through /proc and prints it as JSON.
const probeProcArg = "__tact-test-probe-proc"

type procProbe struct {
	PID     int    `json:"pid"`
	Environ []byte `json:"environ,omitempty"` // base64 in JSON
	Cmdline []byte `json:"cmdline,omitempty"`
	Mem     []byte `json:"mem,omitempty"` // the first bytes of the first mapping
}

func probeProc() int {
	var out []procProbe
	pid := os.Getppid()
	for range 2 {
		p := procProbe{PID: pid}
		dir := fmt.Sprintf("/proc/%d/", pid)
		p.Environ, _ = os.ReadFile(dir + "environ")
		p.Cmdline, _ = os.ReadFile(dir + "cmdline")
		if maps, err := os.ReadFile(dir + "maps"); err == nil {
			var start uint64
			if _, err := fmt.Sscanf(string(maps), "%x-", &start); err == nil {
				if f, err := os.Open(dir + "mem"); err == nil {
					buf := make([]byte, 4)
					if n, _ := f.ReadAt(buf, int64(start)); n > 0 {
						p.Mem = buf[:n]
					}
					f.Close()
				}
			}
		}
		out = append(out, p)
		status, _ := os.ReadFile(dir + "status")
		pid = 0
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				pid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return 0
}
