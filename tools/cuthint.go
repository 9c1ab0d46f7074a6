package tools

import (
	"encoding/json"
	"fmt"
)

// CutHinter is implemented by tools that can say how to read the part of
// their output that an observation had to leave out: lines first..last of
// the output, when the observation showed about page lines.
type CutHinter interface {
	CutHint(args json.RawMessage, first, last, page int) string
}

// CutHint: read_file with the offset of the first line left out.
func (ReadFile) CutHint(args json.RawMessage, first, last, page int) string {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == "" || a.Offset < 0 {
		return ""
	}
	call, err := json.Marshal(map[string]any{"path": a.Path, "offset": a.Offset + first - 1, "limit": min(page, last-first+1)})
	if err != nil {
		return ""
	}
	return fmt.Sprintf("they are lines %d-%d of the file; read them with read_file %s", a.Offset+first, a.Offset+last, call)
}

// CutHint: narrow the command.
func (RunCommand) CutHint(_ json.RawMessage, first, last, _ int) string {
	return fmt.Sprintf("to see them run a narrower command (grep PATTERN, head -n, tail -n, sed -n '%d,%dp')", first, last)
}

// CutHint: narrow the search.
func (SearchFiles) CutHint(json.RawMessage, int, int, int) string {
	return "narrow the search (a subdirectory or a stricter pattern) to see them"
}

// CutHint: list a subdirectory.
func (ListFiles) CutHint(json.RawMessage, int, int, int) string {
	return "list a subdirectory to see them"
}
