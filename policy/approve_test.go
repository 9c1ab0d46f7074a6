package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tactcli/tact/tools"
)

var gtOptions = []string{"yes", "always (don't ask again for x)", "no"}

func TestPrompterAnswers(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    string
		wantErr error
		retries int
	}{
		{"y", "y\n", "yes", nil, 0},
		{"word", "Always\n", "always", nil, 0},
		{"spaces", "  n  \r\n", "no", nil, 0},
		{"no newline at EOF", "y", "yes", nil, 0},
		{"invalid then valid", "maybe\n\nx\nn\n", "no", nil, 3},
		{"EOF", "", "", io.EOF, 0},
		{"invalid then EOF", "what\n", "", io.EOF, 1},
		{"huge line", strings.Repeat("z", 100000) + "\ny\n", "yes", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := NewPrompter(strings.NewReader(tt.input), &out)
			got, err := p.Ask(t.Context(), "Run this?", gtOptions)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("Ask = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if !strings.HasPrefix(out.String(), "Run this? [y]es / [a]lways (don't ask again for x) / [n]o: ") {
				t.Errorf("prompt = %q", out.String())
			}
			if n := strings.Count(out.String(), "Please answer y, a or n: "); n != tt.retries {
				t.Errorf("re-asked %d times, want %d", n, tt.retries)
			}
		})
	}
}

// A cancelled context unblocks a pending read at once; the read still
// pending then answers the next question.
func TestPrompterCancel(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	p := NewPrompter(r, io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Ask(ctx, "q?", gtOptions)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("Ask = %v after %v, want prompt deadline error", err, time.Since(start))
	}
	go w.Write([]byte("n\n"))
	got, err := p.Ask(t.Context(), "q?", gtOptions)
	if got != "no" || err != nil {
		t.Fatalf("second Ask = %q, %v", got, err)
	}
	if _, err := p.Ask(ctx, "q?", gtOptions); err == nil {
		t.Fatalf("Ask with a done context succeeded")
	}
}

func TestPrompterClose(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	// Closed while Ask waits: once the question is written.
	asked := make(chan struct{})
	p := newLinePrompter(r, writerFunc(func(b []byte) (int, error) {
		select {
		case <-asked:
		default:
			close(asked)
		}
		return len(b), nil
	}))
	go func() {
		select {
		case <-asked:
			p.Close()
		case <-t.Context().Done():
		}
	}()
	if _, err := p.Ask(t.Context(), "q?", gtOptions); err == nil {
		t.Fatal("Ask on a closed prompter succeeded")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPrompterSanitizes(t *testing.T) {
	var out bytes.Buffer
	p := NewPrompter(strings.NewReader("n\n"), &out)
	p.Ask(t.Context(), "evil \x1b[2J\x1b]0;title\x07 text\r\u202e", []string{"yes", "no"})
	s := out.String()
	if strings.ContainsAny(s, "\x1b\x07\r\u202e") {
		t.Errorf("control characters reached the terminal: %q", s)
	}
	if !strings.Contains(s, `\u001b[2J`) {
		t.Errorf("escape not shown visibly: %q", s)
	}
}

// OpenTTYPrompter must fail at once without a controlling terminal (cron,
// CI), and the gate must then deny rather than wait. The check runs in a
// child started in a new session, which has no controlling terminal.
func TestOpenTTYPrompterNoTerminal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestGateHelperProcess$")
	cmd.Env = append(os.Environ(), "GO_EXEC_GATE_HELPER=no-tty")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = nil // /dev/null
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var res helperResult
	if err := json.Unmarshal(lastLine(stdout.String()), &res); err != nil {
		t.Fatalf("helper output %q: %v", stdout.String(), err)
	}
	if res.OpenErr == "" {
		t.Fatalf("OpenTTYPrompter succeeded without a controlling terminal")
	}
	if res.Elapsed > time.Second {
		t.Errorf("OpenTTYPrompter took %v", res.Elapsed)
	}
	if len(res.Verdicts) != 1 || res.Verdicts[0].Allowed || res.Verdicts[0].Reason != ReasonUnattended {
		t.Errorf("verdicts = %+v, want unattended denial", res.Verdicts)
	}
}

// The real /dev/tty path: the child's stdin is /dev/null and its controlling
// terminal is a pseudo-terminal; it still asks there, and "a" writes a rule.
func TestOpenTTYPrompterControllingTerminal(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	term := newPtyTerm(t, master)
	policy := filepath.Join(t.TempDir(), "policy.json")

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestGateHelperProcess$")
	cmd.Env = append(os.Environ(), "GO_EXEC_GATE_HELPER=tty", "GO_EXEC_GATE_POLICY="+policy)
	cmd.ExtraFiles = []*os.File{tty} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	term.waitFor("Run this?", 1)
	term.typeLine("a")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var res helperResult
	if err := json.Unmarshal(lastLine(stdout.String()), &res); err != nil {
		t.Fatalf("helper output %q: %v", stdout.String(), err)
	}
	if res.OpenErr != "" || len(res.Verdicts) != 1 || res.Verdicts[0].Decision != DecisionApprovedAlways {
		t.Fatalf("result = %+v; terminal:\n%s", res, term.output())
	}
	if !strings.Contains(term.output(), "git status -s") {
		t.Errorf("terminal did not show the command:\n%s", term.output())
	}
	pol, err := LoadPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	v := NewGate(GateOptions{Policy: pol}).Check(t.Context(), &tools.Env{Workspace: "/ws"}, []tools.Call{gtGit})
	if !v[0].Allowed {
		t.Errorf("saved rule not honoured: %+v (policy %+v)", v[0], pol)
	}
}

type helperResult struct {
	OpenErr  string          `json:"open_err"`
	Elapsed  time.Duration   `json:"elapsed"`
	Verdicts []tools.Verdict `json:"verdicts"`
}

// lastLine finds the helper's JSON line among the test binary's own output.
func lastLine(s string) []byte {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, `{"open_err"`) {
			return []byte(l)
		}
	}
	return nil
}

// TestGateHelperProcess is the child for the tests above; it does nothing
// in a normal run.
func TestGateHelperProcess(t *testing.T) {
	mode := os.Getenv("GO_EXEC_GATE_HELPER")
	if mode == "" {
		return
	}
	var res helperResult
	start := time.Now()
	p, err := OpenTTYPrompter()
	res.Elapsed = time.Since(start)
	opts := GateOptions{PolicyPath: os.Getenv("GO_EXEC_GATE_POLICY")}
	if err != nil {
		res.OpenErr = err.Error()
	} else {
		defer p.(io.Closer).Close()
		opts.Prompter = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res.Verdicts = NewGate(opts).Check(ctx, &tools.Env{Workspace: "/ws"}, []tools.Call{gtGit})
	b, _ := json.Marshal(res)
	fmt.Printf("\n%s\n", b)
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
