package openai

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseErrorBody: whatever a server sends as an error body, the message
// is one printable line of bounded length.
func FuzzParseErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"bad","type":"invalid_request_error","code":"context_length_exceeded"}}`,
		`{"error":"model not found"}`,
		`{"object":"error","message":"too long","code":400}`,
		`{"detail":[{"loc":["body"],"msg":"field required"}]}`,
		`<html><head><title>502 Bad Gateway</title></head></html>`,
		"plain\ntext\x00with\x1bcontrols",
		`{"error":{"message":{"nested":true}}}`,
		"\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, code := parseErrorBody(body)
		for _, s := range []string{msg, code} {
			if len(s) > maxMessage+8 || !utf8.ValidString(s) || strings.ContainsAny(s, "\n\r\t\x00") {
				t.Fatalf("parseErrorBody(%q) = %q: want one valid line of at most %d bytes", body, s, maxMessage)
			}
		}
		_ = isContextLength(msg, code)
	})
}

// FuzzParseRetryAfter: a wait is never negative, and the header never panics.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0", "2.5", "-1", "NaN", "Inf", "1e400", "Wed, 21 Oct 2015 07:28:00 GMT", "soon", ""} {
		f.Add(s, "")
	}
	f.Add("", "250")
	f.Add("", "-5")
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retryAfter, retryAfterMs string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("Retry-After-Ms", retryAfterMs)
		if d, ok := parseRetryAfter(h, now); d < 0 || (!ok && d != 0) {
			t.Fatalf("parseRetryAfter(%q, %q) = %v, %v", retryAfter, retryAfterMs, d, ok)
		}
	})
}
