package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestScriptKindsAndFallbackToUnkinded(t *testing.T) {
	s, err := ParseScript(strings.NewReader(`{"kind":"plan","text":"P1"}
# comments and blank lines are skipped

{"text":"ANY1"}
{"kind":"action","text":"A1"}
{"kind":"plan","text":"P2"}
`), "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind Kind
		text string
	}{{KindAction, "A1"}, {KindPlan, "P1"}, {KindFill, "ANY1"}, {KindPlan, "P2"}}
	for _, w := range want {
		resp, err := s.Complete(context.Background(), Request{Kind: w.kind})
		if err != nil || resp.Text != w.text {
			t.Fatalf("%s: %q %v, want %q", w.kind, resp.Text, err, w.text)
		}
	}
	_, err = s.Complete(context.Background(), Request{Kind: KindFallback})
	if err == nil || !strings.Contains(err.Error(), "s.jsonl") || !strings.Contains(err.Error(), `"fallback"`) {
		t.Fatalf("running out: %v", err)
	}
}

func TestScriptParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"text":"a"}` + "\n" + `{"kind":"plan"`, "s:2: invalid script entry"},
		{`{"kind":"dream","text":"a"}`, `s:1: unknown kind "dream"`},
		{`{"txt":"a"}`, `s:1: invalid script entry: json: unknown field "txt"`},
	} {
		_, err := ParseScript(strings.NewReader(tc.in), "s")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestScriptDelayHonoursCancel(t *testing.T) {
	s, _ := ParseScript(strings.NewReader(`{"text":"a b c d e f g h","delay_ms":5000}`), "s")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	var pieces []string
	_, err := s.Complete(ctx, Request{OnToken: func(p string) { pieces = append(pieces, p) }})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	if len(pieces) > 1 {
		t.Fatalf("streamed %d pieces before the deadline", len(pieces))
	}
}

func TestNoneBackend(t *testing.T) {
	_, err := None{}.Complete(context.Background(), Request{Kind: KindFill})
	if !errors.Is(err, ErrNoModel) || !strings.HasPrefix(err.Error(), "fill call:") {
		t.Fatal(err)
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(`{"kind":"plan","text":"x"}` + "\n" + `{"text":"y","delay_ms":1}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(strings.NewReader(string(data)), "f")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") {
				t.Fatalf("error does not name file:line: %v", err)
			}
			return
		}
		kinds := make([]Kind, len(s.entries))
		for i, e := range s.entries {
			e.DelayMS = 0
			kinds[i] = e.Kind
		}
		// Every entry is reachable by a call of its own kind, in order.
		for i, k := range kinds {
			resp, err := s.Complete(context.Background(), Request{Kind: k})
			if err != nil || resp.Text != s.entries[i].Text {
				t.Fatalf("entry %d: %q %v", i, resp.Text, err)
			}
		}
	})
}

// The model-free backends describe themselves and serve calls at once.
func TestModelFreeCapabilities(t *testing.T) {
	sc, err := ParseScript(strings.NewReader(`{"text":"a"}`), "replies.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		b           Backend
		info        ModelInfo
		header      map[string]any
		concurrency int
	}{
		{"script", sc, ModelInfo{Backend: "script", Script: "replies.jsonl"}, map[string]any{"backend": "script", "script": "replies.jsonl"}, Unbounded},
		{"none", None{Why: "several models"}, ModelInfo{Backend: "none"}, map[string]any{"backend": "none"}, Unbounded},
		{"undescribed", bare{}, ModelInfo{}, map[string]any{}, 1},
		{"sized", sized{bare{}, 512}, ModelInfo{ContextSize: 512}, map[string]any{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := InfoOf(tc.b)
			if info != tc.info {
				t.Errorf("info %+v, want %+v", info, tc.info)
			}
			if h := info.Header(); fmt.Sprint(h) != fmt.Sprint(tc.header) {
				t.Errorf("header %v, want %v", h, tc.header)
			}
			if n := ConcurrencyOf(tc.b); n != tc.concurrency {
				t.Errorf("concurrency %d, want %d", n, tc.concurrency)
			}
		})
	}
}

// bare is a backend with no optional capability.
type bare struct{}

func (bare) Complete(context.Context, Request) (Response, error) { return Response{}, nil }
func (bare) Close() error                                        { return nil }

type sized struct {
	bare
	n int
}

func (s sized) ContextSize() int { return s.n }
