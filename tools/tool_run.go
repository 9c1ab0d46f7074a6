package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/internal/procsafe"
	"github.com/tactcli/tact/sandbox"
)

// allowedEnv names the variables run_command passes on from tact's own
// environment; everything else (tokens, keys, TACT_*) stays out of the
// child. Forwarding them is not configuration, so they are read here rather
// than through config.Settings.
var allowedEnv = []string{"PATH", "HOME", "LANG", "TERM", "TZ", "USER"}

// fallbackPath is the child's PATH when tact itself has none.
const fallbackPath = "/usr/local/bin:/usr/bin:/bin"

// Exit codes recorded when no normal exit status exists, following the
// shell and coreutils timeout(1).
const (
	ExitNotFound      = sandbox.ExitNotFound      // command not found
	ExitCannotExecute = sandbox.ExitCannotExecute // found but could not be started
	ExitTimedOut      = 124                       // killed after Env.ToolTimeout
)

// RunCommand is the run_command tool.
type RunCommand struct{}

var runCommandSchema = schemaObject(map[string]any{
	"command":     schemaNonEmpty("Command line, split into words with POSIX shell quoting and run WITHOUT a shell: no pipes, redirections, globs or $VARS. Use sh -c '...' when you need them."),
	"working_dir": schemaStr(`Directory to run in, relative to the workspace root (default ".", the root).`),
}, "command")

func (RunCommand) Name() string { return "run_command" }
func (RunCommand) Description() string {
	return "Run a program in the workspace (argv split with shell quoting, no shell) and return its stdout; stderr and exit code are recorded."
}
func (RunCommand) Class() Class            { return ClassExec }
func (RunCommand) Schema() json.RawMessage { return runCommandSchema }
func (RunCommand) Declare() Decl {
	return Decl{Command: "command", WorkDir: "working_dir", HookNames: []string{"Bash"}}
}

// commandLine is a decoded run_command call.
type commandLine struct {
	argv []string
	dir  string // absolute, inside the workspace
}

// parse decodes the arguments, splits the command and resolves the working
// directory. It runs nothing, so fuzzing and approval prompts use it freely.
func (t RunCommand) parse(env *Env, raw json.RawMessage) (commandLine, error) {
	var command string
	workDir := "."
	if err := decodeArgs(t.Name(), raw,
		argSpec{name: "command", required: true, dst: &command},
		argSpec{name: "working_dir", dst: &workDir},
	); err != nil {
		return commandLine{}, err
	}
	argv, err := shellquote.Split(command)
	if err != nil {
		return commandLine{}, fmt.Errorf("run_command: cannot split %q: %v", command, err)
	}
	if len(argv) == 0 {
		return commandLine{}, errors.New("run_command: command is empty")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return commandLine{}, fmt.Errorf("run_command: argument %q contains a NUL byte", a)
		}
	}
	if workDir == "" {
		workDir = "."
	}
	dir, err := env.Resolve(workDir)
	if err != nil {
		return commandLine{}, fmt.Errorf("run_command: working_dir: %w", err)
	}
	return commandLine{argv: argv, dir: dir}, nil
}

// Describe says exactly what will run, and under which sandbox, for approval
// prompts: run_command: argv ["ls","-la"] in /abs/workdir (sandbox: workspace-write)
func (t RunCommand) Describe(env *Env, raw json.RawMessage) string {
	cl, err := t.parse(env, raw)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("run_command: argv %s in %s (sandbox: %s)", argvJSON(cl.argv), cl.dir, env.SandboxInfo())
}

func argvJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (t RunCommand) Run(ctx context.Context, env *Env, raw json.RawMessage) Result {
	cl, err := t.parse(env, raw)
	if err != nil {
		return toolFail(err)
	}
	if fi, err := os.Stat(cl.dir); err != nil {
		return toolFail(fmt.Errorf("run_command: working_dir %s: %w", env.Rel(cl.dir), unwrapPathError(err)))
	} else if !fi.IsDir() {
		return toolFail(fmt.Errorf("run_command: working_dir %s is not a directory", env.Rel(cl.dir)))
	}
	childEnv, err := commandEnv(env.ExtraEnv)
	if err != nil {
		return toolFail(fmt.Errorf("run_command: %w", err))
	}
	prog, err := LookCommand(cl.argv[0], cl.dir, childEnvValue(childEnv, "PATH"))
	if err != nil {
		code := ExitCannotExecute
		if errors.Is(err, fs.ErrNotExist) {
			code = ExitNotFound
		}
		return Result{ExitCode: code, Err: fmt.Errorf("run_command: %w", err)}
	}
	if err := ctx.Err(); err != nil {
		return toolFail(fmt.Errorf("run_command: not started: %w", err))
	}
	return runProcess(ctx, env, prog, cl, childEnv)
}

// runProcess runs prog under the sandbox helper (or, where a library never
// enabled the helper and the sandbox is off, directly in its own process
// group) and supervises it: output streams into bounded head/tail buffers;
// on timeout or cancellation the command's whole tree gets SIGTERM, then
// SIGKILL after the grace period; processes it leaves behind are ended the
// same way when it exits.
func runProcess(ctx context.Context, env *Env, prog string, cl commandLine, childEnv []string) Result {
	plan, err := env.sandboxPlan()
	if err != nil {
		return Result{ExitCode: ExitCannotExecute, Err: fmt.Errorf("run_command: %w", err)}
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return toolFail(fmt.Errorf("run_command: %w", err))
	}
	defer devnull.Close()
	var tmpDir string
	if plan.tmpDir {
		if tmpDir, err = os.MkdirTemp("", "tact-run-"); err != nil {
			return toolFail(fmt.Errorf("run_command: private TMPDIR: %w", err))
		}
		defer removeTmpDir(tmpDir)
		if _, set := lookupEnv(childEnv, "TMPDIR"); !set { // an --env TMPDIR wins
			childEnv = append(childEnv, "TMPDIR="+tmpDir)
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return toolFail(fmt.Errorf("run_command: %w", err))
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return toolFail(fmt.Errorf("run_command: %w", err))
	}
	defer errR.Close()

	var (
		proc   *os.Process
		report <-chan sandbox.Report
	)
	// Only the three files above may reach the command: nothing tact
	// inherited, nothing llama.cpp opened without O_CLOEXEC.
	if err := procsafe.Seal(); err != nil {
		return toolFail(fmt.Errorf("run_command: %w", err))
	}
	if plan.helper {
		// The helper's parent-death signal is tied to this OS thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		proc, report, err = sandbox.Start(sandbox.Spec{
			Prog: prog, Argv: cl.argv, Dir: cl.dir, Env: childEnv,
			Landlock: plan.landlock, ABI: plan.abi, Mode: plan.asked, Workspace: env.Workspace,
			TmpDir: tmpDir, NoNetwork: plan.noNetwork, KillGrace: env.killGrace(), Parent: os.Getpid(),
		}, [3]*os.File{devnull, outW, errW})
	} else {
		proc, err = os.StartProcess(prog, cl.argv, &os.ProcAttr{
			Dir:   cl.dir,
			Env:   childEnv,
			Files: []*os.File{devnull, outW, errW},
			Sys:   &syscall.SysProcAttr{Setpgid: true},
		})
	}
	// The child has its copies; ours must go so EOF arrives when it exits.
	outW.Close()
	errW.Close()
	if err != nil {
		code := ExitCannotExecute
		if errors.Is(err, fs.ErrNotExist) {
			code = ExitNotFound
		}
		return Result{ExitCode: code, Err: fmt.Errorf("run_command: start %s: %w", cl.argv[0], unwrapPathError(err))}
	}
	// Setpgid with Pgid 0, or Setsid, makes the child its group's leader.
	pgid := proc.Pid
	untrack := sandbox.TrackGroup(pgid, plan.helper)
	defer untrack()

	limit := env.outputCap()
	stdout, stderr := newCapBuffer(limit, env.Redactor), newCapBuffer(limit, env.Redactor)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); io.Copy(stdout, outR) }()
	go func() { defer readers.Done(); io.Copy(stderr, errR) }()

	var ex struct {
		state *os.ProcessState
		err   error
	}
	exited := make(chan struct{}) // closed once ex is set
	go func() {
		ex.state, ex.err = proc.Wait()
		close(exited)
	}()
	group := sandbox.ProcessGroup(pgid)

	timeout, grace := env.toolTimeout(), env.killGrace()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var (
		timedOut bool
		canceled error
	)
	select {
	case <-exited:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		canceled = ctx.Err()
	}
	switch {
	case (timedOut || canceled != nil) && plan.helper:
		// The helper ends the command's whole tree on SIGTERM; its group
		// is killed only if it does not manage within the grace period.
		group.Stop(sandbox.Ending{Signal: syscall.SIGTERM, Leader: true, Grace: grace + sandbox.HelperSlack, Gone: exited})
		<-exited
	case timedOut || canceled != nil:
		group.Stop(sandbox.Ending{Signal: syscall.SIGTERM, Grace: grace})
		<-exited
	}
	if group.Alive() {
		// Left in the group: background processes of a directly started
		// command, or the rest of a helper that was killed. None may
		// outlive the call.
		group.Stop(sandbox.Ending{Signal: syscall.SIGTERM, Grace: grace})
	}

	// Wait for EOF on both pipes. A process that escaped (setsid without
	// the helper, or one handed the pipe) may still hold them; then stop
	// reading instead of hanging.
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	held := false
	select {
	case <-drained:
	case <-time.After(max(grace, 100*time.Millisecond)):
		held = true
		outR.Close()
		errR.Close()
		<-drained
	}

	res := Result{Output: stdout.String(), Stderr: stderr.String()}
	if held {
		res.Stderr += "\n[run_command: output pipes held open by a process outside the command's process group; stopped reading]"
	}
	var ws syscall.WaitStatus
	if ex.err == nil {
		ws, _ = ex.state.Sys().(syscall.WaitStatus)
	}
	if plan.helper && ex.err == nil {
		var rep sandbox.Report
		select {
		case rep = <-report:
		case <-time.After(time.Second): // cannot happen: the pipe closed when the helper exited
		}
		switch {
		case rep.Error != "":
			res.ExitCode = rep.Code
			res.Err = fmt.Errorf("run_command: %s", rep.Error)
			return res
		case rep.Started:
			ws = syscall.WaitStatus(rep.Status)
		case !timedOut && canceled == nil:
			// Killed before it could report (out of memory, kill -9): what
			// the command did is unknown.
			res.ExitCode = sandbox.WaitStatusCode(ws)
			res.Err = fmt.Errorf("run_command: %s: the sandbox helper ended without a report (%s)", cl.argv[0], describeExit(ws))
			return res
		}
	}
	switch {
	case timedOut:
		res.ExitCode = ExitTimedOut
		res.Err = fmt.Errorf("run_command: %s: timed out after %s", cl.argv[0], shortDuration(timeout))
	case canceled != nil:
		res.ExitCode = sandbox.WaitStatusCode(ws)
		res.Err = fmt.Errorf("run_command: %s: canceled: %w", cl.argv[0], canceled)
	case ex.err != nil:
		res.ExitCode = ExitCannotExecute
		res.Err = fmt.Errorf("run_command: wait: %w", ex.err)
	default:
		res.ExitCode = sandbox.WaitStatusCode(ws)
		if res.ExitCode != 0 {
			res.Err = fmt.Errorf("run_command: %s: %s", cl.argv[0], describeExit(ws))
		}
	}
	return res
}

// removeTmpDir removes a command's private TMPDIR, making directories the
// command left unwritable or unreadable removable first.
func removeTmpDir(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

func describeExit(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// fmtDuration prints whole seconds as "60s" rather than Go's "1m0s".
func shortDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// commandEnv builds the child's environment: the allow-listed variables
// from tact's environment, then extra KEY=VALUE pairs (which win).
func commandEnv(extra []string) ([]string, error) {
	var keys []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	for _, k := range allowedEnv {
		if v, ok := os.LookupEnv(k); ok {
			set(k, v)
		}
	}
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, "\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("bad environment entry %q: want KEY=VALUE", kv)
		}
		set(k, v)
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", fallbackPath)
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

// CommandPath is the PATH run_command gives its commands (tact's own, or a
// fallback, unless ExtraEnv sets one), so others can resolve program names
// as the command will.
func (e *Env) CommandPath() string {
	if childEnv, err := commandEnv(e.ExtraEnv); err == nil {
		return childEnvValue(childEnv, "PATH")
	}
	return fallbackPath
}

func childEnvValue(env []string, key string) string {
	v, _ := lookupEnv(env, key)
	return v
}

func lookupEnv(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// LookCommand finds the program for argv[0]: a name with a slash is taken
// relative to the working directory; a bare name is searched in the child's
// PATH (absolute entries only, so a relative entry cannot pick up a program
// from the working directory). Errors wrap fs.ErrNotExist when nothing was
// found.
func LookCommand(name, dir, path string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return p, nil
	}
	var denied error
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		err := checkExecutable(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && denied == nil {
			denied = fmt.Errorf("%s: %w", p, err)
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", fmt.Errorf("%s: command not found: %w", name, fs.ErrNotExist)
}

var errNotExecutable = errors.New("not executable")

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return fs.ErrNotExist
		}
		return unwrapPathError(err)
	}
	if fi.IsDir() {
		return fmt.Errorf("is a directory: %w", errNotExecutable)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("permission denied: %w", errNotExecutable)
	}
	return nil
}
