package llamacpp

// What every call does around the scheduler's decodes (sched.go): its
// prompt and sampler before any decode, each token drawn, the conditions
// that end a reply, and its count and log line at the end.

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tactcli/tact/llm"
)

// prepare formats and tokenizes req's prompt, checks that it fits the
// context, builds its sampler and finds its pinned prefix (promptcache.go).
// b.mu is held.
func (b *Backend) prepare(req llm.Request) (tokens []int, smpl *sampler, pin []int, err error) {
	tokens, err = b.promptTokens(req.Messages)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(tokens) >= b.opts.CtxSize {
		return nil, nil, nil, fmt.Errorf("%w: the prompt is %d tokens, the context holds %d (raise --ctx-size)", ErrContextFull, len(tokens), b.opts.CtxSize)
	}
	if smpl, err = b.sampler(req); err != nil {
		return nil, nil, nil, err
	}
	return tokens, smpl, b.pinnedPrefix(req, tokens), nil
}

// draw is a call's next token, drawn from the batch just decoded.
type draw struct {
	tok   int
	eog   bool
	piece string
	err   error
}

// drawToken samples the token at idx of the last decode with smpl and
// advances smpl; safe to run for different samplers at once.
func (b *Backend) drawToken(smpl *sampler, idx int) draw {
	tok, err := smpl.sample(b.lc, idx)
	if err != nil {
		return draw{err: err}
	}
	eog := b.model.TokenIsEog(tok)
	smpl.accept(tok, eog)
	d := draw{tok: tok, eog: eog}
	if !eog {
		d.piece = b.model.TokenToPiece(tok)
	}
	return d
}

// stopAfter says whether a reply ends after its generated-th token, and
// with what error: at MaxTokens, once cancelled (cancelErr, non-nil), or
// when its sequence, holding used tokens, fills the context.
func (b *Backend) stopAfter(req llm.Request, generated int, cancelErr error, used int) (bool, error) {
	switch {
	case req.MaxTokens > 0 && generated >= req.MaxTokens:
		return true, nil
	case cancelErr != nil:
		return true, cancelErr
	case used >= b.opts.CtxSize:
		return true, fmt.Errorf("%w after %d generated tokens (context %d tokens; raise --ctx-size or lower --max-tokens)", ErrContextFull, generated, b.opts.CtxSize)
	}
	return false, nil
}

// callDone counts a call's generated tokens, logs the call (took: since it
// began generating, or since it was queued) and frees its sampler. b.mu
// is held.
func (b *Backend) callDone(req llm.Request, u llm.Usage, smpl *sampler, took time.Duration) {
	b.stats.Generated += u.CompletionTokens
	if len(req.Schema) > 0 {
		b.stats.GrammarTokens += u.CompletionTokens
		b.stats.GrammarFullPasses += smpl.fullPasses()
	}
	slog.Debug("llama call", "kind", req.Kind, "prompt_evaluated", u.PromptTokens,
		"prompt_reused", u.CachedTokens, "generated", u.CompletionTokens,
		"grammar_full_passes", smpl.fullPasses(), "ms", took.Milliseconds())
	smpl.free()
}

// pieceWriter collects a reply's pieces and passes them on to OnToken
// whole runes at a time: a token may end inside a UTF-8 sequence.
type pieceWriter struct {
	onToken func(string)
	text    strings.Builder
	pending []byte // bytes of a UTF-8 sequence split across tokens
}

func (w *pieceWriter) write(piece string) {
	w.text.WriteString(piece)
	w.pending = append(w.pending, piece...)
	w.emit(completeUTF8(w.pending))
}

// flush passes on what is left, complete or not: the reply has ended.
func (w *pieceWriter) flush() { w.emit(len(w.pending)) }

func (w *pieceWriter) emit(n int) {
	if n > 0 && w.onToken != nil {
		w.onToken(string(w.pending[:n]))
	}
	w.pending = w.pending[n:]
}

// completeUTF8 is the length of buf's prefix that does not end inside a
// UTF-8 sequence (invalid bytes count as complete).
func completeUTF8(buf []byte) int {
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				return i
			}
			break
		}
	}
	return len(buf)
}
