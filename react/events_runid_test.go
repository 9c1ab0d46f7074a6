package react

import (
	"strings"
	"testing"
)

func TestCheckRunID(t *testing.T) {
	for _, id := range []string{"a", "3f9c0a7d51e2b846", "nightly-2026.11_28", "A.b-c_d", strings.Repeat("x", 128)} {
		if err := CheckRunID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", "a\x00b", "a/b", "a\nb", "..", "a..b", ".hidden", "-rf", "a b", "é", strings.Repeat("x", 129), "a\\b", "$(x)"} {
		if err := CheckRunID(id); err == nil {
			t.Errorf("%q accepted", id)
		}
	}
}

// FuzzCheckRunID: an accepted id is a plain word: no byte a hook's
// environment, a path or a log line could misread.
func FuzzCheckRunID(f *testing.F) {
	for _, s := range []string{"a", "a..b", "a/b", "x\x00", "nightly-1", "..", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if CheckRunID(id) != nil {
			return
		}
		if id == "" || len(id) > MaxRunIDLength || strings.Contains(id, "..") || strings.ContainsAny(id, "/\\\x00\n\r\t =$`'\"") || id[0] == '.' || id[0] == '-' {
			t.Fatalf("accepted %q", id)
		}
		for _, c := range []byte(id) {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("accepted %q (byte %#x)", id, c)
			}
		}
	})
}
