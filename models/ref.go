package models

import (
	"fmt"
	"regexp"
	"strings"
)

// RefKind tells the forms of `tact models pull` argument apart.
type RefKind int

const (
	// RefURL: an http(s) URL (or anything with "://" that is not hf://),
	// fetched as given.
	RefURL RefKind = iota
	// RefCatalog: a catalog name such as qwen2.5-1.5b.
	RefCatalog
	// RefFile: a file in a hub repository: hf.co/REPO/FILE,
	// huggingface.co/REPO/FILE or hf://REPO/FILE.
	RefFile
	// RefQuant: the file of one quantization in a hub repository:
	// REPO:QUANT or hf.co/REPO[:QUANT] (default Q4_K_M, as llama.cpp's -hf).
	RefQuant
)

// DefaultQuant is the quantization hf.co/REPO without :QUANT picks.
const DefaultQuant = "Q4_K_M"

// Ref is a parsed pull argument.
type Ref struct {
	Kind     RefKind
	URL      string        // RefURL
	Entry    *CatalogEntry // RefCatalog
	Repo     string        // RefFile, RefQuant: OWNER/NAME
	File     string        // RefFile
	Revision string        // RefFile: "" means main
	Quant    string        // RefQuant
}

var (
	repoPart  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	quantPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// ParseRef parses what `tact models pull` accepts:
//
//	NAME                     a catalog name (tact models catalog)
//	https://HOST/PATH.gguf   a URL, fetched as given
//	hf.co/REPO/FILE          a file on the hub (also huggingface.co/..., hf://...)
//	hf.co/REPO[:QUANT]       the repository's file of that quantization (default Q4_K_M)
//	REPO:QUANT               the same, e.g. Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M
//
// REPO is OWNER/NAME. It checks the form only; errors wrap ErrInvalid.
func ParseRef(s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, &pullError{msg: fmt.Sprintf("pull %q: %s", SafeURL(s), why), kind: ErrInvalid}
	}
	if s != strings.TrimSpace(s) || s == "" {
		return bad("not an http(s) URL, hf.co/REPO/FILE, REPO:QUANT or a catalog name")
	}
	for _, prefix := range []string{"hf://", "hf.co/", "huggingface.co/"} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			return parseHubPath(rest, bad)
		}
	}
	if strings.Contains(s, "://") {
		return Ref{Kind: RefURL, URL: s}, nil
	}
	if repo, quant, ok := strings.Cut(s, ":"); ok && strings.Contains(repo, "/") {
		if err := checkRepo(repo); err != "" {
			return bad(err)
		}
		if !quantPart.MatchString(quant) {
			return bad(fmt.Sprintf("quantization %q: want letters, digits, '_', '-' or '.', e.g. Q4_K_M", quant))
		}
		return Ref{Kind: RefQuant, Repo: repo, Quant: quant}, nil
	}
	if e, ok := LookupCatalog(s); ok {
		return Ref{Kind: RefCatalog, Entry: &e}, nil
	}
	if !strings.ContainsAny(s, "/:") && repoPart.MatchString(s) {
		return bad(fmt.Sprintf("not a catalog name (known: %s; see tact models catalog)", strings.Join(CatalogNames(), ", ")))
	}
	return bad("not an http(s) URL, hf.co/REPO/FILE, REPO:QUANT or a catalog name (tact models catalog lists them)")
}

// parseHubPath parses what follows hf.co/: OWNER/NAME[:QUANT] or OWNER/NAME/FILE.
func parseHubPath(rest string, bad func(string) (Ref, error)) (Ref, error) {
	if strings.ContainsAny(rest, "?#\\") {
		return bad("a hub reference has no query, fragment or backslash")
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return bad("want hf.co/OWNER/NAME/FILE or hf.co/OWNER/NAME:QUANT")
	}
	if len(parts) == 2 {
		repo, quant, hasQuant := strings.Cut(rest, ":")
		if err := checkRepo(repo); err != "" {
			return bad(err)
		}
		if !hasQuant {
			quant = DefaultQuant
		}
		if !quantPart.MatchString(quant) {
			return bad(fmt.Sprintf("quantization %q: want letters, digits, '_', '-' or '.', e.g. Q4_K_M", quant))
		}
		return Ref{Kind: RefQuant, Repo: repo, Quant: quant}, nil
	}
	repo, file := parts[0]+"/"+parts[1], parts[2]
	if err := checkRepo(repo); err != "" {
		return bad(err)
	}
	// Accept the hub's own page and download paths too: hf.co/REPO/resolve/REV/FILE.
	revision := ""
	for _, kind := range []string{"resolve/", "blob/"} {
		if after, ok := strings.CutPrefix(file, kind); ok {
			if rev, f, ok := strings.Cut(after, "/"); ok && rev != "" {
				revision, file = rev, f
			}
			break
		}
	}
	if revision != "" && !repoPart.MatchString(revision) {
		return bad(fmt.Sprintf("revision %q: want a branch, tag or commit", revision))
	}
	for _, seg := range strings.Split(file, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, isControl) {
			return bad(fmt.Sprintf("file %q: want a path inside the repository", file))
		}
	}
	if strings.ContainsRune(file, ':') {
		return bad(fmt.Sprintf("file %q: use hf.co/REPO/FILE or REPO:QUANT, not both", file))
	}
	return Ref{Kind: RefFile, Repo: repo, File: file, Revision: revision}, nil
}

// checkRepo checks OWNER/NAME; it returns the problem, or "".
func checkRepo(repo string) string {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !repoPart.MatchString(owner) || !repoPart.MatchString(name) ||
		strings.Contains(repo, "..") || strings.Contains(repo, "--") {
		return fmt.Sprintf("repository %q: want OWNER/NAME", repo)
	}
	return ""
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
