package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/sandbox"
	"github.com/tactcli/tact/tools"
)

// Approver decides, in place of a person, the write/exec calls that no rule
// allows. Answer is "yes", "always" or "no"; an error means no answer and
// is treated as a denial, with the error as the reason.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (answer string, err error)
}

// ApprovalRequest is one call as an approval prompt shows it, for a program
// to decide on. Every string in it is redacted.
type ApprovalRequest struct {
	RunID     string `json:"run_id"`    // tools.WithRunID's id; "" when the context has none
	Tool      string `json:"tool"`      // the tool's name
	Class     string `json:"class"`     // read, write or exec
	Workspace string `json:"workspace"` // the workspace's absolute path
	// Sandbox is run_command's sandbox in a few words (SandboxInfo.String).
	Sandbox string `json:"sandbox,omitempty"`
	// Command, Argv and WorkingDir are set for calls with a command: the
	// command line as given, its words, and the absolute directory it runs in.
	Command    string   `json:"command,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	WorkingDir string   `json:"working_dir,omitempty"`
	// Path is a file tool's path as the tool will reach it: cleaned, with
	// the workspace's symlinks resolved (docs/out/x where docs/out ->
	// ../src is src/x), workspace-relative inside it, else absolute.
	Path string `json:"path,omitempty"`
	// LexicalPath is the path as the call spelled it (workspace-relative
	// when inside, not resolved): for showing only, never for deciding.
	LexicalPath string `json:"lexical_path,omitempty"`
	// Diff shows write_file's and edit_file's change: "-" lines for the
	// text replaced (the current file, or old_string), "+" lines for the
	// new, under "--- a/PATH" and "+++ b/PATH", capped at MaxApprovalDiff.
	Diff string `json:"diff,omitempty"`
	// Arguments are the call's arguments as the model gave them.
	Arguments json.RawMessage `json:"arguments"`
	// Summary is what the terminal prompt shows for the call (DescribeCall).
	Summary string `json:"summary"`
	// AlwaysRule is the allow rule an "always" answer adds (Rule.String);
	// when empty, AlwaysUnavailable says why there is none and "always"
	// approves this call only.
	AlwaysRule        string `json:"always_rule"`
	AlwaysUnavailable string `json:"always_unavailable,omitempty"`
}

// Answers an Approver gives.
const (
	AnswerYes    = "yes"
	AnswerAlways = "always"
	AnswerNo     = "no"
)

// MaxApprovalDiff bounds ApprovalRequest.Diff, in bytes (notes aside).
const MaxApprovalDiff = 64 << 10

// request builds the approval request for c, every string redacted with
// both the gate's and the workspace's redactor: nothing secret may reach the
// approver.
func (g *policyGate) request(ctx context.Context, env *tools.Env, c tools.Call, rule Rule, noRule error) ApprovalRequest {
	red := func(s string) string {
		if env != nil {
			s = env.Redactor.Redact(s)
		}
		return g.o.Redactor.Redact(s)
	}
	f := factsOf(env, c)
	req := ApprovalRequest{
		RunID:   red(tools.RunID(ctx)),
		Tool:    red(f.tool),
		Summary: red(DescribeCall(env, c)),
	}
	if c.Tool != nil {
		req.Class = string(c.Tool.Class())
	}
	if env != nil {
		req.Workspace = red(env.Workspace)
	}
	if noRule != nil {
		req.AlwaysUnavailable = red(noRule.Error())
	} else {
		req.AlwaysRule = red(rule.String())
	}
	args := c.Args
	if env != nil {
		args = env.Redactor.RedactJSON(args)
	}
	args = g.o.Redactor.RedactJSON(args)
	switch {
	case len(bytes.TrimSpace(args)) == 0:
		args = json.RawMessage(`{}`)
	case !json.Valid(args):
		// The request must stay valid JSON; the approver gets the text.
		args, _ = json.Marshal(string(args))
	}
	req.Arguments = args
	if f.hasCmd {
		req.Command = red(commandLine(c.Args, f.argv))
		for _, w := range f.argv {
			req.Argv = append(req.Argv, red(w))
		}
		req.WorkingDir = red(callDir(env, f))
		if env != nil {
			req.Sandbox = env.SandboxInfo().String()
		}
	}
	if f.hasPath {
		req.Path = red(f.shown())
		req.LexicalPath = red(f.path)
		req.Diff = fileDiff(env, c, f, red)
	}
	return req
}

// commandLine is the "command" argument as one line: as typed when it is a
// string, else its words quoted.
func commandLine(raw json.RawMessage, argv []string) string {
	var args struct {
		Command json.RawMessage `json:"command"`
	}
	var s string
	if json.Unmarshal(raw, &args) == nil && json.Unmarshal(args.Command, &s) == nil {
		return s
	}
	return shellquote.Join(argv...)
}

// fileDiff is the change a call makes to the file at its first path, as
// a unified-style diff of the whole replaced text against the new, for
// tools that declare the arguments holding it (tools.Decl's Content, Old
// and New: write_file, edit_file); "" for other tools or arguments that do
// not decode.
func fileDiff(env *tools.Env, c tools.Call, f callFacts, red func(string) string) string {
	if !f.declared {
		return ""
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(c.Args, &args) != nil {
		return ""
	}
	text := func(name string) *string {
		var s *string // null stays nil
		if raw, ok := args[name]; !ok || name == "" || json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return s
	}
	content, old, repl := text(f.decl.Content), text(f.decl.Old), text(f.decl.New)
	var oldText, newText, note string
	var oldSize int64
	switch {
	case old != nil && repl != nil:
		oldText, newText = *old, *repl
		oldSize = int64(len(oldText))
	case content != nil:
		newText = *content
		// Read twice what can be shown, so that a secret cut in two at the
		// end of the read lies beyond what the diff shows.
		data, size, err := readWorkspaceFile(env, f.path, 2*MaxApprovalDiff)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			note = "\\ the current file is not shown: " + red(err.Error()) + "\n"
		default:
			oldText, oldSize = string(data), size
		}
	default:
		return ""
	}
	oldPartial := oldSize > int64(len(oldText))
	newSize := int64(len(newText))
	oldText, newText = red(oldText), red(newText)
	p := red(f.shown())
	a, b := "a/"+p, "b/"+p
	if path.IsAbs(p) { // a link leading out (the tool refuses it)
		a, b = p, p
	}
	head := "--- " + a + "\n+++ " + b + "\n" + note
	// Each side gets half of what is left, or more when the other needs less.
	budget := max(MaxApprovalDiff-len(head), 0)
	minus, plus := diffLines(oldText, '-'), diffLines(newText, '+')
	minusBudget := max(budget/2, budget-len(plus))
	plusBudget := max(budget/2, budget-min(len(minus), minusBudget))
	return head + cutSide(minus, minusBudget, oldSize, oldPartial, "the current text") +
		cutSide(plus, plusBudget, newSize, false, "the new text")
}

// diffLines prefixes every line of s with sign; "" has no lines.
func diffLines(s string, sign byte) string {
	if s == "" {
		return ""
	}
	s = strings.TrimSuffix(s, "\n")
	var b strings.Builder
	b.Grow(len(s) + strings.Count(s, "\n") + 2)
	for _, line := range strings.Split(s, "\n") {
		b.WriteByte(sign)
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// cutSide keeps at most budget bytes of lines, cut at a line end when one
// is in reach, with a note saying how big the whole was.
func cutSide(lines string, budget int, size int64, partial bool, what string) string {
	if len(lines) <= budget && !partial {
		return lines
	}
	kept := lines
	if len(kept) > budget {
		kept = kept[:text.RuneStart(kept, budget)]
		if i := strings.LastIndexByte(kept, '\n'); i >= 0 {
			kept = kept[:i+1]
		} else if kept != "" {
			kept += "\n"
		}
	}
	return kept + fmt.Sprintf("\\ cut: the diff shows at most %s; %s has %d bytes\n", text.BinarySize(MaxApprovalDiff), what, size)
}

// readWorkspaceFile reads at most limit bytes of the regular file at the
// workspace-relative rel, and its size. It goes through tools.Env.Resolve
// and an os.Root of the workspace, so neither ".." nor a symlink can make
// it read outside; a FIFO or device is refused, never waited on.
func readWorkspaceFile(env *tools.Env, rel string, limit int64) ([]byte, int64, error) {
	if env == nil || env.Workspace == "" {
		return nil, 0, errors.New("no workspace")
	}
	real, err := env.Resolve(rel)
	if err != nil {
		return nil, 0, err
	}
	ws := env.Workspace
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	inner, err := filepath.Rel(ws, real)
	if err != nil {
		return nil, 0, fmt.Errorf("path %q: %w", rel, err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, 0, fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	fi, err := root.Lstat(inner)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", rel)
	}
	f, err := root.OpenFile(inner, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", rel, err)
	}
	return data, max(fi.Size(), int64(len(data))), nil
}

// CommandApproverOptions configures NewCommandApprover.
type CommandApproverOptions struct {
	Command string        // run as /bin/sh -c Command
	Timeout time.Duration // per request; 0 means DefaultApproverTimeout
	Dir     string        // working directory; "" means the request's workspace
	Env     []string      // the command's environment; nil means os.Environ()
	Log     *slog.Logger
}

// DefaultApproverTimeout is how long an approval command may take.
const DefaultApproverTimeout = 5 * time.Minute

// Exit statuses of an approval command; any other status means no.
const (
	ApproverExitYes    = 0
	ApproverExitAlways = 3
)

type commandApprover struct {
	o   CommandApproverOptions
	log *slog.Logger
}

// NewCommandApprover returns an Approver that runs a program of the user's
// for each request (outside the sandbox: it is theirs), with the request's
// JSON on stdin and TACT_RUN_ID and TACT_WORKSPACE in its environment. Exit
// status 0 is yes, 3 always; any other status, a signal, a timeout or a
// failure to start is no, with an error naming what happened. It runs with
// sandbox.RunProgram: in a session of its own (no terminal), its process
// group killed at the timeout or when ctx ends, and with it any child still
// holding its output once it has exited.
func NewCommandApprover(o CommandApproverOptions) Approver {
	a := &commandApprover{o: o, log: o.Log}
	if a.o.Timeout <= 0 {
		a.o.Timeout = DefaultApproverTimeout
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a
}

func (a *commandApprover) Approve(ctx context.Context, req ApprovalRequest) (string, error) {
	if strings.TrimSpace(a.o.Command) == "" {
		return AnswerNo, errors.New("no approval command")
	}
	// Unescaped "<", ">" and "&", so a command reads in the raw JSON as typed.
	payload, err := text.JSON(req)
	if err != nil {
		return AnswerNo, fmt.Errorf("approval request: %w", err)
	}
	payload = append(payload, '\n')
	dir := a.o.Dir
	if dir == "" {
		dir = req.Workspace
	}
	res := sandbox.RunProgram(ctx, sandbox.Program{
		Command: a.o.Command, Dir: dir, Env: approverEnv(a.o.Env, req),
		Stdin: payload, Timeout: a.o.Timeout,
	})
	a.log.Debug("approval command done", "tool", req.Tool, "run_id", req.RunID,
		"exit", res.ExitCode, "signal", res.Signal, "timed_out", res.TimedOut, "start_err", res.StartErr,
		"took", res.Duration.Round(time.Millisecond), "stdout", string(res.Stdout), "stderr", string(res.Stderr))

	stderr := string(res.Stderr)
	switch {
	case ctx.Err() != nil:
		// The call is over: whatever the command answered, nobody asks.
		return AnswerNo, fmt.Errorf("approver stopped: %w", context.Cause(ctx))
	case res.StartErr != nil:
		return AnswerNo, fmt.Errorf("approver could not start: %w", res.StartErr)
	case res.TimedOut:
		return AnswerNo, fmt.Errorf("approver timed out after %s", a.o.Timeout)
	case res.ExitCode == ApproverExitYes:
		return AnswerYes, nil
	case res.ExitCode == ApproverExitAlways:
		return AnswerAlways, nil
	case res.ExitCode > 0:
		return AnswerNo, withStderr(fmt.Sprintf("approver exited %d", res.ExitCode), stderr)
	case res.Signal != 0:
		return AnswerNo, withStderr(fmt.Sprintf("approver killed by signal %d (%s)", int(res.Signal), res.Signal), stderr)
	}
	return AnswerNo, withStderr("approver ended without an exit status", stderr)
}

// withStderr is msg with the first non-empty line of stderr, if any.
func withStderr(msg, stderr string) error {
	for _, line := range strings.Split(stderr, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return errors.New(msg + ": " + sanitizeTerminal(text.Clip(line, 500)))
		}
	}
	return errors.New(msg)
}

// approverEnv is base (os.Environ() when nil) with TACT_RUN_ID and
// TACT_WORKSPACE set to the request's.
func approverEnv(base []string, req ApprovalRequest) []string {
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+2)
	for _, kv := range base {
		if !strings.HasPrefix(kv, "TACT_RUN_ID=") && !strings.HasPrefix(kv, "TACT_WORKSPACE=") {
			env = append(env, kv)
		}
	}
	return append(env, "TACT_RUN_ID="+req.RunID, "TACT_WORKSPACE="+req.Workspace)
}
