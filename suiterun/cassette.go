// Package suiterun runs the suites of `tact test` (package testsuite holds
// their format and checks): it records a run from the history as a case
// (its query, flags, fixture and cassette), replays cases offline from
// their cassettes, runs them live on a model k times each, every trial in
// a fresh copy of the case's fixture, and gives testsuite the trials'
// results to report.
package suiterun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/llm"
)

// CassetteVersion is the cassette format's version, in its first line.
const CassetteVersion = 1

// Header is a cassette's first line: which case and recorded run its
// replies are, so a cassette of another case is one clear error.
type Header struct {
	Cassette int    `json:"cassette"`
	Case     string `json:"case"`
	Run      string `json:"run"`
	Query    string `json:"query,omitempty"`
}

// Reply is one model call of the recorded run: its kind, the digest of the
// prompt it answered (llm.PromptDigest) and the reply's text.
type Reply struct {
	Kind         llm.Kind   `json:"kind"`
	PromptDigest string     `json:"prompt_digest"`
	Text         string     `json:"text"`
	Usage        *llm.Usage `json:"token_usage,omitempty"`
}

// Cassette is a recorded run's model replies, in the order they were made.
type Cassette struct {
	Path string
	Header
	Replies []Reply
}

var cassetteFile = filekind.Spec{What: "cassette", Max: 64 << 20}

// maxCassetteLine caps one reply's line.
const maxCassetteLine = 16 << 20

// ReadCassette reads the cassette at path; errors name PATH:LINE.
func ReadCassette(path string) (*Cassette, error) {
	data, err := filekind.ReadFile(cassetteFile, path)
	if err != nil {
		return nil, err
	}
	return ParseCassette(data, path)
}

// ParseCassette parses a cassette (name: for errors): a header line, then
// one reply a line; blank lines and # comments are skipped; unknown fields
// are errors.
func ParseCassette(data []byte, name string) (*Cassette, error) {
	c := &Cassette{Path: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), maxCassetteLine)
	line, header := 0, false
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 || raw[0] == '#' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if !header {
			if err := dec.Decode(&c.Header); err != nil {
				return nil, fmt.Errorf("%s:%d: not a cassette header (want {\"cassette\":1,\"case\":NAME,\"run\":ID}): %v", name, line, err)
			}
			if c.Cassette != CassetteVersion {
				return nil, fmt.Errorf("%s:%d: cassette version %d (this tact reads %d)", name, line, c.Cassette, CassetteVersion)
			}
			if c.Case == "" {
				return nil, fmt.Errorf("%s:%d: the header names no case", name, line)
			}
			header = true
			continue
		}
		var r Reply
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s:%d: invalid reply: %v", name, line, err)
		}
		switch r.Kind {
		case llm.KindPlan, llm.KindAction, llm.KindFill, llm.KindFallback, llm.KindSummary:
		default:
			return nil, fmt.Errorf("%s:%d: unknown kind %q (want plan, action, fill, fallback or summary)", name, line, r.Kind)
		}
		c.Replies = append(c.Replies, r)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%s:%d: a line over %d MiB: no reply is that long", name, line+1, maxCassetteLine>>20)
	} else if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: empty: no cassette header", name)
	}
	return c, nil
}

// WriteTo writes the cassette: its header, then its replies, a line each.
func (c *Cassette) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	h := c.Header
	h.Cassette = CassetteVersion
	if err := enc.Encode(h); err != nil {
		return 0, err
	}
	for _, r := range c.Replies {
		if err := enc.Encode(r); err != nil {
			return 0, err
		}
	}
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// describe names the cassette's recording for messages.
func (c *Cassette) describe() string {
	s := fmt.Sprintf("case %q", c.Case)
	if c.Run != "" {
		s += ", run " + c.Run
	}
	return strings.TrimSpace(s)
}
