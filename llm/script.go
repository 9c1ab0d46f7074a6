package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// ScriptEntry is one canned reply of a script file.
type ScriptEntry struct {
	Kind Kind   `json:"kind,omitempty"`
	Text string `json:"text"`
	// DelayMS makes the reply arrive slowly (token by token) so tests can
	// exercise cancellation and timeouts during a model call.
	DelayMS int `json:"delay_ms,omitempty"`
	used    bool
}

// Script replays canned replies from a JSONL file: each call takes the next
// unused entry of its own kind, else the next unused entry with no kind.
type Script struct {
	name    string
	mu      sync.Mutex
	entries []*ScriptEntry
}

// LoadScript reads a script file ("-" is not accepted: stdin carries queries and plans).
func LoadScript(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("script backend: %w", err)
	}
	defer f.Close()
	return ParseScript(f, path)
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
		case "", KindPlan, KindAction, KindFill, KindFallback:
		default:
			return nil, fmt.Errorf("%s:%d: unknown kind %q (want plan, action, fill or fallback)", name, line, e.Kind)
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
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content) / 4
	}
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
	return Response{Text: e.Text, Usage: Usage{PromptTokens: prompt, CompletionTokens: len(pieces)}}, nil
}

func (s *Script) Close() error { return nil }
