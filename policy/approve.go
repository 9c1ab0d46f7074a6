package policy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Prompter asks a person one question. options are answer words, each
// optionally followed by an explanation ("always (don't ask again for ...)");
// Ask returns the chosen option's first word. An error (EOF, cancelled
// context) means no answer; callers treat it as a rejection.
type Prompter interface {
	Ask(ctx context.Context, summary string, options []string) (answer string, err error)
}

// Displayer is implemented by prompters that can show text without asking,
// so a step's actions can all be shown before the first question.
type Displayer interface {
	Display(text string) error
}

// maxAnswerLen bounds one answer line; a terminal never needs more, and a
// runaway pipe must not grow memory.
const maxAnswerLen = 4096

// LinePrompter asks on a line-oriented reader/writer pair (a terminal).
// Reads happen in a goroutine so a cancelled context unblocks Ask at once;
// a read still pending then serves the next Ask.
type LinePrompter struct {
	in     io.Reader
	src    LineReader // when set, answers come from it instead of in
	out    io.Writer
	closer io.Closer

	mu          sync.Mutex // one question at a time
	start       sync.Once
	reqs        chan struct{}
	lines       chan lineResult
	done        chan struct{}
	closeOnce   sync.Once
	outstanding bool
}

type lineResult struct {
	line string
	err  error
}

// NewPrompter returns a prompter reading answers from in and writing
// questions to out.
func NewPrompter(in io.Reader, out io.Writer) Prompter {
	return newLinePrompter(in, out)
}

func newLinePrompter(in io.Reader, out io.Writer) *LinePrompter {
	return &LinePrompter{
		in:    in,
		out:   out,
		reqs:  make(chan struct{}),
		lines: make(chan lineResult, 1),
		done:  make(chan struct{}),
	}
}

// LineReader reads one line of input; a read ended by ctx consumes
// nothing, so the next reader (a line editor sharing the terminal) gets
// what was typed.
type LineReader interface {
	ReadLine(ctx context.Context) (string, error)
}

// NewLineReaderPrompter returns a prompter writing questions to out and
// reading answers from lines, in the caller's goroutine: no read is left
// pending when Ask returns, so a terminal can be shared between approval
// prompts and a line editor (tact chat). It implements Displayer.
func NewLineReaderPrompter(lines LineReader, out io.Writer) Prompter {
	p := newLinePrompter(nil, out)
	p.src = lines
	return p
}

// OpenTTYPrompter opens the controlling terminal (/dev/tty) for reading and
// writing, so prompts work even when stdin is a pipe. It fails at once when
// the process has no controlling terminal (cron, CI, setsid); the caller then
// runs unattended. The result also implements io.Closer and Displayer.
func OpenTTYPrompter() (Prompter, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("no terminal for approval prompts: %w", err)
	}
	p := newLinePrompter(f, f)
	p.closer = f
	return p, nil
}

// Close stops the reader goroutine and closes the terminal it opened, if any.
func (p *LinePrompter) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		if p.closer != nil {
			err = p.closer.Close()
		}
	})
	return err
}

func (p *LinePrompter) readLoop() {
	br := bufio.NewReaderSize(p.in, 512)
	for {
		select {
		case <-p.done:
			return
		case <-p.reqs:
		}
		line, err := readBoundedLine(br)
		select {
		case p.lines <- lineResult{line, err}:
		case <-p.done:
			return
		}
	}
}

// readBoundedLine reads one line, dropping bytes beyond maxAnswerLen. A
// final line without newline still counts as an answer.
func readBoundedLine(br *bufio.Reader) (string, error) {
	var sb strings.Builder
	for {
		chunk, err := br.ReadSlice('\n')
		if sb.Len() < maxAnswerLen {
			n := min(len(chunk), maxAnswerLen-sb.Len())
			sb.Write(chunk[:n])
		}
		switch {
		case err == nil:
			return sb.String(), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case sb.Len() > 0:
			return sb.String(), nil
		default:
			return "", err
		}
	}
}

func (p *LinePrompter) readLine(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if p.src != nil {
		return p.src.ReadLine(ctx)
	}
	p.start.Do(func() { go p.readLoop() })
	if !p.outstanding {
		select {
		case p.reqs <- struct{}{}:
			p.outstanding = true
		case <-p.done:
			return "", io.ErrClosedPipe
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	select {
	case r := <-p.lines:
		p.outstanding = false
		return r.line, r.err
	case <-p.done:
		return "", io.ErrClosedPipe
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Display writes text (terminal control characters made visible).
func (p *LinePrompter) Display(text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := io.WriteString(p.out, sanitizeTerminal(text)+"\n")
	return err
}

// Ask writes summary followed by the options ("[y]es / [n]o: ") and reads
// answers until one names an option by its first letter or whole first word.
func (p *LinePrompter) Ask(ctx context.Context, summary string, options []string) (string, error) {
	if len(options) == 0 {
		return "", errors.New("prompt: no options to choose from")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	words := make([]string, len(options))
	rendered := make([]string, len(options))
	letters := make([]string, len(options))
	for i, o := range options {
		word, rest, _ := strings.Cut(strings.TrimSpace(o), " ")
		words[i] = strings.ToLower(word)
		r, size := utf8.DecodeRuneInString(word)
		letters[i] = strings.ToLower(string(r))
		rendered[i] = "[" + string(r) + "]" + word[size:]
		if rest != "" {
			rendered[i] += " " + rest
		}
	}
	question := sanitizeTerminal(summary)
	if question != "" && !strings.HasSuffix(question, "\n") {
		question += " "
	}
	question += sanitizeTerminal(strings.Join(rendered, " / ")) + ": "
	if _, err := io.WriteString(p.out, question); err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	for {
		line, err := p.readLine(ctx)
		if err != nil {
			// Leave the terminal on a fresh line for whatever prints next.
			_, _ = io.WriteString(p.out, "\n")
			return "", err
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		for i := range options {
			if ans != "" && (ans == letters[i] || ans == words[i]) {
				return words[i], nil
			}
		}
		retry := "Please answer " + joinOr(letters) + ": "
		if _, err := io.WriteString(p.out, retry); err != nil {
			return "", fmt.Errorf("prompt: %w", err)
		}
	}
}

func joinOr(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// SanitizeTerminal makes control characters visible (as \uXXXX), keeping
// newlines and tabs: model-written or tool-made text shown on a terminal
// cannot move the cursor, recolour or rewrite what is shown.
func SanitizeTerminal(s string) string { return sanitizeTerminal(s) }

// sanitizeTerminal makes control characters visible so model-written
// arguments cannot move the cursor, recolour or rewrite the prompt.
func sanitizeTerminal(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteRune(unicode.ReplacementChar)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
