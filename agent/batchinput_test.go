package agent

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func collect(t *testing.T, in string) ([]BatchQuery, error) {
	t.Helper()
	var out []BatchQuery
	for q, err := range ReadBatch(strings.NewReader(in), "q.jsonl") {
		if err != nil {
			return out, err
		}
		out = append(out, q)
	}
	return out, nil
}

func TestReadBatch(t *testing.T) {
	in := "why is the disk full?\n" +
		"\n# a comment\n" +
		`{"id": "a1", "query": "list the files"}` + "\n" +
		`{"query": "no id"}` + "\n" +
		`{"id": 7, "query": "numeric id"}` + "\n" +
		`{"id": 1, "query": "x", "extra": 1}` + "\n" +
		`{"id": "b"}` + "\n" +
		`{"query": ` + "\n" +
		`{"id": [1], "query": "bad id"}` + "\n" +
		"  last line without newline  "
	got, err := collect(t, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    string
		line  int
		query string
		err   string
	}{
		{"1", 1, "why is the disk full?", ""},
		{"a1", 4, "list the files", ""},
		{"5", 5, "no id", ""},
		{"7", 6, "numeric id", ""},
		{"7", 7, "", `q.jsonl:7: invalid query object: json: unknown field "extra"`},
		{"b", 8, "", `q.jsonl:8: the object has no "query"`},
		{"9", 9, "", "q.jsonl:9: invalid query object: unexpected EOF"},
		{"10", 10, "", `q.jsonl:10: "id" must be a string or a number, not [1]`},
		{"11", 11, "last line without newline", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d queries: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		errText := ""
		if g.Err != nil {
			errText = g.Err.Error()
		}
		if g.Line != w.line || g.Query != w.query || errText != w.err || (w.err == "" && g.ID != w.id) {
			t.Errorf("line %d: got %+v (%s), want %+v", w.line, g, errText, w)
		}
	}
}

func TestReadBatchLongLineAndReadError(t *testing.T) {
	long := strings.Repeat("x", MaxQueryLine+10)
	got, err := collect(t, "first\n"+long+"\nthird\n")
	if err != nil || len(got) != 3 || got[1].Err == nil || !strings.Contains(got[1].Err.Error(), "q.jsonl:2: line is longer") || got[2].Query != "third" || got[2].Line != 3 {
		t.Fatalf("%v %+v", err, got)
	}
	var n int
	var last error
	for q, err := range ReadBatch(iotest.TimeoutReader(strings.NewReader("a\nb\n")), "in") {
		_ = q
		n++
		last = err
	}
	if last == nil || !errors.Is(last, iotest.ErrTimeout) || !strings.HasPrefix(last.Error(), "in:") {
		t.Fatalf("read error not reported: %d %v", n, last)
	}
}

func FuzzReadBatch(f *testing.F) {
	for _, s := range []string{"q\n", `{"id":1,"query":"x"}`, "{\n#\n", `{"id":{"a":1},"query":""}`, "\xff\xfe\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		lines := 0
		for q, err := range ReadBatch(strings.NewReader(in), "f") {
			if err != nil {
				t.Fatal(err)
			}
			if q.Line <= lines || (q.Err == nil && (q.Query == "" || q.ID == "")) {
				t.Fatalf("bad query %+v after line %d", q, lines)
			}
			lines = q.Line
		}
	})
}
