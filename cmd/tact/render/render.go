// Package render draws a run's events for a person at a terminal: a
// spinner line with the elapsed time while the model thinks or a tool runs,
// each action as one line as it starts (read_file(path="auth.py")), its
// observation as a few lines saying how much was left out, errors marked,
// and a dim line of token use and time per turn. It is a react.Sink; tact
// run and tact chat draw with it on stderr, so stdout keeps only answers.
//
// The status line is always cleared before anything else is printed: every
// line goes through the renderer (Println, LogWriter), and an approval
// prompt pauses it (Pause) so the prompt starts on a line of its own.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tactcli/tact/internal/text"
	"github.com/tactcli/tact/llm"
	"github.com/tactcli/tact/policy"
	"github.com/tactcli/tact/react"
	"github.com/tactcli/tact/tools"
)

// Options say how to draw.
type Options struct {
	// Color turns on ANSI colour and dim text (see ColorFor).
	Color bool
	// Spinner animates the status line; without it nothing but whole
	// lines is written (a log file, a test).
	Spinner bool
	// Width is the terminal's width in columns (nil or <= 0: 100).
	Width func() int
	// ObservationLines is how many lines of an observation are shown (0: 4).
	ObservationLines int
	// Hint follows the elapsed time on the status line ("Ctrl-C to interrupt").
	Hint string
	// Now is the clock (nil: time.Now), for tests.
	Now func() time.Time
}

// ColorFor reports whether text for a terminal may be coloured: it is a
// terminal, NO_COLOR is unset or empty (https://no-color.org) and TERM is
// not "dumb".
func ColorFor(isTerminal bool) bool {
	return isTerminal && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// Renderer is a react.Sink that draws one run (or one turn) at a time.
type Renderer struct {
	mu     sync.Mutex
	w      io.Writer
	o      Options
	label  string    // what the status line says is happening ("": none)
	since  time.Time // when that began
	frame  int
	drawn  bool // the status line is on the screen
	paused int
	done   chan struct{}
	closed sync.Once

	lastAction int // iteration of the last action line printed
	turn       turn
}

// turn is what one run spent, for the summary line.
type turn struct {
	start   time.Time
	end     time.Time
	usage   llm.Usage
	actions int
	ended   bool
}

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// New draws on w. With o.Spinner a goroutine animates the status line
// until Close.
func New(w io.Writer, o Options) *Renderer {
	if o.ObservationLines <= 0 {
		o.ObservationLines = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Renderer{w: w, o: o, done: make(chan struct{})}
	if o.Spinner {
		go r.spin()
	}
	return r
}

func (r *Renderer) spin() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			r.mu.Lock()
			r.frame++
			r.draw()
			r.mu.Unlock()
		}
	}
}

// Close stops the spinner and clears the status line.
func (r *Renderer) Close() {
	r.closed.Do(func() { close(r.done) })
	r.mu.Lock()
	defer r.mu.Unlock()
	r.label = ""
	r.clear()
}

// Status shows label on the status line (loading a model, say) until the
// next event or Idle.
func (r *Renderer) Status(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status(label)
}

// Idle clears the status line and keeps it off until the next run starts
// (the end of a turn, before the answer is printed).
func (r *Renderer) Idle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.label = ""
	r.clear()
}

// Pause clears the status line and keeps it off until the returned resume
// is called: an approval prompt is then alone on its lines.
func (r *Renderer) Pause() (resume func()) {
	r.mu.Lock()
	r.paused++
	r.clear()
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.paused--
			r.draw()
			r.mu.Unlock()
		})
	}
}

// Println writes line (sanitized for the terminal) on a line of its own.
func (r *Renderer) Println(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.println(policy.SanitizeTerminal(line))
}

// LogWriter is w with the status line cleared before each write and drawn
// again after it: for logs written while a run is drawn.
func (r *Renderer) LogWriter() io.Writer { return logWriter{r} }

type logWriter struct{ r *Renderer }

func (l logWriter) Write(p []byte) (int, error) {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	l.r.clear()
	n, err := l.r.w.Write(p)
	l.r.draw()
	return n, err
}

// Summary is the dim line of the last run's token use and time, e.g.
// "1,234 tokens (980 cached) · 2 actions · 3.1s"; "" before any run ended.
func (r *Renderer) Summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.turn
	if !t.ended {
		return ""
	}
	parts := []string{fmt.Sprintf("%s tokens", thousands(t.usage.Total()))}
	if t.usage.CachedTokens > 0 {
		parts[0] += fmt.Sprintf(" (%s cached)", thousands(t.usage.CachedTokens))
	}
	switch t.actions {
	case 0:
	case 1:
		parts = append(parts, "1 action")
	default:
		parts = append(parts, fmt.Sprintf("%d actions", t.actions))
	}
	parts = append(parts, seconds(t.end.Sub(t.start)))
	return r.paint(dim, strings.Join(parts, " · "))
}

// Handle draws one event (react.Sink).
func (r *Renderer) Handle(ev react.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Type {
	case react.EventRunStart:
		r.turn = turn{start: r.o.Now()}
		r.lastAction = 0
		r.status("starting")
	case react.EventPlanning:
		r.status("planning")
	case react.EventPlan, react.EventReplan:
		r.plan(ev)
	case react.EventModelCall:
		var kind llm.Kind
		_ = ev.Decode("kind", &kind)
		r.status(callLabel(kind))
	case react.EventAction:
		var it int
		var tool string
		var args json.RawMessage
		_ = ev.Decode("iteration", &it)
		_ = ev.Decode("tool", &tool)
		_ = ev.Decode("args", &args)
		r.lastAction = it
		r.println(r.actionLine(tool, args))
		r.status("running " + tool)
	case react.EventStep:
		var st react.StepTrace
		if ev.Decode("step", &st) == nil {
			r.step(st)
		}
	case react.EventCompaction:
		r.compaction(ev)
	case react.EventFallback:
		var msg string
		_ = ev.Decode("message", &msg)
		r.println(r.paint(yellow, "  stopping: ") + r.paint(dim, policy.SanitizeTerminal(text.FirstLine(msg))))
	case react.EventTermination:
		var u llm.Usage
		_ = ev.Decode("token_usage", &u)
		r.turn.usage, r.turn.end, r.turn.ended = u, r.o.Now(), true
		r.label = ""
		r.clear()
	}
}

// Kinds of text.
const (
	bold   = "1"
	dim    = "2"
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
)

func (r *Renderer) paint(style, s string) string {
	if !r.o.Color || s == "" {
		return s
	}
	return "\033[" + style + "m" + s + "\033[0m"
}

func (r *Renderer) width() int {
	w := 0
	if r.o.Width != nil {
		w = r.o.Width()
	}
	if w <= 0 {
		w = 100
	}
	return max(w, 20)
}

// status sets what the status line says, restarting its clock.
func (r *Renderer) status(label string) {
	if label != r.label {
		r.since = r.o.Now()
	}
	r.label = label
	r.draw()
}

// draw writes the status line over itself (mu held).
func (r *Renderer) draw() {
	if !r.o.Spinner || r.label == "" || r.paused > 0 {
		return
	}
	elapsed := seconds(r.o.Now().Sub(r.since))
	tail := " (" + elapsed
	if r.o.Hint != "" {
		tail += " · " + r.o.Hint
	}
	tail += ")"
	label := text.Clip(r.label, r.width()-utf8.RuneCountInString(tail)-4)
	fmt.Fprint(r.w, "\r\033[K"+r.paint(cyan, frames[r.frame%len(frames)])+" "+label+r.paint(dim, tail))
	r.drawn = true
}

// clear removes the status line (mu held).
func (r *Renderer) clear() {
	if r.drawn {
		fmt.Fprint(r.w, "\r\033[K")
		r.drawn = false
	}
}

// println writes a whole line above the status line (mu held).
func (r *Renderer) println(line string) {
	r.clear()
	fmt.Fprintln(r.w, line)
	r.draw()
}

func callLabel(kind llm.Kind) string {
	switch kind {
	case llm.KindPlan:
		return "planning"
	case llm.KindFill:
		return "filling in arguments"
	case llm.KindFallback:
		return "writing an answer"
	case llm.KindSummary:
		return "compacting"
	}
	return "thinking"
}

// actionLine is `● tool(key="value", n=3)`, clipped to the width.
func (r *Renderer) actionLine(tool string, args json.RawMessage) string {
	call := policy.SanitizeTerminal(tool) + "(" + formatArgs(args) + ")"
	call = text.Clip(call, r.width()-3)
	name, rest, _ := strings.Cut(call, "(")
	return r.paint(green, "●") + " " + r.paint(bold, name) + "(" + rest
}

// formatArgs writes an arguments object as key=value pairs in its own
// order; strings are quoted, long values clipped.
func formatArgs(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return policy.SanitizeTerminal(text.Clip(string(raw), 60))
	}
	var parts []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		parts = append(parts, policy.SanitizeTerminal(key)+"="+formatValue(v))
	}
	return strings.Join(parts, ", ")
}

func formatValue(v json.RawMessage) string {
	const most = 30 // room for the other arguments on one line
	var s string
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '"' && json.Unmarshal(t, &s) == nil {
		clipped := text.Clip(s, most)
		b, err := text.JSON(clipped) // quoted, newlines as \n
		if err != nil {
			return `"…"`
		}
		out := strings.TrimSuffix(string(b), "\n")
		if len(s) > 200 {
			out += " (" + text.DecimalSize(int64(len(s))) + ")"
		}
		return policy.SanitizeTerminal(out)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, v) != nil {
		return policy.SanitizeTerminal(text.Clip(string(v), most))
	}
	return policy.SanitizeTerminal(text.Clip(compact.String(), most))
}

// step draws what became of an action: its observation, an error or a skip.
func (r *Renderer) step(st react.StepTrace) {
	switch st.Action.Tool {
	case tools.FinalAnswer:
		return
	case "":
		r.println(r.paint(red, "✗") + " " + r.paint(dim, "invalid reply: "+policy.SanitizeTerminal(text.Clip(text.FirstLine(st.Error), r.width()-20))))
		return
	}
	if st.Iteration != r.lastAction {
		r.println(r.actionLine(st.Action.Tool, st.Action.Args))
	}
	r.turn.actions++
	obs := strings.TrimRight(policy.SanitizeTerminal(st.Observation), "\n ")
	switch {
	case st.SkipReason != "":
		r.println(r.paint(dim, "  ⎿ skipped ("+st.SkipReason+"): "+text.Clip(text.FirstLine(obs), r.width()-30)))
	case st.Observation == "interrupted":
		r.println(r.paint(yellow, "  ⎿ interrupted"))
	case st.Error != "" || st.ExitCode != 0:
		r.lines("  "+r.paint(red, "✗")+" ", obs)
	case obs == "":
		r.println(r.paint(dim, "  ⎿ (no output)"))
	default:
		r.lines("  ⎿ ", obs)
	}
	r.status("thinking")
}

// lines writes the first lines of an observation, the first after marker,
// then how much was left out.
func (r *Renderer) lines(marker, obs string) {
	all := strings.Split(obs, "\n")
	shown := all[:min(len(all), r.o.ObservationLines)]
	for i, l := range shown {
		prefix := "    "
		if i == 0 {
			prefix = marker
		}
		r.println(prefix + text.Clip(strings.ReplaceAll(l, "\t", "    "), r.width()-5))
	}
	if left := len(all) - len(shown); left > 0 {
		rest := len(strings.Join(all[len(shown):], "\n"))
		r.println(r.paint(dim, fmt.Sprintf("    … %d more lines (%s)", left, text.DecimalSize(int64(rest)))))
	}
}

// plan writes a plan as one dim line of its tools.
func (r *Renderer) plan(ev react.Event) {
	var rows []struct {
		Type string `json:"type"`
		Tool string `json:"tool"`
	}
	if ev.Decode("plan", &rows) != nil {
		return
	}
	var tools []string
	for _, row := range rows {
		if row.Type != "plan" && row.Tool != "" { // the header row has no tool
			tools = append(tools, policy.SanitizeTerminal(row.Tool))
		}
	}
	what := "plan"
	if ev.Type == react.EventReplan {
		what = "new plan"
	}
	r.println(r.paint(dim, text.Clip(fmt.Sprintf("%s: %s", what, strings.Join(tools, " → ")), r.width()-1)))
}

func (r *Renderer) compaction(ev react.Event) {
	var f struct {
		Scope     string `json:"scope"`
		Before    int    `json:"tokens_before"`
		After     int    `json:"tokens_after"`
		First     int    `json:"first_iteration"`
		Last      int    `json:"last_iteration"`
		FirstTurn int    `json:"first_turn"`
		LastTurn  int    `json:"last_turn"`
	}
	b, err := json.Marshal(ev.Fields)
	if err != nil || json.Unmarshal(b, &f) != nil {
		return
	}
	what := fmt.Sprintf("steps %d-%d", f.First, f.Last)
	if f.Scope == "conversation" {
		what = fmt.Sprintf("earlier turns %d-%d", f.FirstTurn, f.LastTurn)
	}
	r.println(r.paint(dim, fmt.Sprintf("  compacted %s to fit the context window (%s → %s tokens)", what, thousands(f.Before), thousands(f.After))))
}

// thousands writes n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// seconds writes a duration as "0.4s", "12s" or "2m05s".
func seconds(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
