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

func newProgress(io *iostreams, quiet bool) *progress {
	return &progress{io: io, on: io.StderrTTY && !quiet}
}

func (p *progress) update(line string) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(line) > 78 {
		line = line[:77] + "…"
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
