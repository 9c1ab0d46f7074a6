package main

import (
	"fmt"
	"sync"
)

// progress is the one-line status indicator, drawn only when stderr is a terminal.
type progress struct {
	mu    sync.Mutex
	io    *iostreams
	on    bool
	drawn bool
}

// progressWidth is the most bytes of a status line drawn.
const progressWidth = 78

func newProgress(io *iostreams, quiet bool) *progress {
	return &progress{io: io, on: io.StderrTTY && !quiet}
}

func (p *progress) update(line string) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Redact before shortening: a cut secret is no longer recognised.
	red := stderrRedactor(p.io.ErrOut)
	line = red.Redact(line)
	if len(line) > progressWidth {
		line = line[:red.CutBefore(line, progressWidth-1)] + "…"
	}
	fmt.Fprintf(p.io.ErrOut, "\r\033[K%s", line)
	p.drawn = true
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.io.ErrOut, "\r\033[K")
		p.drawn = false
	}
}
