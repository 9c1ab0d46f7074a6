package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Pull errors callers may want to tell apart.
var (
	// ErrInvalid marks a bad URL, name or checksum argument.
	ErrInvalid = errors.New("invalid pull argument")
	// ErrExists: the model is already installed and Force was not set.
	ErrExists = errors.New("model already exists")
	// ErrChecksum: the download does not match the expected SHA-256.
	ErrChecksum = errors.New("checksum mismatch")
)

// PartialExt is appended to a model's file name while it downloads.
const PartialExt = ".partial"

// PullOptions configures Pull.
type PullOptions struct {
	URL    string
	Dir    string // models directory; created if missing
	Name   string // model name; default: the URL's file name without .gguf
	SHA256 string // expected hex digest of the whole file ("sha256:" prefix allowed); "" skips the check
	// Progress receives a progress bar (meant for a terminal); nil: none.
	Progress   io.Writer
	HTTPClient *http.Client // nil: a client without timeout (ctx bounds the pull)
	Force      bool         // replace an installed model of the same name
}

type pullError struct {
	msg  string
	kind error
	err  error
}

func (e *pullError) Error() string { return e.msg }
func (e *pullError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.kind, e.err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Pull downloads a GGUF model into opts.Dir as NAME.gguf and returns its
// path. It writes to NAME.gguf.partial first and resumes that file with a
// Range request when it exists (starting over if the server ignores the
// range), verifies the SHA-256 when one is given, checks the result is a
// readable GGUF file, fsyncs it and renames it into place atomically. An
// interrupted transfer keeps the partial file for the next Pull to resume; a
// checksum mismatch or a file that is not a model removes it.
func Pull(ctx context.Context, opts PullOptions) (string, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &pullError{msg: fmt.Sprintf("pull %q: not an http(s) URL", opts.URL), kind: ErrInvalid}
	}
	name := opts.Name
	if name == "" {
		name = path.Base(u.Path)
	}
	name = strings.TrimSuffix(name, Ext)
	if err := checkName(name); err != nil {
		return "", &pullError{msg: fmt.Sprintf("pull %s: %v; give one with --name", opts.URL, err), kind: ErrInvalid}
	}
	want := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(opts.SHA256)), "sha256:")
	if want != "" {
		if b, err := hex.DecodeString(want); err != nil || len(b) != sha256.Size {
			return "", &pullError{msg: fmt.Sprintf("pull %s: --sha256 %q is not 64 hex digits", opts.URL, opts.SHA256), kind: ErrInvalid}
		}
	}
	if opts.Dir == "" {
		return "", &pullError{msg: fmt.Sprintf("pull %s: no models directory", opts.URL), kind: ErrInvalid}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return "", fmt.Errorf("pull %s: models directory: %w", opts.URL, err)
	}
	final := filepath.Join(opts.Dir, name+Ext)
	if _, err := os.Stat(final); err == nil && !opts.Force {
		return "", &pullError{msg: fmt.Sprintf("pull %s: model %s already exists at %s; use --force to replace it", opts.URL, name, final), kind: ErrExists}
	}
	partial := final + PartialExt

	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	sum, err := download(ctx, client, opts.URL, partial, name, opts.Progress)
	if err != nil {
		return "", err
	}
	if want != "" && sum != want {
		os.Remove(partial)
		return "", &pullError{kind: ErrChecksum,
			msg: fmt.Sprintf("pull %s: sha256 mismatch: got %s, want %s; the download was removed", opts.URL, sum, want)}
	}
	if _, err := Inspect(partial); err != nil {
		// A resumed download cannot fix a file that is not a model (an HTML
		// error page, say), so do not keep it around.
		os.Remove(partial)
		hint := ""
		if strings.Contains(u.Host, "huggingface.co") && strings.Contains(u.Path, "/blob/") {
			hint = " (Hugging Face serves files under /resolve/, not /blob/)"
		}
		return "", &pullError{msg: fmt.Sprintf("pull %s: the download is not a usable model%s (%v); it was removed", opts.URL, hint, err), kind: ErrBadModel, err: err}
	}
	if err := os.Rename(partial, final); err != nil {
		return "", fmt.Errorf("pull %s: install: %w", opts.URL, err)
	}
	syncDir(opts.Dir)
	return final, nil
}

func checkName(name string) error {
	switch {
	case name == "" || name == "." || name == ".." || name == "/":
		return errors.New("cannot tell the model name from the URL")
	case strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0):
		return fmt.Errorf("model name %q contains a path separator", name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("model name %q starts with a dot", name)
	}
	return nil
}

// syncDir makes the rename durable; failure only weakens crash safety.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// download fetches url into partial, resuming it when it already holds
// bytes, and returns the hex SHA-256 of the whole file.
func download(ctx context.Context, client *http.Client, rawURL, partial, name string, progress io.Writer) (_ string, err error) {
	f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", rawURL, err)
	}
	defer f.Close()
	defer func() {
		// A failed attempt that got no byte (say a 404) leaves nothing behind.
		if st, serr := os.Stat(partial); err != nil && serr == nil && st.Size() == 0 {
			os.Remove(partial)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", rawURL, err)
	}
	offset := st.Size()

	h := sha256.New()
	if offset > 0 {
		// Hash what is already there so the final digest covers the whole file.
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, offset)); err != nil {
			return "", fmt.Errorf("pull %s: read %s: %w", rawURL, partial, err)
		}
	}

	resp, err := get(ctx, client, rawURL, offset)
	if err != nil {
		return "", err
	}
	defer func() { resp.Body.Close() }()

	restart := func() error {
		resp.Body.Close()
		offset = 0
		h.Reset()
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("pull %s: %w", rawURL, err)
		}
		r, err := get(ctx, client, rawURL, 0)
		if err != nil {
			return err
		}
		resp = r
		return nil
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != offset {
			if err := restart(); err != nil {
				return "", err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// Nothing after offset: the partial file may already be complete.
		if total, ok := contentRangeTotal(resp.Header.Get("Content-Range")); ok && total == offset {
			return hex.EncodeToString(h.Sum(nil)), f.Sync()
		}
		if err := restart(); err != nil {
			return "", err
		}
	case http.StatusOK:
		if offset > 0 { // the server ignored the Range header: start over
			if err := restart(); err != nil {
				return "", err
			}
		}
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return "", fmt.Errorf("pull %s: server answered %s", rawURL, resp.Status)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "", fmt.Errorf("pull %s: %w", rawURL, err)
	}

	total := int64(-1)
	if resp.ContentLength >= 0 {
		total = offset + resp.ContentLength
	}
	var w io.Writer = io.MultiWriter(f, h)
	var bar *progressbar.ProgressBar
	if progress != nil {
		bar = newBar(progress, total, name)
		bar.Set64(offset)
		w = io.MultiWriter(f, h, bar)
	}
	n, err := io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n < resp.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		if bar != nil {
			fmt.Fprintln(progress)
		}
		f.Sync() // keep what arrived for the next attempt
		return "", fmt.Errorf("pull %s: download interrupted after %s (%w); %s is kept, run the same command again to resume",
			rawURL, byteSize(offset+n), err, partial)
	}
	if bar != nil {
		bar.Finish()
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("pull %s: %w", rawURL, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func get(ctx context.Context, client *http.Client, rawURL string, offset int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, &pullError{msg: fmt.Sprintf("pull %s: %v", rawURL, err), kind: ErrInvalid}
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", rawURL, unwrapURLError(err))
	}
	return resp, nil
}

// unwrapURLError drops *url.Error's "Get URL:" prefix: messages already name the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// contentRangeStart parses "bytes START-END/TOTAL".
func contentRangeStart(v string) (int64, bool) {
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, false
	}
	start, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(start), 10, 64)
	return n, err == nil && n >= 0
}

// contentRangeTotal parses the TOTAL of "bytes */TOTAL" (or of a full range).
func contentRangeTotal(v string) (int64, bool) {
	_, total, ok := strings.Cut(v, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
	return n, err == nil && n >= 0
}

func newBar(w io.Writer, total int64, name string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetDescription(name),
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetWidth(10),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionFullWidth(),
	)
}

// byteSize formats n bytes for people: 512B, 1.5KB, 248MB, 4.1GB.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v < 10 {
		return fmt.Sprintf("%.1f%cB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.0f%cB", v, "KMGTPE"[exp])
}
