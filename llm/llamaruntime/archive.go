package llamaruntime

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Bounds on what one archive may unpack: the CUDA package's largest
// library is 159 MB, the whole package 190 MB.
const (
	maxEntrySize = 1 << 30
	maxTotalSize = 2 << 30
)

// integrity returns a file's npm integrity string (sha512-BASE64).
func integrity(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// identify names the pinned package whose integrity is sum, if any.
func identify(sum string) (Package, Variant, bool) {
	for v, p := range pinned {
		if p.Integrity == sum {
			return p, v, true
		}
	}
	if Source.Integrity == sum {
		return Source, Native, true
	}
	return Package{}, "", false
}

// entryProblem says why an archive entry is refused, or "" when it is a
// plain file or directory with a relative path inside the archive.
func entryProblem(h *tar.Header) string {
	name := h.Name
	switch {
	case name == "" || strings.ContainsRune(name, 0):
		return "an empty or NUL-bearing name"
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name):
		return "an absolute path"
	case strings.Contains(name, `\`):
		return "a backslash in its path"
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "a .. in its path"
		}
	}
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir:
		return ""
	case tar.TypeSymlink:
		return "a symbolic link (to " + h.Linkname + ")"
	case tar.TypeLink:
		return "a hard link (to " + h.Linkname + ")"
	case tar.TypeChar, tar.TypeBlock:
		return "a device"
	case tar.TypeFifo:
		return "a FIFO"
	default:
		return fmt.Sprintf("an entry of type %q", h.Typeflag)
	}
}

// wanted returns the file name an archive entry is unpacked as, or "" for
// an entry tact does not unpack. Only the package's shared libraries and
// its licence are: not node-llama-cpp's addon (llama-addon.node), its
// JavaScript, nor libllama-common.so (llama.cpp's C++ helpers, which only
// the addon links), nor a nested directory (the CUDA extension's fallback/).
func wanted(name string, p Package) string {
	if name == "package/LICENSE" {
		return "LICENSE"
	}
	rest, ok := strings.CutPrefix(name, p.Bins)
	if !ok || strings.Contains(rest, "/") || !isLibrary(rest) || rest == "libllama-common.so" {
		return ""
	}
	return rest
}

// unpack extracts from the tarball at path into dest (an empty directory)
// the entries want names (want returns "" for the others) and returns
// those names. Every entry is looked at, those it does not unpack too: one
// that is not a plain file or directory with a relative path refuses the
// whole archive (the caller removes dest).
func unpack(path string, want func(entry string) string, dest string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("%s: not a gzip-compressed tarball (%v)", path, err), Kind: ErrArchive, Err: err}
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var names []string
	seen := map[string]bool{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &Error{Msg: fmt.Sprintf("%s: truncated or corrupt tarball (%v)", path, err), Kind: ErrArchive, Err: err}
		}
		if why := entryProblem(h); why != "" {
			return nil, errorf(ErrArchive, "%s: entry %q is %s; tact unpacks only plain files inside the package, so nothing was installed", path, h.Name, why)
		}
		name := want(h.Name)
		if name == "" || h.Typeflag != tar.TypeReg {
			continue
		}
		if seen[name] {
			return nil, errorf(ErrArchive, "%s: %s appears twice; nothing was installed", path, h.Name)
		}
		seen[name] = true
		total += h.Size
		if h.Size > maxEntrySize || total > maxTotalSize {
			return nil, errorf(ErrArchive, "%s: %s is too large (%d bytes); nothing was installed", path, h.Name, h.Size)
		}
		if err := writeEntry(filepath.Join(dest, name), tr, h.Size); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, &Error{Msg: fmt.Sprintf("%s: truncated tarball (%s ends early); nothing was installed", path, h.Name), Kind: ErrArchive, Err: err}
			}
			return nil, fmt.Errorf("%s: unpack %s: %w", path, h.Name, err)
		}
		names = append(names, name)
	}
	// Read to the end of the gzip stream so a damaged tail (its CRC) is noticed.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, &Error{Msg: fmt.Sprintf("%s: truncated or corrupt tarball (%v)", path, err), Kind: ErrArchive, Err: err}
	}
	return names, nil
}

func writeEntry(path string, r io.Reader, size int64) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, r, size); err != nil {
		out.Close()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
