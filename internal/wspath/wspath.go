// Package wspath resolves a path named in a workspace as the file tools
// reach it: cleaned (as the tools clean it, lexically), then every symlink
// in the part that exists followed. Approvers, hooks and policy rules are
// shown and matched against this path, not the spelling, so a link inside
// the workspace (docs/out -> ../src) cannot make a write to src/ look like
// one to docs/.
package wspath

import (
	"path/filepath"
	"strings"
)

// Real is p (relative to ws, or absolute) made absolute and cleaned, with
// the symlinks along its existing part resolved; a missing tail (a file
// about to be created) is kept as written. ws itself is resolved too.
func Real(ws, p string) string {
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, p)
	}
	cur, rest := filepath.Clean(p), ""
	for {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return filepath.Join(cur, rest)
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Rel is Real(ws, p) relative to the (resolved) workspace, slash-separated;
// inside is false when it lies outside it, and rel is then the absolute
// real path.
func Rel(ws, p string) (rel string, inside bool) {
	real := Real(ws, p)
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	r, err := filepath.Rel(ws, real)
	if err != nil {
		return filepath.ToSlash(real), false
	}
	r = filepath.ToSlash(r)
	if r == ".." || strings.HasPrefix(r, "../") {
		return filepath.ToSlash(real), false
	}
	return r, true
}
