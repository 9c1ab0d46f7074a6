package react

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tactcli/tact/redact"
	"github.com/tactcli/tact/tools"
)

// cutHint says how to see lines first..last of a tool's output that an
// observation left out; page is how many lines the observation showed.
type cutHint func(first, last, page int) string

// hintFor is the tool's own hint (tools.CutHinter) for this call, or nil.
func hintFor(tool tools.Tool, args json.RawMessage) cutHint {
	h, ok := tool.(tools.CutHinter)
	if !ok {
		return nil
	}
	return func(first, last, page int) string { return h.CutHint(args, first, last, page) }
}

// cutToTokens cuts s to at most limit tokens, marker included, keeping its
// head and tail (cut at line ends where one is near) with a marker saying
// what was cut and, with hint, how to read it. Counting is exact when the
// backend counts; the cut is first sized in bytes from the prefix's bytes
// per token, then tightened, so a huge output is never tokenized whole.
func (r *run) cutToTokens(s string, limit int, hint cutHint) string {
	if len(s) <= limit {
		return s // no token is shorter than a byte
	}
	count := r.win.count
	bpt := r.win.bytesPerToken
	if float64(len(s)) <= 2*bpt*float64(limit) && count.Text(s) <= limit {
		return s
	}
	budget := int(bpt * float64(limit))
	for range 6 {
		out := r.cutBytes(s, budget, hint)
		n := count.Text(out)
		if n <= limit || budget <= minObservation {
			return out
		}
		// Shrink in proportion, a little more than needed.
		next := int(float64(budget) * float64(limit) / float64(n) * 0.95)
		budget = max(min(next, budget-1), minObservation)
	}
	return r.cutBytes(s, minObservation, hint)
}

// cutBytes keeps about budget bytes of s: three quarters from the head, a
// quarter from the tail, ends moved to line boundaries when one is within
// a quarter of the cut, never inside a secret or a UTF-8 sequence.
func (r *run) cutBytes(s string, budget int, hint cutHint) string {
	if len(s) <= budget {
		return s
	}
	var red *redact.Redactor
	if r.e.Env != nil {
		red = r.e.Env.Redactor
	}
	headWant := budget * 3 / 4
	tailWant := budget - headWant
	head := headWant
	if i := strings.LastIndexByte(s[:head], '\n'); i >= 0 && i+1 >= headWant*3/4 {
		head = i + 1
	}
	head = red.CutBefore(s, head)
	tail := len(s) - tailWant
	if i := strings.IndexByte(s[tail:], '\n'); i >= 0 && i+1 <= tailWant/4 {
		tail += i + 1
	}
	tail = red.CutAfter(s, max(tail, head))
	cut := s[head:tail]
	first := strings.Count(s[:head], "\n") + 1
	last := first + strings.Count(cut, "\n")
	if strings.HasSuffix(cut, "\n") {
		last--
	}
	last = max(last, first)
	lines := "line " + fmt.Sprint(first)
	if last > first {
		lines = fmt.Sprintf("lines %d-%d", first, last)
	}
	how := ""
	if hint != nil {
		if h := hint(first, last, max(strings.Count(s[:head], "\n"), 1)); h != "" {
			how = "; " + h
		}
	}
	sep := "\n"
	if head > 0 && s[head-1] == '\n' {
		sep = ""
	}
	return fmt.Sprintf("%s%s[... %s cut (%d bytes, about %d tokens)%s ...]\n%s",
		s[:head], sep, lines, len(cut), int(float64(len(cut))/r.win.bytesPerToken+0.5), how, s[tail:])
}
