package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/tactcli/tact/internal/text"
)

// Limits on what a server may send, checked on the bytes as they arrive,
// before the SDK buffers or decodes them: a message larger than
// DefaultMaxMessage, or nested deeper than MaxMessageDepth, is refused and
// the connection closed (see guard). The SDK's own caps sit above these as
// a backstop.
const (
	// DefaultMaxMessage bounds one message (a stdio line, an HTTP JSON body,
	// one server-sent event): tool results with media can be large, but
	// more than this would only be cut from the observation anyway.
	DefaultMaxMessage = 16 << 20
	// MaxMessageDepth bounds the nesting of objects and arrays in one
	// message. The JSON-RPC envelope, a tools/list page and a generous
	// input schema need a few dozen levels; thousands only cost memory and
	// stack in the decoder, the schema compiler and the grammar builder.
	MaxMessageDepth = 128
)

// RefusedError is a message tact refused from a server, and the limit it
// broke. What follows (a closed connection, a server that exits with a
// broken pipe) is tact's doing, not the server's failure.
type RefusedError struct {
	Server string
	// MaxSize is set when the message was larger than it (tact stopped
	// reading there, so the whole size is not known).
	MaxSize int
	// MaxDepth is set when the message nested deeper than it.
	MaxDepth int
}

func (e *RefusedError) Error() string {
	what := fmt.Sprintf("a message nested more than %d levels deep", e.MaxDepth)
	if e.MaxSize > 0 {
		what = "a message larger than " + text.BinarySize(uint64(e.MaxSize))
	}
	return fmt.Sprintf("MCP server %s sent %s (tact's limit for one MCP message); tact refused it and closed the connection", e.Server, what)
}

// guard holds the first refusal of one connection to a server, and
// cancels the requests waiting on it then: an HTTP stream's reader would
// otherwise resume the stream and meet the same message again.
type guard struct {
	server   string
	maxSize  int
	maxDepth int

	mu       sync.Mutex
	refused  *RefusedError
	watchers map[int]context.CancelFunc
	next     int
}

func newGuard(server string, maxSize int) *guard {
	if maxSize <= 0 {
		maxSize = DefaultMaxMessage
	}
	return &guard{server: server, maxSize: maxSize, maxDepth: MaxMessageDepth}
}

// err is the connection's refusal, or nil (also for a nil guard).
func (g *guard) err() *RefusedError {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

func (g *guard) refuse(e *RefusedError) *RefusedError {
	g.mu.Lock()
	if g.refused != nil {
		defer g.mu.Unlock()
		return g.refused
	}
	e.Server = g.server
	g.refused = e
	watchers := g.watchers
	g.watchers = nil
	g.mu.Unlock()
	for _, cancel := range watchers {
		cancel()
	}
	return e
}

// watch returns ctx cancelled when the guard refuses a message, and the
// function that releases it.
func (g *guard) watch(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused != nil {
		cancel()
		return ctx, cancel
	}
	if g.watchers == nil {
		g.watchers = map[int]context.CancelFunc{}
	}
	id := g.next
	g.next++
	g.watchers[id] = cancel
	return ctx, func() {
		g.mu.Lock()
		delete(g.watchers, id)
		g.mu.Unlock()
		cancel()
	}
}

// framing is how a stream divides into messages.
type framing int

const (
	frameLines framing = iota // stdio: one JSON value a line
	frameBody                 // an HTTP application/json body: one message
	frameSSE                  // an HTTP text/event-stream: one message an event
	frameRaw                  // any other body: size only
)

// scanner follows JSON's strings and nesting through a stream, a chunk at
// a time, to measure each message's size and depth without buffering it.
// It does not validate JSON: the SDK's decoder does that after.
type scanner struct {
	g      *guard
	frame  framing
	size   int // bytes of the current message
	depth  int
	inStr  bool
	escape bool
	// SSE: the current line's first bytes (to find "data:"), its length,
	// and whether it is a data line whose value is JSON.
	field [5]byte
	col   int
	data  bool
	lead  bool // a data line's one optional space after "data:" is next
}

// feed scans one chunk; a refusal is returned (and recorded) at once.
func (s *scanner) feed(p []byte) *RefusedError {
	for i := 0; i < len(p); i++ {
		if s.inStr && !s.escape {
			// Skip string content in one step: only a quote, a backslash
			// and (in SSE) a line end matter there.
			j := bytes.IndexAny(p[i:], "\"\\\n\r")
			if j < 0 {
				j = len(p) - i
			}
			s.size += j
			s.col += j
			if s.size > s.g.maxSize {
				return s.g.refuse(&RefusedError{MaxSize: s.g.maxSize})
			}
			if i += j; i == len(p) {
				break
			}
		}
		if r := s.byte(p[i]); r != nil {
			return r
		}
	}
	return nil
}

func (s *scanner) byte(b byte) *RefusedError {
	s.size++
	if s.size > s.g.maxSize {
		return s.g.refuse(&RefusedError{MaxSize: s.g.maxSize})
	}
	switch s.frame {
	case frameRaw:
		return nil
	case frameSSE:
		switch {
		case b == '\r':
			return nil
		case b == '\n':
			if s.col == 0 {
				s.reset() // a blank line ends the event
			}
			s.col, s.data, s.lead = 0, false, false
			return nil
		case s.col < len(s.field):
			s.field[s.col] = b
			s.col++
			if s.col == len(s.field) && string(s.field[:]) == "data:" {
				s.data, s.lead = true, true
			}
			return nil
		}
		s.col++
		if !s.data {
			return nil
		}
		if s.lead {
			s.lead = false
			if b == ' ' {
				return nil
			}
		}
	}
	return s.json(b)
}

// json follows one byte of JSON text.
func (s *scanner) json(b byte) *RefusedError {
	if s.inStr {
		switch {
		case s.escape:
			s.escape = false
		case b == '\\':
			s.escape = true
		case b == '"':
			s.inStr = false
		}
		return nil
	}
	switch b {
	case '"':
		s.inStr = true
	case '{', '[':
		s.depth++
		if s.depth > s.g.maxDepth {
			return s.g.refuse(&RefusedError{MaxDepth: s.g.maxDepth})
		}
	case '}', ']':
		if s.depth > 0 {
			s.depth--
		}
	case '\n':
		if s.frame == frameLines && s.depth == 0 {
			s.reset() // the end of a stdio message
		}
	}
	return nil
}

func (s *scanner) reset() {
	s.size, s.depth, s.inStr, s.escape = 0, 0, false, false
}

// guardedReader passes a stream through a scanner; after a refusal every
// Read returns it, so the SDK stops reading and closes the connection.
type guardedReader struct {
	r   io.Reader
	c   io.Closer
	s   scanner
	err error
}

// reader passes r through a scanner; once the guard has refused a
// message, every new reader fails at once too.
func (g *guard) reader(r io.ReadCloser, frame framing) *guardedReader {
	gr := &guardedReader{r: r, c: r, s: scanner{g: g, frame: frame}}
	if e := g.err(); e != nil {
		gr.err = e
	}
	return gr
}

func (r *guardedReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.r.Read(p)
	if refused := r.s.feed(p[:n]); refused != nil {
		r.err = refused
		return 0, refused
	}
	return n, err
}

func (r *guardedReader) Close() error { return r.c.Close() }

// guardBody wraps an HTTP response body by its content type.
func (g *guard) guardBody(resp *http.Response) {
	if g == nil || resp == nil || resp.Body == nil {
		return
	}
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	frame := frameRaw
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		frame = frameSSE
	case strings.HasPrefix(ct, "application/json"):
		frame = frameBody
	}
	resp.Body = g.reader(resp.Body, frame)
}
