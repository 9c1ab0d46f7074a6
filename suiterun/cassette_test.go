package suiterun

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tactcli/tact/llm"
)

func TestParseCassette(t *testing.T) {
	const head = `{"cassette":1,"case":"a","run":"r1","query":"q"}` + "\n"
	for _, tc := range []struct {
		name, in, err string
		replies       int
	}{
		{"good", head + "# a comment\n\n" + `{"kind":"plan","prompt_digest":"ab","text":"{}"}` + "\n" + `{"kind":"fill","prompt_digest":"cd","text":"x","token_usage":{"prompt_tokens":3,"cached_tokens":0,"completion_tokens":1}}`, "", 2},
		{"header only", head, "", 0},
		{"empty", "\n# nothing\n", "c.jsonl: empty: no cassette header", 0},
		{"not a header", `{"kind":"plan","text":"{}"}`, "c.jsonl:1: not a cassette header", 0},
		{"version", `{"cassette":2,"case":"a"}`, "c.jsonl:1: cassette version 2 (this tact reads 1)", 0},
		{"no case", `{"cassette":1}`, "c.jsonl:1: the header names no case", 0},
		{"unknown kind", head + `{"kind":"think","text":"x"}`, `c.jsonl:2: unknown kind "think"`, 0},
		{"unknown field", head + "\n" + `{"kind":"plan","text":"x","delay_ms":3}`, `c.jsonl:3: invalid reply: json: unknown field "delay_ms"`, 0},
		{"not json", head + `{"kind":`, "c.jsonl:2: invalid reply", 0},
		{"huge line", head + `{"kind":"plan","text":"` + strings.Repeat("x", maxCassetteLine) + `"}`, "c.jsonl:2: a line over 16 MiB: no reply is that long", 0},
		{"nul", head + "{\"kind\":\"plan\",\"te\x00xt\":\"x\"}", "c.jsonl:2: invalid reply", 0},
		{"deep", head + `{"kind":"plan","text":"x","token_usage":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, "c.jsonl:2: invalid reply", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCassette([]byte(tc.in), "c.jsonl")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Replies) != tc.replies || c.Case != "a" || c.Run != "r1" {
				t.Fatalf("got %+v", c)
			}
		})
	}
}

func TestCassetteRoundTrip(t *testing.T) {
	c := &Cassette{Header: Header{Case: "x", Run: "r", Query: "why <b>?"}, Replies: []Reply{
		{Kind: llm.KindPlan, PromptDigest: "01", Text: `{"plan":[]}`},
		{Kind: llm.KindAction, PromptDigest: "02", Text: "a & b", Usage: &llm.Usage{PromptTokens: 5}},
	}}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), `{"cassette":1,"case":"x","run":"r","query":"why <b>?"}`+"\n") {
		t.Fatalf("header line: %q", b.String())
	}
	back, err := ParseCassette(b.Bytes(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Replies) != 2 || back.Replies[1].Text != "a & b" || back.Replies[1].Usage.PromptTokens != 5 {
		t.Fatalf("read back %+v", back)
	}
}

// FuzzParseCassette: a cassette is outside input; no input panics, and
// every error is one line naming the file.
func FuzzParseCassette(f *testing.F) {
	f.Add([]byte(`{"cassette":1,"case":"a","run":"r"}` + "\n" + `{"kind":"plan","prompt_digest":"ab","text":"{}"}`))
	f.Add([]byte(`{"cassette":1,"case":"a"}` + "\n" + `{"kind":"fill","text":"x","token_usage":{"prompt_tokens":-1}}`))
	f.Add([]byte("#\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCassette(data, "f.jsonl")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.jsonl") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: not one line naming the file", err)
			}
			return
		}
		if c.Case == "" {
			t.Fatal("a cassette without a case parsed")
		}
	})
}
