package agent

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// lines is a terminal's prompter: Ask as an approval's (first words), and
// AskText reading the next of its lines.
type lines struct {
	in    []string
	asked []string
}

func (l *lines) Ask(context.Context, string, []string) (string, error) {
	return "", errors.New("Ask called: options sharing first words cannot be told apart")
}

func (l *lines) AskText(_ context.Context, q string) (string, error) {
	l.asked = append(l.asked, q)
	if len(l.in) == 0 {
		return "", io.EOF
	}
	a := l.in[0]
	l.in = l.in[1:]
	return a, nil
}

// At a terminal, ask_user's options are chosen whole, by number or text,
// even when they share first words and letters ("the red one", "the blue
// one"); a wrong answer is asked again.
func TestTerminalChoosesWholeOptions(t *testing.T) {
	opts := []string{"the red one", "the blue one"}
	cases := []struct {
		name string
		in   []string
		want string
		err  bool
	}{
		{"by text", []string{"the blue one"}, "the blue one", false},
		{"any case", []string{"  The Red One "}, "the red one", false},
		{"by number", []string{"2"}, "the blue one", false},
		{"again after a wrong one", []string{"the", "3", "the red one"}, "the red one", false},
		{"no answer", nil, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &lines{in: c.in}
			got, err := askerOf(p)(context.Background(), "Which config is live?", opts)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("got %q %v, want %q (err %v)", got, err, c.want, c.err)
			}
			if !strings.Contains(p.asked[0], "1) the red one") || !strings.Contains(p.asked[0], "2) the blue one") {
				t.Errorf("prompt %q does not list the options", p.asked[0])
			}
		})
	}
}
