package exec

import (
	"fmt"
	"unicode/utf8"
)

// capBuffer keeps the first and last bytes of a stream within a fixed
// budget and counts the rest, so a command printing gigabytes costs tact
// only the budget: half for the head, half for a ring buffer holding the
// tail. It is an io.Writer that never fails.
type capBuffer struct {
	headCap, tailCap int
	head             []byte
	tail             []byte // ring of tailCap bytes, allocated on first use
	tpos             int    // next write position in tail
	tlen             int    // bytes held in tail
	total            int64
}

func newCapBuffer(limit int) *capBuffer {
	if limit < 0 {
		limit = 0
	}
	h := limit / 2
	return &capBuffer{headCap: h, tailCap: limit - h}
}

func (c *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || c.tailCap == 0 {
		return n, nil
	}
	if c.tail == nil {
		c.tail = make([]byte, c.tailCap)
	}
	if len(p) >= c.tailCap {
		copy(c.tail, p[len(p)-c.tailCap:])
		c.tpos, c.tlen = 0, c.tailCap
		return n, nil
	}
	k := copy(c.tail[c.tpos:], p)
	copy(c.tail, p[k:])
	c.tpos = (c.tpos + len(p)) % c.tailCap
	c.tlen = min(c.tlen+len(p), c.tailCap)
	return n, nil
}

// Total is the number of bytes written, kept or not.
func (c *capBuffer) Total() int64 { return c.total }

// String returns the whole stream when it fit, else head, a marker saying
// how many bytes were cut, and tail. The cut edges are moved to rune
// boundaries so the text stays valid UTF-8 where the stream was.
func (c *capBuffer) String() string {
	var tail []byte
	if c.tlen < c.tailCap {
		tail = c.tail[:c.tlen]
	} else {
		tail = make([]byte, 0, c.tailCap)
		tail = append(tail, c.tail[c.tpos:]...)
		tail = append(tail, c.tail[:c.tpos]...)
	}
	if c.total <= int64(len(c.head)+len(tail)) {
		return string(c.head) + string(tail)
	}
	head := trimPartialRune(string(c.head))
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	cut := c.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n[... %d bytes cut ...]\n%s", head, cut, tail)
}
