package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/tactcli/tact/internal/filekind"
)

// StatPath is the stat_path tool: what a workspace path is, without
// reading it. It declares its path, so policy, hooks and mcp serve treat
// it as they treat the other file tools with no change of their own.
type StatPath struct{}

var statPathSchema = schemaObject(map[string]any{
	"path": schemaNonEmpty("File or directory to describe, relative to the workspace root."),
}, "path")

func (StatPath) Name() string { return "stat_path" }
func (StatPath) Description() string {
	return "Describe a workspace path without reading it: its type, size, permissions and modification time."
}
func (StatPath) Class() Class            { return ClassRead }
func (StatPath) Schema() json.RawMessage { return statPathSchema }
func (StatPath) Declare() Decl           { return Decl{Paths: []string{"path"}} }

func (t StatPath) Run(_ context.Context, env *Env, raw json.RawMessage) Result {
	var path string
	if err := decodeArgs(t.Name(), raw, argSpec{name: "path", required: true, dst: &path}); err != nil {
		return toolFail(err)
	}
	p, err := env.locate(path)
	if err != nil {
		return toolFail(fmt.Errorf("stat_path: %w", err))
	}
	defer p.Close()
	// Through the workspace's os.Root: a link swapped in after locate's
	// check cannot lead the stat out. Stat does not open, so a FIFO does
	// not block.
	fi, err := p.root.Stat(p.rel)
	if err != nil {
		return toolFail(fmt.Errorf("stat_path: %w", p.fail(err)))
	}
	return Result{Output: statText(p.rel, fi)}
}

// statText is a path's description, one field a line; path is the one
// reached (workspace-relative, symlinks resolved).
func statText(path string, fi fs.FileInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "path: %s\n", path)
	fmt.Fprintf(&b, "type: %s\n", strings.TrimPrefix(filekind.Name(fi.Mode()), "a "))
	if fi.Mode().IsRegular() {
		fmt.Fprintf(&b, "size: %d bytes\n", fi.Size())
	}
	fmt.Fprintf(&b, "mode: %04o (%s)\n", octalMode(fi.Mode()), fi.Mode().Perm())
	fmt.Fprintf(&b, "modified: %s\n", fi.ModTime().UTC().Format(time.RFC3339))
	return b.String()
}

// octalMode is m's permission bits as chmod writes them, setuid, setgid
// and sticky included.
func octalMode(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		o |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		o |= 0o1000
	}
	return o
}
