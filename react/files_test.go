package react

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/redact"
)

// Context files go into the pinned task message under their names, cut to
// their share of the window with the cut marker (and read_file's hint for
// a file in the workspace), redacted.
func TestContextFilesInTaskMessage(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	big := strings.Repeat("diff line that goes on and on\n", 20000) // ~600 KB
	tests := []struct {
		name     string
		file     func(ws string) ContextFile
		want     []string
		notWant  []string
		maxBytes int // of the task message; 0: no bound checked
	}{
		{"small file whole", func(string) ContextFile { return ContextFile{Name: "notes.txt", Text: "remember the milk\n"} },
			[]string{"Query: test query\n\nThe user gave this file as context: notes.txt\n--- begin notes.txt ---\nremember the milk\n--- end notes.txt ---"}, nil, 0},
		{"standard input cut to the window", func(string) ContextFile { return ContextFile{Name: "standard input", Text: big} },
			[]string{"--- begin standard input ---\ndiff line", "cut (", "--- end standard input ---"}, []string{"read_file"}, 16000},
		{"workspace file cut with read_file's hint", func(ws string) ContextFile {
			return ContextFile{Name: "log.txt", Path: filepath.Join(ws, "sub", "log.txt"), Text: big}
		}, []string{"cut (", `read them with read_file {"limit":`, `"path":"sub/log.txt"`}, nil, 16000},
		{"file outside the workspace: no hint", func(string) ContextFile { return ContextFile{Name: "/etc/x", Path: "/etc/x", Text: big} },
			[]string{"cut ("}, []string{"read_file"}, 16000},
		{"secret redacted", func(string) ContextFile { return ContextFile{Name: ".env", Text: "KEY=" + secret + "\n"} },
			[]string{"KEY=[REDACTED]"}, []string{secret}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, action("the file is in the task message", "final_answer", `{"answer":"ok"}`))
			red, err := redact.NewRedactor([]string{"MY_API_KEY=" + secret}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h.ex.Env.Redactor = red
			h.ex.NoPlan = true
			h.ex.ContextSize = 8192
			h.ex.MaxTokens = 256
			h.ex.Files = []ContextFile{tt.file(h.ex.Env.Workspace)}
			if res := h.run(""); res.TerminationReason != ReasonSuccess {
				t.Fatalf("%s %s", res.TerminationReason, res.Message)
			}
			task := h.rec.reqs[0].Messages[1].Content
			for _, w := range tt.want {
				if !strings.Contains(task, w) {
					t.Errorf("task message lacks %q:\n%.2000s", w, task)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(task, w) {
					t.Errorf("task message has %q", w)
				}
			}
			if tt.maxBytes > 0 && len(task) > tt.maxBytes {
				t.Errorf("task message is %d bytes, want at most %d", len(task), tt.maxBytes)
			}
		})
	}
}
