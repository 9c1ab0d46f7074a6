// Package instructions reads a workspace's project instructions: the
// AGENTS.md (or, where a directory has none, TACT.md) files of the
// workspace and of the directories above it up to its git root, joined
// root-first so that the nearer file, read last, has the last word.
//
// Nothing outside the git root is read (without a git root: outside the
// workspace), and a symlink that leads out of it is not followed: every
// file is opened through an os.Root at that directory.
package instructions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Names are the file names looked for in each directory, in order; the
// first one present is read.
var Names = []string{"AGENTS.md", "TACT.md"}

// MaxBytes caps the joined instructions; more is cut with CutMarker.
const MaxBytes = 32 << 10

// CutMarker ends instructions cut at MaxBytes.
const CutMarker = "\n[project instructions cut at 32 KiB]"

// Instructions are the joined project instructions of a workspace.
type Instructions struct {
	Text  string   // the files' contents, each under a "From NAME:" line; "" when none
	Files []string // the files read, slash paths relative to Root, root-first
	Root  string   // the directory nothing above is read from (git root or workspace)
	Cut   bool     // Text was cut at MaxBytes
	// Refused says why the enclosing git root was not used ("": it was, or
	// there is none): another user owns it, so the files above the
	// workspace are theirs to write; only the workspace's own are read.
	Refused string
}

// Read reads the project instructions of workspace (a real path, symlinks
// resolved, as tools.Env holds it). A file that is not a regular text file
// is skipped; an error is only for a directory or file that cannot be read.
func Read(workspace string) (Instructions, error) {
	rootDir := gitRoot(workspace)
	in := Instructions{Root: rootDir}
	if why := untrustedRoot(rootDir); why != "" && rootDir != workspace {
		// As git's safe.directory: /tmp/.git and /tmp/AGENTS.md made by
		// another user must not reach the prompt of every run under /tmp.
		in.Refused = why
		rootDir, in.Root = workspace, workspace
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return in, fmt.Errorf("project instructions: %w", err)
	}
	defer root.Close()
	var parts []string
	for _, dir := range dirsFrom(rootDir, workspace) {
		for _, name := range Names {
			rel := filepath.ToSlash(filepath.Join(dir, name))
			data, err := readIn(root, rel)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if errors.Is(err, errSkip) {
				break // present but unusable: it still stands for this directory
			}
			if err != nil {
				return in, fmt.Errorf("project instructions %s: %w", filepath.Join(rootDir, rel), err)
			}
			in.Files = append(in.Files, rel)
			parts = append(parts, "From "+rel+":\n"+strings.TrimSpace(string(data)))
			break
		}
	}
	in.Text = strings.Join(parts, "\n\n")
	if len(in.Text) > MaxBytes {
		cut := MaxBytes
		for cut > 0 && !utf8.RuneStart(in.Text[cut]) {
			cut--
		}
		in.Text, in.Cut = in.Text[:cut]+CutMarker, true
	}
	return in, nil
}

// errSkip: a file that is there but is no regular text file (a FIFO, a
// directory, a binary, a symlink out of the root).
var errSkip = errors.New("skipped")

// readIn reads rel under root: a regular file, at most MaxBytes+1 of it
// (more is cut anyway), without a NUL byte.
func readIn(root *os.Root, rel string) ([]byte, error) {
	st, err := root.Stat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		// os.Root refuses a path that leads out of it: not ours to read.
		return nil, errSkip
	}
	if !st.Mode().IsRegular() {
		return nil, errSkip
	}
	// Non-blocking: a regular file swapped for a FIFO cannot hang the open.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, errSkip
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, errSkip
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errSkip
	}
	return data, nil
}

// gitRoot is the nearest directory at or above workspace holding .git (a
// directory, or a file for a worktree or submodule); workspace itself when
// none does.
func gitRoot(workspace string) string {
	for dir := workspace; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return workspace
		}
		dir = parent
	}
}

// untrustedRoot says why a git root may not be trusted (its directory or
// its .git owned by a user who is neither this one nor root), or "".
func untrustedRoot(dir string) string {
	for _, p := range []string{dir, filepath.Join(dir, ".git")} {
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != os.Geteuid() {
			return fmt.Sprintf("the git root %s is not used: %s is owned by uid %d, not by this user (uid %d) or root (as git's safe.directory); only the workspace's own files are read", dir, p, sys.Uid, os.Geteuid())
		}
	}
	return ""
}

// dirsFrom lists the directories from root down to workspace, relative to
// root ("." first).
func dirsFrom(root, workspace string) []string {
	rel, err := filepath.Rel(root, workspace)
	if err != nil || rel == "." {
		return []string{"."}
	}
	dirs := []string{"."}
	cur := ""
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		dirs = append(dirs, cur)
	}
	return dirs
}
