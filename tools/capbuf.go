package tools

import (
	"fmt"

	"github.com/tactcli/tact/redact"
)

// capBuffer keeps the first and last bytes of a stream within a fixed
// budget and counts the rest, so a command printing gigabytes costs tact
// only the budget: half for the head, half for a ring buffer holding the
// tail. It is an io.Writer that never fails.
//
// With a Redactor it keeps the Redactor's CutMargin more raw bytes past the
// head's end and before the tail's start, so the cuts can be moved off any
// secret straddling them: a secret is kept or dropped whole, never split
// into parts redaction would not recognise.
type capBuffer struct {
	headCap, tailCap int
	margin           int
	red              *redact.Redactor
	head             []byte // the first headCap+margin bytes
	ring             []byte // the last tailCap+margin bytes, allocated on first use
	rpos             int    // next write position in ring
	rlen             int    // bytes held in ring
	total            int64
}

func newCapBuffer(limit int, red *redact.Redactor) *capBuffer {
	if limit < 0 {
		limit = 0
	}
	h := limit / 2
	return &capBuffer{headCap: h, tailCap: limit - h, margin: red.CutMargin(), red: red}
}

func (c *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headCap + c.margin - len(c.head); room > 0 {
		c.head = append(c.head, p[:min(room, len(p))]...)
	}
	// Every byte also goes through the ring, so the bytes just before the
	// tail's cut are there even when they were also kept in the head.
	size := c.tailCap + c.margin
	if size == 0 {
		return n, nil
	}
	if c.ring == nil {
		c.ring = make([]byte, size)
	}
	if len(p) >= size {
		copy(c.ring, p[len(p)-size:])
		c.rpos, c.rlen = 0, size
		return n, nil
	}
	k := copy(c.ring[c.rpos:], p)
	copy(c.ring, p[k:])
	c.rpos = (c.rpos + len(p)) % size
	c.rlen = min(c.rlen+len(p), size)
	return n, nil
}

// Total is the number of bytes written, kept or not.
func (c *capBuffer) Total() int64 { return c.total }

// ringBytes returns the ring's content in stream order.
func (c *capBuffer) ringBytes() []byte {
	if c.rlen < len(c.ring) {
		return c.ring[:c.rlen]
	}
	out := make([]byte, 0, len(c.ring))
	out = append(out, c.ring[c.rpos:]...)
	return append(out, c.ring[:c.rpos]...)
}

// String returns the whole stream when it fits the budget, else head, a
// marker saying how many bytes were cut, and tail. The cuts are moved to
// rune boundaries and off secrets (see capBuffer).
func (c *capBuffer) String() string {
	ring := c.ringBytes()
	limit := int64(c.headCap + c.tailCap)
	if c.total <= limit {
		if c.total <= int64(len(c.head)) {
			return string(c.head)
		}
		// head plus the rest, which the ring holds: total-len(head) <= tailCap.
		return string(c.head) + string(ring[len(ring)-int(c.total-int64(len(c.head))):])
	}
	head := string(c.head)
	// Without a margin the head may end inside a rune it cannot see whole.
	hcut := len(trimPartialRune(head[:c.red.CutBefore(head, c.headCap)]))
	tail := string(ring)
	tcut := c.red.CutAfter(tail, len(tail)-c.tailCap)
	// Stream offsets: the ring starts at total-len(ring).
	cut := c.total - int64(len(ring)) + int64(tcut) - int64(hcut)
	return fmt.Sprintf("%s\n[... %d bytes cut ...]\n%s", head[:hcut], cut, tail[tcut:])
}
