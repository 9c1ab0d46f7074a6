package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// maxSymlinks bounds symlink hops in one resolution, like the kernel's
// ELOOP limit, so a link cycle is an error instead of a hang.
const maxSymlinks = 40

// NewEnv returns an Env for workspace, made absolute with symlinks resolved
// so every later containment check compares real paths. The workspace must
// be an existing directory. Limits are left zero (meaning the defaults).
func NewEnv(workspace string) (*Env, error) {
	if workspace == "" {
		workspace = "."
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %q is not a directory", workspace)
	}
	return &Env{Workspace: real}, nil
}

// Resolve maps a tool's path argument to a real absolute path inside the
// workspace. Relative paths are taken from the workspace root. The path is
// cleaned, then every symlink in its existing part is followed (a missing
// tail, such as a file about to be created, is kept as written), and the
// result must lie inside the workspace: `..` escapes, absolute paths
// elsewhere and symlinks leading out are refused. The returned path has no
// symlinks in its existing part as it stood when checked. The file tools do
// not trust that to last: they open it through the workspace's os.Root (see
// root.go), which refuses whatever a later swap would make lead out.
func (e *Env) Resolve(path string) (string, error) {
	ws, err := e.workspace()
	if err != nil {
		return "", err
	}
	return resolveIn(ws, path)
}

// resolveIn is Resolve for the real workspace path ws.
func resolveIn(ws, path string) (string, error) {
	if path == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", path)
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, p)
	}
	p = filepath.Clean(p)
	if !insideDir(ws, p) {
		return "", fmt.Errorf("path %q escapes the workspace", path)
	}
	real, err := resolveReal(p)
	if err != nil {
		var nd notDirError
		if errors.As(err, &nd) {
			if !insideDir(ws, nd.dir) {
				return "", escapeError(path)
			}
			return "", fmt.Errorf("path %q: %s is not a directory", path, relTo(ws, nd.dir))
		}
		return "", fmt.Errorf("path %q: %w", path, unwrapPathError(err))
	}
	if !insideDir(ws, real) {
		// The target is not named: it lies outside, where the model has no
		// business looking.
		return "", escapeError(path)
	}
	return real, nil
}

// escapeError is the refusal of a path that leaves the workspace through a
// symlink, whether found by Resolve or by the kernel during the open.
func escapeError(path string) error {
	return fmt.Errorf("path %q escapes the workspace through a symlink", path)
}

// Rel returns abs relative to the workspace with forward slashes, for
// messages and search output; "." is the workspace itself.
func (e *Env) Rel(abs string) string {
	ws, err := e.workspace()
	if err != nil {
		return abs
	}
	return relTo(ws, abs)
}

// relTo is Rel for the real workspace path ws.
func relTo(ws, abs string) string {
	r, err := filepath.Rel(ws, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

func (e *Env) workspace() (string, error) {
	if e == nil || e.Workspace == "" {
		return "", errors.New("no workspace configured")
	}
	if !filepath.IsAbs(e.Workspace) {
		return "", fmt.Errorf("workspace %q is not absolute (build the Env with NewEnv)", e.Workspace)
	}
	ws := filepath.Clean(e.Workspace)
	// An Env built by hand may name the workspace through a symlink; real
	// paths would then never be inside it, so resolve it here too.
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	return ws, nil
}

func (e *Env) toolTimeout() time.Duration {
	if e.ToolTimeout > 0 {
		return e.ToolTimeout
	}
	return DefaultToolTimeout
}

func (e *Env) outputCap() int {
	if e.OutputCap > 0 {
		return e.OutputCap
	}
	return DefaultOutputCap
}

func (e *Env) readCap() int64 {
	if e.ReadCap > 0 {
		return e.ReadCap
	}
	return DefaultReadCap
}

func (e *Env) killGrace() time.Duration {
	if e.KillGrace > 0 {
		return e.KillGrace
	}
	return DefaultKillGrace
}

// within reports whether p is root or below it; both must be clean and
// absolute.
func insideDir(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// realPath resolves symlinks in the clean absolute path p component by
// component, like filepath.EvalSymlinks, except that once a component does
// not exist the rest is appended lexically. That way a path to a file not yet
// created under a symlinked directory is still checked against where the
// directory really is, and a dangling symlink is resolved to its target.
func resolveReal(p string) (string, error) {
	sep := string(filepath.Separator)
	todo := splitPathParts(p)
	cur := sep
	hops := 0
	missing := false
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// Going up may leave the missing part, so what follows is
			// checked on disk again; otherwise a symlink after the ".."
			// would be taken lexically and not followed.
			cur = filepath.Dir(cur)
			missing = false
			continue
		}
		next := filepath.Join(cur, c)
		if missing {
			cur = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				missing = true
				cur = next
				continue
			}
			if errors.Is(err, syscall.ENOTDIR) {
				return "", notDirError{cur}
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		if hops > maxSymlinks {
			return "", errors.New("too many levels of symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = sep
		}
		// The target's components are processed before the rest, so a
		// symlink inside the target is followed before any ".." after it,
		// as the kernel does.
		todo = append(splitPathParts(target), todo...)
	}
	return cur, nil
}

// notDirError says that dir, met while resolving, is not a directory; Resolve
// names it only when it lies inside the workspace.
type notDirError struct{ dir string }

func (e notDirError) Error() string { return e.dir + " is not a directory" }

func splitPathParts(p string) []string {
	return strings.Split(p, string(filepath.Separator))
}

// unwrapPathError drops the *PathError (or *LinkError, from a rename)
// wrapper so messages name the path the model gave, not the resolved path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
