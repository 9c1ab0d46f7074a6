package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tactcli/tact/internal/filekind"
)

// ScriptEntry is one canned reply of a script file.
type ScriptEntry struct {
	Kind Kind   `json:"kind,omitempty"`
	Text string `json:"text"`
	// DelayMS makes the reply arrive slowly (token by token) so tests can
	// exercise cancellation and timeouts during a model call.
	DelayMS int `json:"delay_ms,omitempty"`
	// Expect and ExpectNot are texts the call's prompt (all its messages)
	// must and must not contain; a call that breaks one fails with an
	// error naming the text, so tests can check what a model was shown
	// (a follow-up's earlier turns, a cleared conversation).
	Expect    []string `json:"expect,omitempty"`
	ExpectNot []string `json:"expect_not,omitempty"`
	used      bool
}

// Script replays canned replies from a JSONL file: each call takes the next
// unused entry of its own kind, else the next unused entry with no kind.
//
// It has no tokenizer: prompt sizes are llm.EstimatePrompt's. It models a KV
// prefix cache so that usage looks like a real backend's: the messages a
// call shares with the previous call's prompt count as cached tokens.
type Script struct {
	name    string
	mu      sync.Mutex
	entries []*ScriptEntry
	last    []Message // the previous call's prompt
}

// scriptFile is how a script is opened: a regular file (a FIFO or device
// is refused, never waited on) of at most 64 MiB, read whole.
var scriptFile = filekind.Spec{What: "script backend", Max: 64 << 20}

// LoadScript reads a script file ("-" is not accepted: stdin carries queries and plans).
func LoadScript(path string) (*Script, error) {
	data, err := filekind.ReadFile(scriptFile, path)
	if err != nil {
		return nil, err
	}
	return ParseScript(bytes.NewReader(data), path)
}

// ParseScript parses script JSONL; errors name name:line.
func ParseScript(r io.Reader, name string) (*Script, error) {
	s := &Script{name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := strings.TrimSpace(sc.Text())
		if raw == "" || strings.HasPrefix(raw, "#") {
			continue
		}
		var e ScriptEntry
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: invalid script entry: %v", name, line, err)
		}
		switch e.Kind {
		case "", KindPlan, KindAction, KindFill, KindFallback, KindSummary:
		default:
			return nil, fmt.Errorf("%s:%d: unknown kind %q (want plan, action, fill, fallback or summary)", name, line, e.Kind)
		}
		s.entries = append(s.entries, &e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return s, nil
}

func (s *Script) next(kind Kind) *ScriptEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, want := range []Kind{kind, ""} {
		for _, e := range s.entries {
			if !e.used && e.Kind == want {
				e.used = true
				return e
			}
		}
	}
	return nil
}

// Complete returns the next canned reply for req.Kind.
func (s *Script) Complete(ctx context.Context, req Request) (Response, error) {
	e := s.next(req.Kind)
	if e == nil {
		return Response{}, fmt.Errorf("script %s: no entries left for kind %q", s.name, req.Kind)
	}
	if err := e.check(req.Messages); err != nil {
		return Response{}, fmt.Errorf("script %s: %w", s.name, err)
	}
	prompt := EstimatePrompt(req.Messages)
	cached := s.cachedPrefix(req.Messages)
	// Deliver word by word so OnToken and cancellation behave like a real model.
	pieces := strings.SplitAfter(e.Text, " ")
	var delay time.Duration
	if e.DelayMS > 0 && len(pieces) > 0 {
		delay = time.Duration(e.DelayMS) * time.Millisecond / time.Duration(len(pieces))
	}
	for _, p := range pieces {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return Response{}, ctx.Err()
			case <-t.C:
			}
		} else if err := ctx.Err(); err != nil {
			return Response{}, err
		}
		if req.OnToken != nil {
			req.OnToken(p)
		}
	}
	return Response{Text: e.Text, Usage: Usage{PromptTokens: prompt - cached, CachedTokens: cached, CompletionTokens: len(pieces)}}, nil
}

// check tests the prompt against the entry's expect and expect_not texts.
func (e *ScriptEntry) check(msgs []Message) error {
	if len(e.Expect) == 0 && len(e.ExpectNot) == 0 {
		return nil
	}
	var all strings.Builder
	for _, m := range msgs {
		all.WriteString(m.Content)
		all.WriteByte('\n')
	}
	for _, want := range e.Expect {
		if !strings.Contains(all.String(), want) {
			return fmt.Errorf("the prompt does not contain %q (expect)", want)
		}
	}
	for _, bad := range e.ExpectNot {
		if strings.Contains(all.String(), bad) {
			return fmt.Errorf("the prompt contains %q (expect_not)", bad)
		}
	}
	return nil
}

// cachedPrefix is the estimated size of the whole messages msgs shares with
// the previous prompt, and remembers msgs as the previous prompt.
func (s *Script) cachedPrefix(msgs []Message) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(msgs) && n < len(s.last) && msgs[n] == s.last[n] {
		n++
	}
	if n == len(msgs) && n > 0 {
		n-- // as a real cache: the last message is evaluated again
	}
	s.last = append(s.last[:0], msgs...)
	if n == 0 {
		return 0
	}
	return EstimatePrompt(msgs[:n]) - estimatePromptTokens
}

func (s *Script) Close() error { return nil }

// ModelInfo names the script file (there is no model); it sets no
// context bound of its own.
func (s *Script) ModelInfo() ModelInfo { return ModelInfo{Backend: BackendScript, Script: s.name} }

// Concurrency: calls only take turns to pick their entry, so none waits
// for another's reply (a run's replies still come in file order only when
// runs do not overlap).
func (s *Script) Concurrency() int { return Unbounded }
