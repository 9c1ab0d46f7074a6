package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestIsSecretEnvName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "AWS_SECRET": true, "DB_PASSWORD": true,
		"PASSWORD_FILE": true, "my_token": true, "KEY": false, "KEYBOARD": false, "TOKENS": false,
		"HOME": false, "SECRET_PATH": false, "MONKEY": false,
	} {
		if got := IsSecretEnvName(name); got != want {
			t.Errorf("IsSecretEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	env := []string{
		"HOME=/home/u",
		"API_KEY=sk-abcdef123456",
		"GH_TOKEN=ghp_LONGER_sk-abcdef123456_SUFFIX", // contains API_KEY's value
		"DB_PASSWORD=hunter2!",
		"SHORT_TOKEN=abc", // too short to redact
		"EMPTY_SECRET=",
		"QUOTED_SECRET=a\"b\\c<d>",
		"NOEQUALS_TOKEN",
	}
	r, err := NewRedactor(env, []string{`\bAKIA[0-9A-Z]{16}\b`, `(?i)bearer [a-z0-9.]+`})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"key=sk-abcdef123456 ok", "key=[REDACTED] ok"},
		{"tok ghp_LONGER_sk-abcdef123456_SUFFIX.", "tok [REDACTED]."},
		{"pw hunter2! and again hunter2!", "pw [REDACTED] and again [REDACTED]"},
		{"abc stays, /home/u stays", "abc stays, /home/u stays"},
		{"aws AKIAABCDEFGHIJKLMNOP end", "aws [REDACTED] end"},
		{"Authorization: Bearer abc.def.123", "Authorization: [REDACTED]"},
		{`raw a"b\c<d> json "a\"b\\c<d>" html "a\"b\\c\u003cd\u003e"`, `raw [REDACTED] json "[REDACTED]" html "[REDACTED]"`},
		{"", ""},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactorErrors(t *testing.T) {
	for _, p := range []string{`(unclosed`, `a*`, ``, `x?`} {
		_, err := NewRedactor(nil, []string{`ok`, p})
		if err == nil || !strings.Contains(err.Error(), "redact pattern \""+p+"\"") {
			t.Errorf("pattern %q: err = %v, want one naming it", p, err)
		}
	}
}

func TestRedactorNil(t *testing.T) {
	var r *Redactor
	if got := r.Redact("sk-abcdef123456"); got != "sk-abcdef123456" {
		t.Errorf("nil Redact changed text: %q", got)
	}
	if got := string(r.RedactJSON([]byte(`{"a":1}`))); got != `{"a":1}` {
		t.Errorf("nil RedactJSON changed text: %q", got)
	}
	empty, err := NewRedactor(nil, nil)
	if err != nil || empty.Redact("anything") != "anything" {
		t.Errorf("empty redactor: %v", err)
	}
}

// A planted secret never survives into a trace line, and the line stays
// valid JSON even when a user regexp would match across quotes.
func TestRedactJSON(t *testing.T) {
	r, err := NewRedactor([]string{"MY_SECRET=planted-secret-value"}, []string{`tok-\S+`})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{
		"event":                "observation",
		"output":               "env: MY_SECRET=planted-secret-value\nnext tok-123\",\"x\":1",
		"planted-secret-value": []any{"planted-secret-value", 3, true, nil},
	})
	got := r.RedactJSON(line)
	if strings.Contains(string(got), "planted-secret-value") || strings.Contains(string(got), "tok-123") {
		t.Errorf("secret survived: %s", got)
	}
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("redacted line is not JSON: %v\n%s", err, got)
	}
	if v["event"] != "observation" {
		t.Errorf("untouched field changed: %v", v)
	}
	// Key order and untouched bytes are kept.
	in := []byte(`{"z": "keep",  "a": "planted-secret-value"}`)
	if got := string(r.RedactJSON(in)); got != `{"z": "keep",  "a": "[REDACTED]"}` {
		t.Errorf("RedactJSON = %s", got)
	}
	// Not JSON: redacted as text.
	if got := string(r.RedactJSON([]byte("plain planted-secret-value"))); got != "plain [REDACTED]" {
		t.Errorf("RedactJSON(text) = %s", got)
	}
}

func FuzzRedactJSON(f *testing.F) {
	f.Add([]byte(`{"a":"planted-secret-value","b":["x\"y",1]}`), "planted-secret-value")
	f.Add([]byte(`"\u00e9\ud83d\ude00"`), "zzzz")
	f.Fuzz(func(t *testing.T, data []byte, secret string) {
		r, err := NewRedactor([]string{"FUZZ_SECRET=" + secret}, []string{`tok-\S+`})
		if err != nil {
			t.Fatal(err)
		}
		out := r.RedactJSON(data)
		if json.Valid(data) && !json.Valid(out) {
			t.Fatalf("valid JSON became invalid: %q -> %q", data, out)
		}
	})
}
