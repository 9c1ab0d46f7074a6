package redact

import (
	"strings"
	"unicode/utf8"

	"github.com/tactcli/tact/internal/text"
)

// RegexpCutMargin bounds how far from a cut a --redact regexp match is
// looked for: a match straddling a cut is kept whole (on one side) when it
// reaches at most this many bytes past the cut on each side. A longer match
// may still be split by a cut, and its far part then shows. Environment
// secrets have known lengths and are always kept whole.
const RegexpCutMargin = 4096

// CutMargin is how many bytes on each side of a cut CutBefore and CutAfter
// need to see: the longest literal secret, or RegexpCutMargin when there are
// regexps; 0 when nothing is redacted. A cutter that streams (run_command's
// capture) keeps this many raw bytes beyond each cut.
func (r *Redactor) CutMargin() int {
	if r == nil {
		return 0
	}
	m := 0
	if len(r.lits) > 0 {
		m = len(r.lits[0]) // longest first
	}
	if len(r.res) > 0 {
		m = max(m, RegexpCutMargin)
	}
	return m
}

// CutBefore returns the largest i <= at such that keeping s[:i] splits
// neither a secret nor a UTF-8 sequence: a cut that would fall inside a
// secret moves to the secret's start, so the secret is dropped whole instead
// of leaving a part that redaction can no longer recognise. A nil Redactor
// only keeps UTF-8 sequences whole.
func (r *Redactor) CutBefore(s string, at int) int {
	at = min(max(at, 0), len(s))
	for {
		i := runeCutBefore(s, r.outside(s, at, true))
		if i == at {
			return i
		}
		at = i
	}
}

// CutAfter returns the smallest i >= at such that keeping s[i:] splits
// neither a secret nor a UTF-8 sequence (the tail-side twin of CutBefore).
func (r *Redactor) CutAfter(s string, at int) int {
	at = min(max(at, 0), len(s))
	for {
		i := runeCutAfter(s, r.outside(s, at, false))
		if i == at {
			return i
		}
		at = i
	}
}

// outside moves at out of every secret match that strictly contains it,
// towards the start (back) or the end of the text, until none does.
func (r *Redactor) outside(s string, at int, back bool) int {
	if r == nil {
		return at
	}
	for {
		lo, hi, found := r.containing(s, at)
		if !found {
			return at
		}
		if back {
			at = lo
		} else {
			at = hi
		}
	}
}

// containing returns the widest span [lo, hi) covered by secret matches
// that strictly contain at (lo < at < hi).
func (r *Redactor) containing(s string, at int) (lo, hi int, found bool) {
	lo, hi = at, at
	note := func(a, b int) {
		if a < at && at < b {
			lo, hi, found = min(lo, a), max(hi, b), true
		}
	}
	for _, lit := range r.lits {
		n := len(lit)
		wlo, whi := max(0, at-n+1), min(len(s), at+n-1)
		for p := wlo; p+n <= whi; {
			k := strings.Index(s[p:whi], lit)
			if k < 0 {
				break
			}
			note(p+k, p+k+n)
			p += k + 1 // occurrences may overlap
		}
	}
	if len(r.res) > 0 {
		wlo, whi := max(0, at-RegexpCutMargin), min(len(s), at+RegexpCutMargin)
		for _, re := range r.res {
			for _, m := range re.FindAllStringIndex(s[wlo:whi], -1) {
				note(wlo+m[0], wlo+m[1])
			}
		}
	}
	return lo, hi, found
}

// runeCutBefore moves i back to the start of the UTF-8 sequence it falls
// in; in invalid UTF-8 (no start within UTFMax-1 bytes) it stays.
func runeCutBefore(s string, i int) int { return text.RuneStart(s, i) }

// runeCutAfter moves i forward past the UTF-8 sequence it falls in.
func runeCutAfter(s string, i int) int {
	j := i
	for k := 0; k < utf8.UTFMax-1 && j < len(s) && !utf8.RuneStart(s[j]); k++ {
		j++
	}
	if j == len(s) || utf8.RuneStart(s[j]) {
		return j
	}
	return i
}
