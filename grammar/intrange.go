package grammar

import (
	"fmt"
	"strings"
)

// maxBound is the largest bound magnitude written as digits; past it a
// bound is left to the validator (the grammar's integers have at most 16
// digits anyway).
const maxBound = 1_000_000_000_000_000

// intRange is a grammar expression of the integers within min and max
// (nil: unbounded), written as digit patterns; false where a bound is too
// large to write.
func intRange(min, max *int64) (string, bool) {
	if (min != nil && (*min > maxBound || *min < -maxBound)) || (max != nil && (*max > maxBound || *max < -maxBound)) {
		return "", false
	}
	if min != nil && max != nil && *min > *max {
		return "", false
	}
	var alts []string
	// Negative integers -n: n from max(1, -max) to -min.
	if min == nil || *min < 0 {
		var nlo int64 = 1
		if max != nil && *max < 0 {
			nlo = -*max
		}
		var nhi *int64
		if min != nil {
			v := -*min
			nhi = &v
		}
		alts = append(alts, `"-" `+group(nonNegative(nlo, nhi)))
	}
	if max == nil || *max >= 0 {
		var lo int64
		if min != nil && *min > 0 {
			lo = *min
		}
		alts = append(alts, nonNegative(lo, max))
	}
	return strings.Join(alts, " | "), true
}

func group(e string) string {
	if strings.Contains(e, "|") {
		return "(" + e + ")"
	}
	return e
}

// nonNegative: the integers lo..hi (hi nil: unbounded), 0 <= lo.
func nonNegative(lo int64, hi *int64) string {
	los := itoa(lo)
	var alts []string
	maxLen := 16
	if hi != nil {
		maxLen = len(itoa(*hi))
	}
	for n := len(los); n <= maxLen; n++ {
		from := pow10(n - 1)
		if n == 1 {
			from = 0
		}
		from = max(from, lo)
		to := pow10(n) - 1
		if hi != nil {
			to = min(to, *hi)
		}
		if hi == nil && n > len(los) {
			// Every longer length: one pattern for them all.
			alts = append(alts, fmt.Sprintf("[1-9] [0-9]{%d,%d}", n-1, maxLen-1))
			break
		}
		if from > to {
			continue
		}
		alts = append(alts, sameLength(pad(from, n), pad(to, n)))
	}
	return strings.Join(alts, " | ")
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

func pad(v int64, n int) string {
	s := itoa(v)
	return strings.Repeat("0", n-len(s)) + s
}

// sameLength: the digit strings of lo's length from lo to hi (lo <= hi).
func sameLength(lo, hi string) string {
	if lo == hi {
		return quote(lo)
	}
	if len(lo) == 1 {
		return fmt.Sprintf("[%c-%c]", lo[0], hi[0])
	}
	if lo[0] == hi[0] {
		return quote(lo[:1]) + " " + group(sameLength(lo[1:], hi[1:]))
	}
	n := len(lo) - 1
	zeros, nines := strings.Repeat("0", n), strings.Repeat("9", n)
	if lo[1:] == zeros && hi[1:] == nines {
		return fmt.Sprintf("[%c-%c] [0-9]{%d}", lo[0], hi[0], n)
	}
	var alts []string
	first, last := lo[0], hi[0]
	if lo[1:] != zeros {
		alts = append(alts, quote(lo[:1])+" "+group(sameLength(lo[1:], nines)))
		first++
	}
	if hi[1:] != nines {
		last--
	}
	if first <= last {
		alts = append(alts, fmt.Sprintf("[%c-%c] [0-9]{%d}", first, last, n))
	}
	if hi[1:] != nines {
		alts = append(alts, quote(hi[:1])+" "+group(sameLength(zeros, hi[1:])))
	}
	return strings.Join(alts, " | ")
}
