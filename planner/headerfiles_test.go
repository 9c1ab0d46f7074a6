package planner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tactcli/tact/tools"
)

// A header names the context files the plan was made with; a header
// without them (every plan written before) still parses.
func TestHeaderFiles(t *testing.T) {
	reg := tools.DefaultRegistry()
	step := `{"type":"step","tool":"final_answer","args":{"answer":"ok"}}` + "\n"
	for _, tc := range []struct {
		name, header string
		want         []string
	}{
		{"old header", `{"type":"plan","query":"q","created":"2026-01-02T03:04:05Z"}`, nil},
		{"with files", `{"type":"plan","query":"q","created":"2026-01-02T03:04:05Z","files":["standard input","notes.txt"]}`, []string{"standard input", "notes.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.header+"\n"+step), "p.jsonl", reg)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(p.Header.Files, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("files %q, want %q", p.Header.Files, tc.want)
			}
			var buf bytes.Buffer
			if err := p.WriteJSONL(&buf); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), `"files":`); got != (tc.want != nil) {
				t.Fatalf("written header:\n%s", buf.String())
			}
		})
	}
}
