package openai

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tactcli/tact/llm"
)

// StatusError is a reply with an HTTP error status. Its message names the
// server (scheme://host, never credentials), the status and what the server
// said, on one line.
type StatusError struct {
	Server     string
	Status     int
	Message    string        // the server's message, one line, cut short
	Code       string        // error.code or error.type, when given
	RetryAfter time.Duration // Retry-After, when given (0: none)
	contextLen bool          // the server says the prompt does not fit
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("model server %s: %d %s", e.Server, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is makes a context-length refusal an llm.ErrContextFull, so the executor
// compacts and ends the run as token_budget instead of failing.
func (e *StatusError) Is(target error) bool { return e.contextLen && target == llm.ErrContextFull }

// retryable: rate limits and server-side failures. 408 and 409 are not
// retried: the contract is "4xx other than 429 are not retried".
func (e *StatusError) retryable() bool {
	return !e.contextLen && (e.Status == http.StatusTooManyRequests || e.Status >= 500)
}

// streamError is an error event inside a stream that had started well.
type streamError struct {
	server, message, code string
	contextLen            bool
}

func (e *streamError) Error() string {
	return fmt.Sprintf("model server %s: error in the reply stream: %s", e.server, e.message)
}

func (e *streamError) Is(target error) bool { return e.contextLen && target == llm.ErrContextFull }

// maxMessage bounds the server's message in errors: one line, readable.
const maxMessage = 300

// parseErrorBody reads what a server says about an error. OpenAI and most
// compatible servers send {"error": {"message", "type", "code"}}; some send
// {"error": "text"} or {"message": ...} (vLLM's older form, {"detail": ...}
// from FastAPI), and proxies send HTML or plain text. Whatever comes, the
// result is one short printable line: never the whole body.
func parseErrorBody(body []byte) (message, code string) {
	var doc struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &doc) == nil {
		if len(doc.Error) > 0 {
			var inner struct {
				Message json.RawMessage `json:"message"`
				Type    json.RawMessage `json:"type"`
				Code    json.RawMessage `json:"code"`
			}
			if json.Unmarshal(doc.Error, &inner) == nil {
				message = scalar(inner.Message)
				code = cmp.Or(scalar(inner.Code), scalar(inner.Type))
			} else {
				message = scalar(doc.Error)
			}
		}
		message = cmp.Or(message, scalar(doc.Message), scalar(doc.Detail))
		code = cmp.Or(code, scalar(doc.Code), scalar(doc.Type))
		if message == "" && len(doc.Detail) > 0 {
			message = string(doc.Detail) // FastAPI's validation errors: a list
		}
		return oneLine(message), oneLine(code)
	}
	text := string(body)
	if strings.Contains(strings.ToLower(text), "<html") {
		// An HTML page (a proxy's): its title is the useful part.
		text = between(text, "<title>", "</title>")
	}
	return oneLine(text), ""
}

// scalar is a JSON string's value, or a number's text; "" for anything else.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func between(s, open, close string) string {
	lower := strings.ToLower(s)
	i := strings.Index(lower, open)
	if i < 0 {
		return ""
	}
	rest := s[i+len(open):]
	if j := strings.Index(strings.ToLower(rest), close); j >= 0 {
		return rest[:j]
	}
	return rest
}

// oneLine collapses whitespace and control characters and cuts s to about
// maxMessage bytes on a character boundary.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "?")
	var sb strings.Builder
	space := false
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '\u2028' || r == '\u2029' || (r >= 0x80 && r < 0xa0) {
			space = sb.Len() > 0
			continue
		}
		if sb.Len() >= maxMessage {
			sb.WriteString("...")
			break
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// contextPhrases are how servers say a prompt does not fit: OpenAI and vLLM
// ("maximum context length", code context_length_exceeded), llama-server
// (exceed_context_size_error, "exceeds the available context size"),
// ollama ("the input length exceeds the context length").
var contextPhrases = []string{
	"context_length_exceeded", "exceed_context_size", "context length", "context size",
	"context window", "maximum context", "prompt is too long", "too many tokens",
}

func isContextLength(message, code string) bool {
	s := strings.ToLower(code + " " + message)
	for _, p := range contextPhrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// parseRetryAfter reads how long a server asks to wait: retry-after-ms
// (OpenAI's, milliseconds), else Retry-After in seconds or as an HTTP date.
// ok is false when neither gives a usable, non-negative wait.
func parseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e9 || s != s {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// errMalformed marks a reply that is not what the API promises (not
// JSON, no choices): a misconfigured URL or server, not worth a retry.
var errMalformed = errors.New("malformed reply")
