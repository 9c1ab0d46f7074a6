package history

import (
	"context"
	"testing"
)

// Whatever a user types after tact log -q, the store answers with runs or
// none, never an FTS5 syntax error.
func FuzzListQuery(f *testing.F) {
	s := openTest(f, Options{})
	record(s, Run{ID: "r1", Query: "why is the disk full?"}, 2, Final{Answer: "logs", Reason: "success"})
	flush(f, s)
	for _, seed := range []string{"disk", `"disk`, "disk*", "NEAR(a b)", "a OR b", "-x", "col:disk", "(", "^a", `"" ""`, "\x00", "ümlaut"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := s.List(context.Background(), Filter{Query: q}); err != nil {
			t.Fatalf("List(%q): %v", q, err)
		}
	})
}
