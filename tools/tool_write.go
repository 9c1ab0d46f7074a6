package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ---- write_file ----

// WriteFile is the write_file tool.
type WriteFile struct{}

var writeFileSchema = schemaObject(map[string]any{
	"path":    schemaNonEmpty("File to create or overwrite, relative to the workspace root; missing parent directories are created."),
	"content": schemaStr("The complete new content of the file."),
}, "path", "content")

func (WriteFile) Name() string { return "write_file" }
func (WriteFile) Description() string {
	return "Create or overwrite a workspace file with the given content (parent directories are created; an existing file keeps its owner, mode and hard links)."
}
func (WriteFile) Class() Class            { return ClassWrite }
func (WriteFile) Schema() json.RawMessage { return writeFileSchema }

// Declare: writing the same content twice leaves what once does.
func (WriteFile) Declare() Decl {
	return Decl{Paths: []string{"path"}, FilePath: true, Content: "content", HookNames: []string{"Write"}, Idempotent: true}
}

func (t WriteFile) Run(ctx context.Context, env *Env, raw json.RawMessage) Result {
	var path, content string
	if err := decodeArgs(t.Name(), raw,
		argSpec{name: "path", required: true, dst: &path},
		argSpec{name: "content", required: true, dst: &content},
	); err != nil {
		return toolFail(err)
	}
	if err := ctx.Err(); err != nil {
		return toolFail(fmt.Errorf("write_file: %w", err))
	}
	p, err := env.locate(path)
	if err != nil {
		return toolFail(fmt.Errorf("write_file: %w", err))
	}
	defer p.Close()
	target, err := openTarget(p, true, false, false)
	if err != nil {
		return toolFail(fmt.Errorf("write_file: %w", err))
	}
	defer target.Close()
	if err := target.replace([]byte(content)); err != nil {
		return toolFail(fmt.Errorf("write_file: %s: %w", path, err))
	}
	verb := "created"
	if target.existed() {
		verb = "overwrote"
	}
	return Result{Output: fmt.Sprintf("%s %s (%d bytes)", verb, p.rel, len(content))}
}

// Describe tells an approval prompt which file a write_file call replaces.
func (t WriteFile) Describe(env *Env, raw json.RawMessage) string {
	var path, content string
	if err := decodeArgs(t.Name(), raw,
		argSpec{name: "path", required: true, dst: &path},
		argSpec{name: "content", required: true, dst: &content},
	); err != nil {
		return err.Error()
	}
	p, err := env.locate(path)
	if err != nil {
		return "write_file: " + err.Error()
	}
	defer p.Close()
	what := "new file"
	if _, err := p.root.Lstat(p.rel); err == nil {
		what = "overwrite"
	}
	return fmt.Sprintf("write_file: %s (%d bytes, %s)", p.abs, len(content), what)
}

// ---- edit_file ----

// EditFile is the edit_file tool.
type EditFile struct{}

var editFileSchema = schemaObject(map[string]any{
	"path":       schemaNonEmpty("Existing file to edit, relative to the workspace root."),
	"old_string": schemaNonEmpty("Exact text to replace; it must occur exactly once in the file (include surrounding lines to make it unique)."),
	"new_string": schemaStr("Text to put in its place."),
}, "path", "old_string", "new_string")

func (EditFile) Name() string { return "edit_file" }
func (EditFile) Description() string {
	return "Replace the one occurrence of old_string with new_string in a workspace file (the file keeps its owner, mode and hard links)."
}
func (EditFile) Class() Class            { return ClassWrite }
func (EditFile) Schema() json.RawMessage { return editFileSchema }
func (EditFile) Declare() Decl {
	return Decl{Paths: []string{"path"}, FilePath: true, Old: "old_string", New: "new_string", HookNames: []string{"Edit"}}
}

type editArgs struct{ path, old, new string }

func (t EditFile) decode(raw json.RawMessage) (editArgs, error) {
	var a editArgs
	err := decodeArgs(t.Name(), raw,
		argSpec{name: "path", required: true, dst: &a.path},
		argSpec{name: "old_string", required: true, dst: &a.old},
		argSpec{name: "new_string", required: true, dst: &a.new},
	)
	if err == nil && a.old == "" {
		err = errors.New("edit_file: old_string is empty; use write_file to create or replace a whole file")
	}
	return a, err
}

func (t EditFile) Run(ctx context.Context, env *Env, raw json.RawMessage) Result {
	a, err := t.decode(raw)
	if err != nil {
		return toolFail(err)
	}
	p, err := env.locate(a.path)
	if err != nil {
		return toolFail(fmt.Errorf("edit_file: %w", err))
	}
	defer p.Close()
	target, err := openTarget(p, false, true, true)
	if err != nil {
		return toolFail(fmt.Errorf("edit_file: %w", err))
	}
	defer target.Close()
	limit := env.readCap()
	data, err := io.ReadAll(io.LimitReader(target.cur, limit+1))
	if err != nil {
		return toolFail(fmt.Errorf("edit_file: read %s: %w", a.path, unwrapPathError(err)))
	}
	if int64(len(data)) > limit {
		return toolFail(fmt.Errorf("edit_file: %s is larger than the read cap of %d bytes", a.path, limit))
	}
	text := string(data)
	switch n := strings.Count(text, a.old); n {
	case 1:
	case 0:
		return toolFail(fmt.Errorf("edit_file: old_string not found in %s (0 occurrences); it must occur exactly once", a.path))
	default:
		return toolFail(fmt.Errorf("edit_file: old_string occurs %d times in %s; it must occur exactly once (include more surrounding text)", n, a.path))
	}
	if err := ctx.Err(); err != nil {
		return toolFail(fmt.Errorf("edit_file: %w", err))
	}
	updated := strings.Replace(text, a.old, a.new, 1)
	if err := target.replace([]byte(updated)); err != nil {
		return toolFail(fmt.Errorf("edit_file: %s: %w", a.path, err))
	}
	line := strings.Count(text[:strings.Index(text, a.old)], "\n") + 1
	return Result{Output: fmt.Sprintf("edited %s: replaced 1 occurrence at line %d (%d -> %d bytes)", p.rel, line, len(text), len(updated))}
}

// Describe tells an approval prompt which file an edit_file call changes.
func (t EditFile) Describe(env *Env, raw json.RawMessage) string {
	a, err := t.decode(raw)
	if err != nil {
		return err.Error()
	}
	real, err := env.Resolve(a.path)
	if err != nil {
		return "edit_file: " + err.Error()
	}
	return fmt.Sprintf("edit_file: %s (replace %d bytes with %d bytes)", real, len(a.old), len(a.new))
}

// atomicWrite replaces the file at the absolute path with data, mode mode: it
// writes a temp file in the same directory, fsyncs it, and renames it over
// path, so readers and a killed run see either the old or the new content,
// and two concurrent writers cannot interleave (the last rename wins). It is
// for files tact keeps itself (the policy file); the file tools write through
// the workspace's os.Root by the rules in filewrite.go.
func atomicWrite(path string, data []byte, mode fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".tact-*.tmp")
	if err != nil {
		return fmt.Errorf("create temp file: %w", unwrapPathError(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write: %w", unwrapPathError(err))
	}
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("chmod: %w", unwrapPathError(err))
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", unwrapPathError(err))
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close: %w", unwrapPathError(err))
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename: %w", unwrapPathError(err))
	}
	// Make the rename itself durable; failure here leaves a correct file,
	// so it is not reported.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
