package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/tactcli/tact/agent"
	"github.com/tactcli/tact/cmd/tact/render"
	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/sandbox"
	"github.com/tactcli/tact/schema"
	"github.com/tactcli/tact/tools"
)

// chatOptions is tact chat's test seam: everything it needs, parsed.
type chatOptions struct {
	IO      *iostreams
	S       *config.Settings
	Runtime runtimeFunc
	Resume  string // --resume RUN: reopen that run's conversation
	// earlier is the reopened conversation (nil: a new one).
	earlier *agent.Conversation
}

// newChatCmd makes tact chat; runF (nil: chatRun) runs it, for tests.
func newChatCmd(f *factory, runF func(context.Context, *chatOptions) error) *cobra.Command {
	o := &chatOptions{IO: f.IO, S: f.Settings, Runtime: f.Runtime}
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "An interactive agent session: each line is a turn of one conversation",
		Long: "Talk to the agent: each query is a turn of one conversation, planned or acted on\n" +
			"like tact run, and the model sees the earlier turns. On a terminal: a line editor\n" +
			"with history, a spinner, each action and its observation, approval prompts,\n" +
			"Ctrl-C to interrupt a turn, /help for commands, Ctrl-D or /exit to leave. With\n" +
			"standard input not a terminal: one query a line, each answer on stdout followed\n" +
			"by a blank line, unattended. See docs/chat.md.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), o)
			}
			return chatRun(c.Context(), o)
		},
		Annotations: map[string]string{annSettings: "flags"},
	}
	// run's flags but --json and --query: a chat prints answers as they come.
	fl, s := cmd.Flags(), f.Settings
	addWorkspaceFlags(fl, s)
	addOutputFlags(fl, s, "")
	addPlannerFlags(fl, s, "tools the turns may use, comma-separated (default: every tool)")
	addModelFlags(fl, s)
	addExecutorFlags(fl, s)
	addAnswerFlags(fl, s)
	addHistoryFlags(fl, s)
	addSafetyFlags(fl, s)
	fl.StringVar(&o.Resume, "resume", "", "reopen the conversation of `RUN` (an id, a unique prefix, or last: the newest run in this workspace): the next turns follow it")
	return cmd
}

// chatRun is interactive when standard input and stderr are terminals,
// else it reads one query a line.
func chatRun(ctx context.Context, o *chatOptions) error {
	if o.Resume != "" {
		turns, err := agent.EarlierTurns(ctx, o.Resume, o.S.Workspace)
		if err != nil {
			return err
		}
		o.earlier = agent.ResumeConversation(turns)
	}
	if stdinIsTerminal(o.IO) && o.IO.StderrTTY {
		return chatTerminal(ctx, o, o.IO.In.(*os.File))
	}
	return chatLines(ctx, o)
}

// chatSession is what both modes share: the runtime, the conversation,
// planning on or off, and what the slash commands show.
type chatSession struct {
	io   *iostreams
	s    *config.Settings
	rt   *agent.Runtime
	conv *agent.Conversation

	dryRun react.Sink // --dry-run's listing of each turn; nil without it

	mu         sync.Mutex
	noPlan     bool
	schema     string            // the answer schema of the next turns (/schema; "": none)
	plan       []json.RawMessage // the current turn's (or last turn's) plan rows
	lastPrompt int               // prompt tokens of the latest model call
}

// newChatSession starts a conversation on rt; say writes a line on stderr
// (the dry-run listing's).
func newChatSession(o *chatOptions, rt *agent.Runtime, say func(line string)) *chatSession {
	conv := o.earlier
	if conv == nil {
		conv = agent.NewConversation()
	}
	c := &chatSession{io: o.IO, s: o.S, rt: rt, conv: conv, noPlan: o.S.NoPlan, schema: o.S.Schema}
	if o.S.DryRun && !o.S.Quiet {
		c.dryRun = newDryRunSink(say)
	}
	return c
}

// openChatRuntime opens the runtime; a chat needs a model for every turn.
func openChatRuntime(ctx context.Context, o *chatOptions, opts agent.Options) (*agent.Runtime, error) {
	opts.Mode, opts.History = "chat", true
	rt, err := o.Runtime(ctx, opts)
	if err != nil {
		return nil, err
	}
	if !rt.HasModel() {
		return nil, badInputf("tact chat needs a model: %s; or give --model PATH (or TACT_MODEL), --script FILE or --base-url URL", agent.NoModelHint())
	}
	return rt, nil
}

// Handle keeps what /plan and /context show and lists a dry run
// (react.Sink).
func (c *chatSession) Handle(ev react.Event) {
	if c.dryRun != nil {
		c.dryRun.Handle(ev)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case react.EventRunStart:
		c.plan = nil
	case react.EventPlan, react.EventReplan:
		var rows []json.RawMessage
		if ev.Decode("plan", &rows) == nil {
			c.plan = rows
		}
	case react.EventModelCall:
		var n int
		if ev.Decode("prompt_tokens", &n) == nil {
			c.lastPrompt = n
		}
	}
}

// run runs query as the conversation's next turn.
func (c *chatSession) run(ctx context.Context, query string) (*react.Result, error) {
	job := agent.Job{Query: query, Conversation: c.conv, Events: c}
	c.mu.Lock()
	if c.noPlan != c.s.NoPlan || c.schema != c.s.Schema {
		s := *c.s
		s.NoPlan, s.Schema = c.noPlan, c.schema
		job.Settings = &s
	}
	c.mu.Unlock()
	return c.rt.Run(ctx, job)
}

// chatHelp lists the slash commands.
const chatHelp = `/help      this list
/tools     the tools a turn may use
/plan      the current plan (the last turn's)
/noplan    turn planning off, or on again
/schema    the answer schema: /schema JSON or @FILE sets it, /schema off clears it
/trace     where the trace goes
/clear     start a new conversation (the model forgets the earlier turns)
/model     the backend and model
/context   tokens used of the context window
/exit      end the session (also Ctrl-D, or Ctrl-C on an empty prompt)
A line ending with \ goes on on the next line; a pasted block is one query.
Ctrl-C during a turn interrupts it; a second Ctrl-C within a second exits.`

// command runs a slash command, writing to w; true ends the session.
func (c *chatSession) command(line string, w io.Writer) (exit bool) {
	name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch name {
	case "/exit", "/quit":
		return true
	case "/help", "/?":
		fmt.Fprintln(w, chatHelp)
	case "/tools":
		c.tools(w)
	case "/plan":
		c.showPlan(w)
	case "/noplan":
		c.mu.Lock()
		c.noPlan = !c.noPlan
		on := !c.noPlan
		c.mu.Unlock()
		if on {
			fmt.Fprintln(w, "planning is on: each turn is planned first")
		} else {
			fmt.Fprintln(w, "planning is off: each action comes from the model (/noplan again to turn it on)")
		}
	case "/schema":
		_, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		c.setSchema(strings.TrimSpace(arg), w)
	case "/trace":
		if c.s.Trace == "" {
			fmt.Fprintln(w, "no trace: start tact chat with --trace FILE (or TACT_TRACE) to record each turn's events")
		} else {
			fmt.Fprintf(w, "trace: %s (each turn is a run with its own run_id; run_start names the conversation and turn)\n", c.s.Trace)
		}
	case "/clear":
		c.conv.Clear()
		c.mu.Lock()
		c.plan, c.lastPrompt = nil, 0
		c.mu.Unlock()
		fmt.Fprintln(w, "new conversation: the earlier turns are forgotten")
	case "/model":
		c.model(w)
	case "/context":
		c.context(w)
	default:
		fmt.Fprintf(w, "unknown command %s; /help lists them\n", policy.SanitizeTerminal(name))
	}
	return false
}

// setSchema shows the answer schema of the next turns (arg ""), clears
// it ("off") or sets it (inline JSON or @FILE, checked now: a schema that
// does not compile leaves the old one).
func (c *chatSession) setSchema(arg string, w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch arg {
	case "":
		if c.schema == "" {
			fmt.Fprintln(w, "no answer schema: answers are text (/schema JSON or @FILE sets one)")
		} else {
			fmt.Fprintln(w, "answer schema: "+policy.SanitizeTerminal(c.schema))
		}
	case "off", "none":
		c.schema = ""
		fmt.Fprintln(w, "no answer schema: answers are text again")
	default:
		raw, err := schema.ReadAnswer(arg)
		if err != nil {
			fmt.Fprintln(w, policy.SanitizeTerminal("schema not changed: "+err.Error()))
			return
		}
		c.schema = string(raw)
		fmt.Fprintln(w, "answer schema set: each answer is one line of JSON that validates against it")
	}
}

func (c *chatSession) tools(w io.Writer) {
	allowed := map[string]bool{}
	for _, t := range c.s.AllowTools {
		allowed[t] = true
	}
	for _, t := range c.rt.Registry.List() {
		if len(allowed) > 0 && !allowed[t.Name()] && t.Name() != tools.FinalAnswer {
			continue
		}
		fmt.Fprintf(w, "%-16s %-5s %s\n", t.Name(), t.Class(), policy.SanitizeTerminal(text.FirstLine(t.Description())))
	}
}

func (c *chatSession) showPlan(w io.Writer) {
	c.mu.Lock()
	rows, noPlan := c.plan, c.noPlan
	c.mu.Unlock()
	n := 0
	for _, raw := range rows {
		var row struct {
			Type    string          `json:"type"`
			Thought string          `json:"thought"`
			Tool    string          `json:"tool"`
			Args    json.RawMessage `json:"args"`
		}
		if json.Unmarshal(raw, &row) != nil || row.Type == "plan" || row.Tool == "" {
			continue // the header row
		}
		n++
		line := fmt.Sprintf("%d. %s %s", n, row.Tool, row.Args)
		if row.Thought != "" {
			line += " — " + row.Thought
		}
		fmt.Fprintln(w, policy.SanitizeTerminal(line))
	}
	if n == 0 {
		if noPlan {
			fmt.Fprintln(w, "no plan: planning is off (/noplan turns it on)")
		} else {
			fmt.Fprintln(w, "no plan yet in this conversation")
		}
	}
}

func (c *chatSession) model(w io.Writer) {
	m := c.rt.Model()
	name := m.Model
	if m.Script != "" {
		name = "script " + m.Script
	}
	fmt.Fprintf(w, "backend: %s\n", termCell(m.Backend))
	if name != "" {
		fmt.Fprintf(w, "model: %s\n", termCell(name))
	}
	if size := c.window(); size > 0 {
		fmt.Fprintf(w, "context window: %d tokens\n", size)
	}
	fmt.Fprintf(w, "temperature: %g, max tokens a reply: %d\n", c.s.Temperature, c.s.MaxTokens)
}

// window is the context window turns must fit (0: the backend sets none).
func (c *chatSession) window() int {
	if c.s.CtxSize > 0 {
		return c.s.CtxSize
	}
	return c.rt.Model().ContextSize
}

func (c *chatSession) context(w io.Writer) {
	c.mu.Lock()
	last := c.lastPrompt
	c.mu.Unlock()
	turns, earlier := c.conv.Turns(), c.conv.Tokens(c.rt.Backend)
	size := c.window()
	switch {
	case last == 0:
		fmt.Fprint(w, "no model call yet in this conversation")
	case size > 0:
		fmt.Fprintf(w, "the last prompt took %d of %d tokens (%d%%)", last, size, last*100/size)
	default:
		fmt.Fprintf(w, "the last prompt took %d tokens; the backend sets no window (give --ctx-size to have a long conversation compacted)", last)
	}
	if turns == 1 {
		fmt.Fprintf(w, "; 1 earlier turn takes %d tokens", earlier)
	} else {
		fmt.Fprintf(w, "; %d earlier turns take %d tokens", turns, earlier)
	}
	if size > 0 {
		fmt.Fprintf(w, " (compacted when they pass half of what a turn leaves; steps at --compact-at %.2g)", c.s.CompactAt)
	}
	fmt.Fprintln(w)
}

// chatLines is the session without a terminal: one query a line (a line
// ending with \ goes on), each answer on stdout followed by a blank line;
// no spinner, no prompts (unattended, as tact batch).
func chatLines(ctx context.Context, o *chatOptions) error {
	rt, err := openChatRuntime(ctx, o, agent.Options{})
	if err != nil {
		return err
	}
	c := newChatSession(o, rt, func(line string) { fmt.Fprintln(o.IO.ErrOut, line) })
	lines := readChatLines(ctx, o.IO.In)
	var parts []string
	for {
		var line string
		var err error
		select {
		case <-ctx.Done():
			// A signal while waiting for the next line ends the session.
			return sessionEnded(ctx)
		case l := <-lines:
			line, err = l.text, l.err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return badInputf("reading standard input: %v", err)
		}
		eof := errors.Is(err, io.EOF)
		if strings.HasSuffix(line, `\`) && !eof {
			parts = append(parts, strings.TrimSuffix(line, `\`))
			continue
		}
		query := strings.TrimSpace(strings.Join(append(parts, line), "\n"))
		parts = nil
		if query != "" {
			if strings.HasPrefix(query, "/") {
				if c.command(query, o.IO.ErrOut) {
					return nil
				}
			} else if err := c.lineTurn(ctx, query); err != nil {
				return err
			}
		}
		if eof {
			return nil
		}
	}
}

// chatLine is a line of a piped session, or the error that ended them.
type chatLine struct {
	text string
	err  error
}

// readChatLines reads r's lines on a goroutine, so that the session can
// wait for a line and for a signal at once; it stops after an error (EOF
// included) or when ctx ends.
func readChatLines(ctx context.Context, r io.Reader) <-chan chatLine {
	out := make(chan chatLine)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			text, err := readChatLine(br)
			select {
			case out <- chatLine{text, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// readChatLine reads one line (without its newline), at most 1 MiB.
func readChatLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(b)+len(chunk) > 1<<20 {
			return "", errors.New("a line is longer than 1 MiB")
		}
		b = append(b, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return strings.TrimRight(string(b), "\r\n"), err
	}
}

// lineTurn runs one turn of a piped session and prints its answer.
func (c *chatSession) lineTurn(ctx context.Context, query string) error {
	res, err := c.run(ctx, query)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// A turn that could not start (its plan failed, the window is too
		// small) ends only that turn.
		fmt.Fprintf(c.io.ErrOut, "tact: %s\n", termLine(err.Error()))
		fmt.Fprintln(c.io.Out)
		return nil
	}
	if res.TerminationReason == react.ReasonCancelled && ctx.Err() != nil {
		return &exitError{Code: res.ExitCode(), Err: errSilent}
	}
	if err := printResult(c.io.Out, false, res, c.rt.Redactor); err != nil {
		return err
	}
	fmt.Fprintln(c.io.Out)
	if res.TerminationReason != react.ReasonSuccess && res.Message != "" {
		fmt.Fprintf(c.io.ErrOut, "tact: turn %d: %s: %s\n", c.conv.Turns(), res.TerminationReason, termLine(res.Message))
	}
	return nil
}

// errCtrlC is the cause of a turn ended by Ctrl-C.
var errCtrlC = errors.New("Ctrl-C")

// chatTerminal is the interactive session.
func chatTerminal(ctx context.Context, o *chatOptions, stdin *os.File) error {
	ctx, endSession := context.WithCancelCause(ctx)
	defer endSession(nil)
	in := newTTYInput(stdin)
	rend := render.New(o.IO.ErrOut, render.Options{Color: render.ColorFor(true), Spinner: !o.S.Quiet,
		Width: stderrWidth, Hint: "Ctrl-C to interrupt"})
	defer rend.Close()
	defer logThrough(rend.LogWriter())()
	var prompter policy.Prompter
	if !o.S.NoInput && !o.S.DryRun {
		prompter = pausingPrompter(policy.NewLineReaderPrompter(in, o.IO.ErrOut), rend)
	}
	var events react.Sink = rend
	if o.S.Quiet {
		events = nil
	}
	rend.Status("starting")
	rt, err := openChatRuntime(ctx, o, agent.Options{Prompter: prompter, Events: events})
	rend.Idle()
	if err != nil {
		return err
	}
	c := newChatSession(o, rt, rend.Println)
	hist := loadHistory(historyPath())
	ed := newLineEditor(ctx, in, int(stdin.Fd()), os.Stderr, hist)

	// Ctrl-C during a turn ends the turn, not tact; the turn's cancel is
	// set while it runs.
	var (
		mu        sync.Mutex
		cancel    context.CancelCauseFunc
		lastCtrlC time.Time
	)
	setInterruptHook(func() {
		mu.Lock()
		defer mu.Unlock()
		if cancel == nil {
			// Not from the keyboard (raw mode at the prompt): a signal
			// someone sent ends the session as it ends other commands.
			endSession(&signalError{sig: os.Interrupt, code: 130})
			return
		}
		if time.Since(lastCtrlC) < time.Second {
			rend.Close()
			fmt.Fprintln(o.IO.ErrOut, "tact: interrupted twice; exiting")
			sandbox.KillRunning()
			os.Exit(130)
		}
		lastCtrlC = time.Now()
		cancel(errCtrlC)
	})
	defer setInterruptHook(nil)

	m := rt.Model()
	who := m.Backend
	if m.Model != "" {
		who += " " + m.Model
	}
	if !o.S.Quiet {
		fmt.Fprintln(o.IO.ErrOut, dimText(fmt.Sprintf("tact chat · %s · workspace %s · /help for commands, Ctrl-D to exit", who, rt.Env.Workspace)))
	}
	prompt, more := "tact> ", "  ... "
	if render.ColorFor(true) {
		prompt = "\033[1mtact>\033[0m "
	}
	for {
		q, err := ed.readQuery(prompt, more)
		switch {
		case errors.Is(err, errInterrupt):
			if strings.TrimSpace(q) == "" {
				return nil // Ctrl-C on an empty prompt
			}
			continue // the line typed is dropped, as in a shell
		case errors.Is(err, io.EOF):
			fmt.Fprintln(o.IO.ErrOut)
			return nil // Ctrl-D
		case err != nil:
			if ctx.Err() != nil {
				return sessionEnded(ctx)
			}
			return err
		}
		if hist.err != nil {
			fmt.Fprintf(o.IO.ErrOut, "tact: %v (the history is not saved)\n", hist.err)
			hist.err, hist.path = nil, ""
		}
		q = strings.TrimSpace(q)
		switch {
		case q == "":
			continue
		case strings.HasPrefix(q, "/"):
			if c.command(q, o.IO.ErrOut) {
				return nil
			}
			continue
		}
		turnCtx, end := context.WithCancelCause(ctx)
		mu.Lock()
		cancel, lastCtrlC = end, time.Time{} // a Ctrl-C of an earlier turn does not count
		mu.Unlock()
		res, err := c.run(turnCtx, q)
		mu.Lock()
		cancel = nil
		mu.Unlock()
		end(nil)
		rend.Idle()
		if ctx.Err() != nil {
			// SIGTERM (or an outside SIGINT) during the turn ends the session.
			return sessionEnded(ctx)
		}
		c.showTurn(res, err, rend)
	}
}

// sessionEnded is the exit of a session a signal ended: 130, or 143 for
// SIGTERM.
func sessionEnded(ctx context.Context) error {
	code := 130
	var se *signalError
	if errors.As(context.Cause(ctx), &se) {
		code = se.code
	}
	return &exitError{Code: code, Err: errSilent}
}

// showTurn prints a turn's outcome: the answer on stdout, how it ended
// when it did not succeed, and the dim line of tokens and time.
func (c *chatSession) showTurn(res *react.Result, err error, rend *render.Renderer) {
	w := c.io.ErrOut
	if err != nil {
		fmt.Fprintf(w, "tact: %s\n\n", termLine(err.Error()))
		return
	}
	switch res.TerminationReason {
	case react.ReasonSuccess:
		_ = printResult(c.io.Out, false, res, c.rt.Redactor)
	case react.ReasonCancelled:
		fmt.Fprintln(w, colorText("33", "⏹ interrupted")+dimText(" (the turn is kept as interrupted)"))
	default:
		_ = printResult(c.io.Out, false, res, c.rt.Redactor)
		msg := string(res.TerminationReason)
		if res.Message != "" {
			msg += ": " + res.Message
		}
		fmt.Fprintln(w, colorText("33", "⚠ "+policy.SanitizeTerminal(msg)))
	}
	if s := rend.Summary(); s != "" && !c.s.Quiet {
		fmt.Fprintln(w, "  "+s)
	}
	fmt.Fprintln(w)
}

func dimText(s string) string { return colorText("2", s) }

func colorText(style, s string) string {
	if !render.ColorFor(true) {
		return s
	}
	return "\033[" + style + "m" + s + "\033[0m"
}
