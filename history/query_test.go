package history

import (
	"context"
	"errors"
	"testing"
	"time"
)

// seedForList records runs a..f, a the oldest.
func seedForList(t *testing.T) *Store {
	s := openTest(t, Options{})
	type seed struct {
		id, workspace, query, observation, answer, reason string
		exit                                              int
		end                                               bool
	}
	seeds := []seed{
		{"a", "/w1", "count lines", "42 lines", "42", "answered", 0, true},
		{"b", "/w2", "build it", "compile error: undefined quux", "", "stalled", 1, true},
		{"c", "/w1", "list files", "main.go NEAR (x) -y \"quoted\" col:val", "main.go", "answered", 0, true},
		{"d", "/w2", "deploy", "timeout waiting", "", "timeout", 124, true},
		{"e", "/w1", "still going", "partial", "", "", 0, false},
		{"f", "/w1", "find quux OR zork", "nothing", "no zork here", "answered", 0, true},
	}
	for i, sd := range seeds {
		rec := s.Begin(Run{ID: sd.id, Workspace: sd.workspace, Query: sd.query, StartedAt: at(time.Duration(i) * time.Hour)})
		rec.Step(Step{Index: 0, Thought: "thinking about " + sd.id, Observation: sd.observation})
		if sd.end {
			rec.End(Final{Answer: sd.answer, Reason: sd.reason, ExitCode: sd.exit})
		}
	}
	flush(t, s)
	return s
}

func TestList(t *testing.T) {
	s := seedForList(t)
	zero, one := 0, 1
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"all, newest first", Filter{}, []string{"f", "e", "d", "c", "b", "a"}},
		{"limit", Filter{Limit: 2}, []string{"f", "e"}},
		{"since", Filter{Since: at(3 * time.Hour)}, []string{"f", "e", "d"}},
		{"until", Filter{Until: at(2 * time.Hour)}, []string{"b", "a"}},
		{"since and until", Filter{Since: at(time.Hour), Until: at(3 * time.Hour)}, []string{"c", "b"}},
		{"reason", Filter{Reason: "answered"}, []string{"f", "c", "a"}},
		{"reason interrupted", Filter{Reason: "interrupted"}, []string{"e"}},
		{"exit 0 (not an unfinished run)", Filter{Exit: &zero}, []string{"f", "c", "a"}},
		{"exit 1", Filter{Exit: &one}, []string{"b"}},
		{"workspace", Filter{Workspace: "/w2"}, []string{"d", "b"}},
		{"query in an observation only", Filter{Query: "undefined"}, []string{"b"}},
		{"query in a query", Filter{Query: "deploy"}, []string{"d"}},
		{"query in an answer", Filter{Query: "42"}, []string{"a"}},
		{"query in a thought", Filter{Query: "about c"}, []string{"c"}},
		{"query words are ANDed", Filter{Query: "quux compile"}, []string{"b"}},
		{"query word in two runs", Filter{Query: "quux"}, []string{"f", "b"}},
		{"query is case-insensitive", Filter{Query: "UNDEFINED"}, []string{"b"}},
		{"query and filters", Filter{Query: "quux", Workspace: "/w1"}, []string{"f"}},
		{"query matching nothing", Filter{Query: "absent"}, nil},
		{"query of blanks", Filter{Query: "   "}, []string{"f", "e", "d", "c", "b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertIDs(t, s, tt.filter, tt.want) })
	}
}

// TestListQueryIsLiteral: FTS5 syntax in the query text is matched as
// words, never an error or an operator.
func TestListQueryIsLiteral(t *testing.T) {
	s := seedForList(t)
	tests := []struct {
		query string
		want  []string
	}{
		{`NEAR`, []string{"c"}},                     // a word in c's observation, not the NEAR operator
		{`main.go NEAR(x)`, []string{"c"}},          // words main, go, near, x
		{`quux OR zork`, []string{"f"}},             // all three words, not quux-or-zork (b has quux only)
		{`quux NOT zork`, nil},                      // "not" is a word no run has
		{`-y`, []string{"c"}},                       // the word y
		{`"quoted"`, []string{"c"}},                 // quotes are text
		{`"unbalanced`, nil},                        // no syntax error
		{`quoted"`, []string{"c"}},                  // still the word quoted
		{`(x)`, []string{"c"}},                      // parentheses are text
		{`col:val`, []string{"c"}},                  // not a column filter
		{`observation:quux`, nil},                   // not a column filter: words observation, quux
		{`*`, nil},                                  // no words at all
		{`quux*`, []string{"f", "b"}},               // no prefix query: the word quux
		{`qu*`, nil},                                // ... so no prefix match
		{`^quux`, []string{"f", "b"}},               // no initial-token anchor
		{`quux AND`, nil},                           // "and" is a word no run has
		{`{quux}`, []string{"f", "b"}},              // braces are text
		{`'; DROP TABLE runs; --`, nil},             // bound as a parameter, harmless
		{"undefined\tcompile\nquux", []string{"b"}}, // any whitespace separates words
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) { assertIDs(t, s, Filter{Query: tt.query}, tt.want) })
	}
	assertIDs(t, s, Filter{}, []string{"f", "e", "d", "c", "b", "a"})
}

func TestGet(t *testing.T) {
	s := openTest(t, Options{})
	for i, id := range []string{"abc123", "abc456", "abd789", "ab%_x", "x"} {
		record(s, Run{ID: id, StartedAt: at(time.Duration(i) * time.Minute)}, 0, Final{Reason: "answered"})
	}
	record(s, Run{ID: "xyz", StartedAt: at(-time.Hour)}, 0, Final{Reason: "answered"}) // recorded last, started first
	flush(t, s)
	tests := []struct {
		arg       string
		want      string
		ambiguous int
		notFound  bool
	}{
		{arg: "abc123", want: "abc123"},
		{arg: "abc4", want: "abc456"},
		{arg: "abd", want: "abd789"},
		{arg: "abc", ambiguous: 2},
		{arg: "ab", ambiguous: 4},
		{arg: "ab%", want: "ab%_x"}, // LIKE wildcards are literal
		{arg: "ab_", notFound: true},
		{arg: "x", want: "x"}, // exact beats being a prefix of xyz
		{arg: "xy", want: "xyz"},
		{arg: "last", want: "x"}, // the newest start, not the last recorded
		{arg: "zzz", notFound: true},
		{arg: "", notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			got, err := s.Get(context.Background(), tt.arg)
			var amb *AmbiguousError
			switch {
			case tt.ambiguous > 0:
				if !errors.As(err, &amb) || amb.Count != tt.ambiguous {
					t.Errorf("Get(%q) = %q, %v; want ambiguous among %d", tt.arg, got.ID, err, tt.ambiguous)
				}
			case tt.notFound:
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("Get(%q) = %q, %v; want ErrNotFound", tt.arg, got.ID, err)
				}
			case err != nil || got.ID != tt.want:
				t.Errorf("Get(%q) = %q, %v; want %q", tt.arg, got.ID, err, tt.want)
			}
		})
	}
}

func TestLast(t *testing.T) {
	s := seedForList(t)
	tests := []struct{ workspace, want string }{{"/w1", "f"}, {"/w2", "d"}}
	for _, tt := range tests {
		got, err := s.Last(context.Background(), tt.workspace)
		if err != nil || got.ID != tt.want {
			t.Errorf("Last(%q) = %q, %v; want %q", tt.workspace, got.ID, err, tt.want)
		}
	}
	if _, err := s.Last(context.Background(), "/none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Last of an empty workspace: %v, want ErrNotFound", err)
	}
}
