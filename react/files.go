package react

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/prompt"
	"github.com/tactcli/tact/tools"
)

// ContextFile is a text the user gave the run as context (tact run -f):
// it goes into the task message, under its name, cut to its share of the
// window as an observation is.
type ContextFile struct {
	Name string // as the user named it; "standard input" for -f -
	// Path is the file's real absolute path ("" for standard input): one
	// inside the workspace gets read_file's hint in its cut marker.
	Path string
	Text string
}

// fileLimit is the most tokens each of n context files may take: an even
// share of half the room the window leaves after the pinned prefix (the
// other half is the run's own steps), or --max-observation-tokens when the
// window is unknown.
func (r *run) fileLimit(n int) int {
	if r.win.size <= 0 {
		return r.e.MaxObservationTokens
	}
	return max(r.win.historyRoom()/2/n, minObservation)
}

// taskFiles are the context files as the task message shows them, each
// cut to its limit.
func (r *run) taskFiles() []prompt.TaskFile {
	if len(r.e.Files) == 0 {
		return nil
	}
	limit := r.fileLimit(len(r.e.Files))
	out := make([]prompt.TaskFile, 0, len(r.e.Files))
	for _, f := range r.e.Files {
		out = append(out, prompt.TaskFile{Name: f.Name, Text: strings.TrimRight(r.cutToTokens(f.Text, limit, r.fileHint(f)), "\n")})
	}
	return out
}

// fileHint is read_file's cut hint for a file inside the workspace, nil
// for one outside it (the tools cannot read it) or standard input.
func (r *run) fileHint(f ContextFile) cutHint {
	if f.Path == "" || r.e.Env == nil || r.e.Env.Workspace == "" {
		return nil
	}
	rel, err := filepath.Rel(r.e.Env.Workspace, f.Path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil
	}
	args, err := json.Marshal(map[string]string{"path": filepath.ToSlash(rel)})
	if err != nil {
		return nil
	}
	return hintFor(tools.ReadFile{}, args)
}
