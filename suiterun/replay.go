package suiterun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tactcli/tact/llm"
)

// Replay is the model backend of an offline suite run: it has no model,
// only the cassette of each trial (found in the call's context: see
// withPlayer), whose replies it hands out in order. A prompt whose digest
// differs from the recorded one is a mismatch, noted and still answered,
// so the case's assertions run too; a call past the cassette's end is a
// mismatch that fails the call, and so ends the trial.
type Replay struct{}

// BackendReplay is how the replay backend names itself in traces.
const BackendReplay = "replay"

// errNoCassette is a call without a cassette in its context: a bug.
var errNoCassette = errors.New("replay: this run has no cassette")

// Complete answers req with the trial's next recorded reply.
func (Replay) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	p := playerOf(ctx)
	if p == nil {
		return llm.Response{}, errNoCassette
	}
	query := ""
	if c := llm.CallInfoOf(ctx); c != nil {
		query = c.Query
	}
	r, err := p.next(req, query)
	if err != nil {
		return llm.Response{}, err
	}
	if req.OnToken != nil {
		req.OnToken(r.Text)
	}
	u := llm.Usage{PromptTokens: llm.EstimatePrompt(req.Messages), CompletionTokens: len(strings.Fields(r.Text))}
	if r.Usage != nil {
		u = *r.Usage // a replay costs what the recording did: its figures
	}
	return llm.Response{Text: r.Text, Usage: u}, nil
}

func (Replay) Close() error { return nil }

// ModelInfo: there is no model.
func (Replay) ModelInfo() llm.ModelInfo { return llm.ModelInfo{Backend: BackendReplay} }

// Concurrency: trials never wait for each other's replies.
func (Replay) Concurrency() int { return llm.Unbounded }

// player hands out one trial's replies and notes its mismatches.
type player struct {
	c          *Cassette
	mu         sync.Mutex
	calls      int
	mismatches []string
}

type playerKey struct{}

func withPlayer(ctx context.Context, p *player) context.Context {
	return context.WithValue(ctx, playerKey{}, p)
}

func playerOf(ctx context.Context) *player {
	p, _ := ctx.Value(playerKey{}).(*player)
	return p
}

// maxMismatches bounds the mismatches one trial reports: after a changed
// system prompt every call differs, and one line says so.
const maxMismatches = 5

func (p *player) next(req llm.Request, query string) (Reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	n := p.calls
	if n > len(p.c.Replies) {
		msg := fmt.Sprintf("call %d (%s): past the cassette's end (%d replies recorded)", n, req.Kind, len(p.c.Replies))
		if p.c.Path == "" {
			msg = fmt.Sprintf("call %d (%s): the case has no cassette (record one with tact test record, or run it live with --model)", n, req.Kind)
		}
		p.note(msg)
		return Reply{}, errors.New("replay: " + msg)
	}
	r := p.c.Replies[n-1]
	if r.Kind != req.Kind {
		p.note(fmt.Sprintf("call %d: the run asked for a %q reply where the recording has a %q one", n, req.Kind, r.Kind))
	} else if d := llm.PromptDigest(req.Messages, query); d != r.PromptDigest {
		p.note(fmt.Sprintf("call %d (%s): the prompt differs from the recorded one (system prompt, tools or query changed: digest %s, recorded %s)", n, req.Kind, d, r.PromptDigest))
	}
	return r, nil
}

func (p *player) note(msg string) {
	switch {
	case len(p.mismatches) < maxMismatches:
		p.mismatches = append(p.mismatches, msg)
	case len(p.mismatches) == maxMismatches:
		p.mismatches = append(p.mismatches, "more calls mismatch (only the first 5 are listed)")
	}
}

// result is the trial's mismatches. A run that made fewer calls than
// were recorded is no mismatch: it took another way (a denied step, an
// earlier answer), which its assertions judge.
func (p *player) result() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.mismatches...)
}
