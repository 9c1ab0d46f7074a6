package mcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kballard/go-shellquote"
	"github.com/tactcli/tact/internal/procsafe"
	"github.com/tactcli/tact/sandbox"
)

// inheritedEnv are the variables a stdio server gets from tact's
// environment (as the reference SDKs do); anything else, secrets included,
// must be passed on by name in the server's "env".
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "NODE_PATH", "NODE_EXTRA_CA_CERTS",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

// maxStderrLine bounds one logged stderr line of a server.
const maxStderrLine = 4096

// process is a running stdio server: the leader of its own process group.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File // our end of its stdin
	stdout *os.File // our end of its stdout
	exited chan struct{}
	// waitErr and stderrTail are for the error that names how it ended.
	waitErr     error
	mu          sync.Mutex
	stderrTail  []string // its last stderrKept lines
	untrack     func()
	commandLine string // what was run, for a start error (the reason may lie in it: a package name, a path)
	stopOnce    sync.Once
}

// startProcess starts a stdio server in its own process group, with its
// stderr logged at debug level line by line.
func startProcess(cfg *ServerConfig, log *slog.Logger) (*process, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Cwd
	cmd.Env = childEnv(cfg.Env)
	cmd.SysProcAttr = procAttr()
	// Plain pipes rather than cmd's: Wait must not close our ends while the
	// SDK still reads the last reply.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// The server gets these three pipes and nothing else tact holds.
	if err := procsafe.Seal(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, unwrapExec(err))
	}
	closeAll(inR, outW, errW)
	p := &process{cmd: cmd, pgid: cmd.Process.Pid, stdin: inW, stdout: outR, exited: make(chan struct{}),
		commandLine: shellquote.Join(append([]string{cfg.Command}, cfg.Args...)...)}
	p.untrack = sandbox.TrackProcessGroup(p.pgid)
	log.Debug("MCP server started", "server", cfg.Name, "pid", p.pgid, "command", cfg.Command, "args", cfg.Args)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		p.logStderr(errR, cfg.Name, log)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		// Let the last stderr lines in before reporting how it ended
		// (a grandchild holding stderr open must not delay that long).
		select {
		case <-stderrDone:
		case <-time.After(200 * time.Millisecond):
		}
		close(p.exited)
		log.Debug("MCP server exited", "server", cfg.Name, "pid", p.pgid, "status", p.waitErr)
	}()
	return p, nil
}

func (p *process) logStderr(r *os.File, server string, log *slog.Logger) {
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\r")
			if isPrefix {
				text += "…"
				for isPrefix && err == nil { // skip the rest of a long line
					_, isPrefix, err = br.ReadLine()
				}
			}
			p.mu.Lock()
			p.stderrTail = append(p.stderrTail, text)
			if len(p.stderrTail) > stderrKept {
				p.stderrTail = p.stderrTail[len(p.stderrTail)-stderrKept:]
			}
			p.mu.Unlock()
			log.Debug("MCP server stderr", "server", server, "line", text)
		}
		if err != nil {
			return
		}
	}
}

// exitError says how the process ended, with the reason its stderr gave
// (stderrReason).
func (p *process) exitError() error {
	p.mu.Lock()
	reason := stderrReason(p.stderrTail)
	p.mu.Unlock()
	msg := "exited"
	var ee *exec.ExitError
	switch {
	case errors.As(p.waitErr, &ee) && ee.Exited():
		msg = fmt.Sprintf("exited with status %d", ee.ExitCode())
	case errors.As(p.waitErr, &ee):
		msg = "ended by " + ee.String()
	case p.waitErr == nil:
		msg = "exited with status 0"
	}
	if reason != "" {
		msg += ": " + reason
	}
	return errors.New(msg)
}

// stderrKept is how many of a server's last stderr lines are kept for
// saying why it ended.
const stderrKept = 40

// stderrNoise are stderr lines that say nothing of why a server ended:
// npm's notices and warnings (a newer npm is available, deprecations), its
// pointer to a log file, bare "npm error" lines and its syscall/errno
// lines, stack frames, and lines of punctuation only.
var stderrNoise = regexp.MustCompile(`(?i)^(npm (notice|warn)\b.*|npm (error|err!)( \S+)?|npm (error|err!) (syscall|errno) \S+|npm (error|err!) a complete log of this run.*|at \S.*(:\d+:\d+\)?|\(native\)|<anonymous>\)?)|node:internal/\S*|node\.js v[\d.]+|[\W_]*)$`)

// stderrError marks a line that reads like the reason.
var stderrError = regexp.MustCompile(`(?i)(error|exception|fatal|panic|cannot|can't|could not|couldn't|failed|not found|no such|denied|refused|invalid|missing|unknown)`)

// stderrReason is why a server ended, from its last stderr lines, at most
// 3 joined with " | ", stderrNoise dropped: an npm failure's reason (it
// prints it first, "npm error code E404" and the request that failed,
// advice after); else the last lines that read like an error ("Error:
// Cannot find module", a traceback's last line); else the last line.
func stderrReason(lines []string) string {
	var kept, errs []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if stderrNoise.MatchString(l) {
			continue
		}
		if len(l) > 200 {
			l = l[:200] + "…"
		}
		kept = append(kept, l)
		if stderrError.MatchString(l) {
			errs = append(errs, l)
		}
	}
	const most = 3
	for i, l := range kept {
		if low := strings.ToLower(l); strings.HasPrefix(low, "npm error code ") || strings.HasPrefix(low, "npm err! code ") {
			return strings.Join(kept[i:min(i+most, len(kept))], " | ")
		}
	}
	if len(errs) > 0 {
		return strings.Join(errs[max(len(errs)-most, 0):], " | ")
	}
	if len(kept) > 0 {
		return kept[len(kept)-1]
	}
	return ""
}

// stop ends the server as the MCP specification asks: close its stdin, wait
// for it to exit, then SIGTERM, then SIGKILL; whatever is left of its
// process group (children it started) is killed at the end either way.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		group := sandbox.ProcessGroup(p.pgid)
		if !waitClosed(p.exited, grace) {
			group.Stop(sandbox.Ending{Signal: syscall.SIGTERM, Grace: time.Second, Gone: p.exited})
			waitClosed(p.exited, 5*time.Second)
		}
		group.Kill()
		p.stdout.Close()
		p.untrack()
	})
}

func waitClosed(ch chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func childEnv(extra []string) []string {
	env := []string{} // never nil: os/exec gives a nil Env all of tact's
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

func closeAll(cs ...io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// unwrapExec drops os/exec's repetition of the command name.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
