package redact

import (
	"strings"
	"testing"
)

const cutSecret = "supersecretval"

func cutRedactor(t testing.TB, patterns ...string) *Redactor {
	t.Helper()
	r, err := NewRedactor([]string{"MY_API_KEY=" + cutSecret}, patterns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCutBeforeAfter(t *testing.T) {
	r := cutRedactor(t, `pin-[0-9]{4,}`)
	s := "AAAA" + cutSecret + "BBBB pin-123456 CC"
	sStart, sEnd := 4, 4+len(cutSecret)
	pStart := strings.Index(s, "pin-")
	pEnd := pStart + len("pin-123456")
	tests := []struct {
		at, before, after int
	}{
		{0, 0, 0},
		{2, 2, 2},
		{sStart, sStart, sStart},      // at a secret's edge: already safe
		{sStart + 1, sStart, sEnd},    // inside: back to its start, or on to its end
		{sEnd - 1, sStart, sEnd},      //
		{sEnd, sEnd, sEnd},            //
		{pStart + 5, pStart, pEnd},    // inside a regexp match
		{len(s), len(s), len(s)},      //
		{len(s) + 10, len(s), len(s)}, // clamped
		{-3, 0, 0},                    //
	}
	for _, tt := range tests {
		if got := r.CutBefore(s, tt.at); got != tt.before {
			t.Errorf("CutBefore(%d) = %d, want %d", tt.at, got, tt.before)
		}
		if got := r.CutAfter(s, tt.at); got != tt.after {
			t.Errorf("CutAfter(%d) = %d, want %d", tt.at, got, tt.after)
		}
	}
	// Overlapping occurrences move the cut past all of them.
	ov, _ := NewRedactor([]string{"X_TOKEN=abab"}, nil)
	if got := ov.CutBefore("xxababab", 5); got != 2 {
		t.Errorf("overlapping CutBefore = %d, want 2", got)
	}
	// A nil Redactor only keeps runes whole.
	var none *Redactor
	if got := none.CutBefore("aé", 2); got != 1 {
		t.Errorf("nil CutBefore inside a rune = %d, want 1", got)
	}
	if got := none.CutAfter("éa", 1); got != 2 {
		t.Errorf("nil CutAfter inside a rune = %d, want 2", got)
	}
	if m := r.CutMargin(); m != RegexpCutMargin {
		t.Errorf("CutMargin = %d, want %d", m, RegexpCutMargin)
	}
	if m := cutRedactor(t).CutMargin(); m < len(cutSecret) || m >= RegexpCutMargin {
		t.Errorf("literal-only CutMargin = %d", m)
	}
}

// FuzzSafeCut: cutting a text at CutBefore/CutAfter and redacting both
// halves leaves no 4-byte part of a secret, literal or regexp match.
// Secrets are lowercase letters (literal) and '#' plus digits (regexp);
// the filler around them has neither, so any surviving lowercase or digit
// run of 4 comes from a split secret.
func FuzzSafeCut(f *testing.F) {
	f.Add([]byte("AAAA BBBB"), []byte("secret"), []byte("12345678"), uint16(3), uint16(5), uint16(6))
	f.Add([]byte("x"), []byte("abab"), []byte("1"), uint16(0), uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, filler, secret, digits []byte, p1, p2, cut uint16) {
		lower := func(b []byte) string {
			out := make([]byte, len(b))
			for i, c := range b {
				out[i] = 'a' + c%26
			}
			return string(out)
		}
		sec := lower(secret)
		if len(sec) < minSecretLen || len(sec) > 64 || len(filler) > 2000 || len(digits) > 64 {
			return
		}
		num := make([]byte, len(digits))
		for i, c := range digits {
			num[i] = '0' + c%10
		}
		fill := make([]byte, len(filler))
		for i, c := range filler {
			fill[i] = " \nABCDEFGHIJKLMNOPQRSTUVWXYZ#é"[c%31] // é's bytes are neither
		}
		text := string(fill)
		i1, i2 := int(p1)%(len(text)+1), int(p2)%(len(text)+1)
		i1, i2 = min(i1, i2), max(i1, i2)
		text = text[:i1] + sec + text[i1:i2] + "#" + string(num) + text[i2:] + sec
		r, err := NewRedactor([]string{"FUZZ_TOKEN=" + sec}, []string{`#[0-9]{4,}`})
		if err != nil {
			t.Fatal(err)
		}
		at := int(cut) % (len(text) + 1)
		for _, k := range []int{r.CutBefore(text, at), r.CutAfter(text, at)} {
			for _, half := range []string{text[:k], text[k:]} {
				red := r.Redact(half)
				if run := longRun(red, func(c byte) bool { return c >= 'a' && c <= 'z' }); run != "" {
					t.Fatalf("secret part %q survives the cut at %d of %q", run, k, text)
				}
				if run := longRun(red, func(c byte) bool { return c >= '0' && c <= '9' }); run != "" {
					t.Fatalf("regexp match part %q survives the cut at %d of %q", run, k, text)
				}
			}
		}
	})
}

// longRun returns the first run of 4 or more bytes satisfying in.
func longRun(s string, in func(byte) bool) string {
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && in(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 4 {
			return s[start:i]
		}
		start = -1
	}
	return ""
}
