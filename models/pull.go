package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
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

	"github.com/tactcli/tact/internal/text"
)

// Pull errors callers may want to tell apart.
var (
	// ErrInvalid marks a bad URL, name or checksum argument.
	ErrInvalid = errors.New("invalid pull argument")
	// ErrExists: the model is already installed and Force was not set.
	ErrExists = errors.New("model already exists")
	// ErrChecksum: the download does not match the expected SHA-256.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrBusy: another pull of the same model name holds its lock.
	ErrBusy = errors.New("another pull of this model is running")
	// ErrStalled: no byte arrived for PullOptions.StallTimeout.
	ErrStalled = errors.New("download stalled")
)

// File names beside NAME.gguf while a pull runs or after one was interrupted.
const (
	// PartialExt is appended to a model's file name while it downloads.
	PartialExt = ".partial"
	// MetaExt is appended to the partial file's name for its resume record:
	// the (redacted) URL and the server's validator (ETag or Last-Modified).
	MetaExt = ".meta"
	// LockExt is appended to a model's file name for the pull lock.
	LockExt = ".lock"
)

// DefaultStallTimeout is how long a pull waits for the next byte (or for
// the server to answer) before it gives up and keeps the partial file.
const DefaultStallTimeout = 60 * time.Second

// PullOptions configures Pull.
type PullOptions struct {
	URL    string
	Dir    string // models directory; created if missing
	Name   string // model name; default: the URL's file name without .gguf
	SHA256 string // expected hex digest of the whole file ("sha256:" prefix allowed); "" skips the check
	// Progress receives a progress bar and notes such as a restart (meant
	// for a terminal); nil: none.
	Progress   io.Writer
	HTTPClient *http.Client // nil: a client without timeout (ctx and StallTimeout bound the pull)
	Force      bool         // replace an installed model of the same name
	// StallTimeout aborts the transfer when no byte arrives for this long
	// (connecting and waiting for the answer included); 0: DefaultStallTimeout.
	StallTimeout time.Duration
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

// Verification says how a pull's file was checked.
type Verification string

const (
	// Unverified: no digest was given and the server declared none.
	Unverified Verification = ""
	// VerifiedGiven: the file matched PullOptions.SHA256 (--sha256 or the
	// catalog's pinned digest).
	VerifiedGiven Verification = "sha256"
	// VerifiedDeclared: the file matched the SHA-256 the server declared
	// for it (X-Linked-Etag, as Hugging Face resolve URLs send).
	VerifiedDeclared Verification = "declared"
)

// PullResult is what PullModel installed and how it was checked.
type PullResult struct {
	Path     string
	SHA256   string // hex digest of the installed file
	Verified Verification
}

// Pull downloads a GGUF model into opts.Dir as NAME.gguf and returns its
// path (see PullModel).
func Pull(ctx context.Context, opts PullOptions) (string, error) {
	r, err := PullModel(ctx, opts)
	return r.Path, err
}

// PullModel downloads a GGUF model into opts.Dir as NAME.gguf.
//
// It holds an exclusive lock (NAME.gguf.lock) for the whole pull; a second
// pull of the same name fails at once with ErrBusy. It writes to
// NAME.gguf.partial and records the server's validator (a strong ETag, else
// Last-Modified) with the redacted URL in NAME.gguf.partial.meta. A later
// pull resumes the partial with Range and If-Range, so a server whose file
// changed answers with the whole new file and the download restarts from
// zero; a partial without a usable record restarts too. A transfer that
// receives nothing for StallTimeout, or whose ctx ends, keeps the partial for
// the next pull. The SHA-256 is checked when given, the result must be a
// readable GGUF file, and it is fsynced and renamed into place atomically; a
// checksum mismatch or a file that is not a model is removed.
//
// The digest checked is opts.SHA256 when given; else the SHA-256 the server
// declares for the file in an X-Linked-Etag header (on the answer or on a
// redirect leading to it), as Hugging Face does; else the result says
// Unverified, for the caller to report.
//
// Every error message shows the URL through SafeURL: credentials never
// appear in errors, progress or the files Pull writes.
func PullModel(ctx context.Context, opts PullOptions) (PullResult, error) {
	r, err := pull(ctx, opts)
	if err != nil {
		// net/http and url errors quote URLs (redirect targets too): redact
		// whatever any layer put in the message.
		return PullResult{}, &redactedError{msg: RedactURL(err.Error(), opts.URL), err: err}
	}
	return r, nil
}

// redactedError shows a redacted message and keeps the cause for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func pull(ctx context.Context, opts PullOptions) (PullResult, error) {
	shown := SafeURL(opts.URL)
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return PullResult{}, &pullError{msg: fmt.Sprintf("pull %q: not an http(s) URL", shown), kind: ErrInvalid}
	}
	name := opts.Name
	if name == "" {
		name = path.Base(u.Path)
	}
	name = strings.TrimSuffix(name, Ext)
	if err := checkName(name); err != nil {
		return PullResult{}, &pullError{msg: fmt.Sprintf("pull %s: %v; give one with --name", shown, err), kind: ErrInvalid}
	}
	want := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(opts.SHA256)), "sha256:")
	if want != "" {
		if b, err := hex.DecodeString(want); err != nil || len(b) != sha256.Size {
			return PullResult{}, &pullError{msg: fmt.Sprintf("pull %s: --sha256 %q is not 64 hex digits", shown, opts.SHA256), kind: ErrInvalid}
		}
	}
	if opts.StallTimeout < 0 {
		return PullResult{}, &pullError{msg: fmt.Sprintf("pull %s: stall timeout %s is negative", shown, opts.StallTimeout), kind: ErrInvalid}
	}
	if opts.Dir == "" {
		return PullResult{}, &pullError{msg: fmt.Sprintf("pull %s: no models directory", shown), kind: ErrInvalid}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return PullResult{}, fmt.Errorf("pull %s: models directory: %w", shown, err)
	}
	final := filepath.Join(opts.Dir, name+Ext)

	lock, err := lockFile(final + LockExt)
	if errors.Is(err, errLocked) {
		return PullResult{}, &pullError{kind: ErrBusy, msg: fmt.Sprintf("pull %s: another tact models pull of %s is running (it holds %s); wait for it to finish",
			shown, name, final+LockExt)}
	}
	if err != nil {
		return PullResult{}, fmt.Errorf("pull %s: %w", shown, err)
	}
	defer lock.release()

	if _, err := os.Lstat(final); err == nil && !opts.Force {
		return PullResult{}, &pullError{msg: fmt.Sprintf("pull %s: model %s already exists at %s; use --force to replace it", shown, name, final), kind: ErrExists}
	}
	partial := final + PartialExt

	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	stall := opts.StallTimeout
	if stall == 0 {
		stall = DefaultStallTimeout
	}
	t := &transfer{ctx: ctx, op: "pull", rawURL: opts.URL, shown: shown, partial: partial, meta: partial + MetaExt,
		name: name, progress: opts.Progress, stall: stall}
	t.client = t.watchRedirects(client)
	sum, err := t.run()
	if err != nil {
		return PullResult{}, err
	}
	discard := func() {
		os.Remove(partial)
		os.Remove(t.meta)
	}
	verified := Unverified
	switch {
	case want != "":
		if sum != want {
			discard()
			return PullResult{}, &pullError{kind: ErrChecksum,
				msg: fmt.Sprintf("pull %s: sha256 mismatch: got %s, want %s; the download was removed", shown, sum, want)}
		}
		verified = VerifiedGiven
	case t.declared != "":
		if sum != t.declared {
			discard()
			return PullResult{}, &pullError{kind: ErrChecksum,
				msg: fmt.Sprintf("pull %s: sha256 mismatch: got %s, the server declared %s (X-Linked-Etag); the download was removed", shown, sum, t.declared)}
		}
		verified = VerifiedDeclared
	}
	if _, err := Inspect(partial); err != nil {
		// A resumed download cannot fix a file that is not a model (an HTML
		// error page, say), so do not keep it around.
		discard()
		hint := ""
		if strings.Contains(u.Host, "huggingface.co") && strings.Contains(u.Path, "/blob/") {
			hint = " (Hugging Face serves files under /resolve/, not /blob/)"
		}
		return PullResult{}, &pullError{msg: fmt.Sprintf("pull %s: the download is not a usable model%s (%v); it was removed", shown, hint, err), kind: ErrBadModel, err: err}
	}
	if err := os.Rename(partial, final); err != nil {
		return PullResult{}, fmt.Errorf("pull %s: install: %w", shown, err)
	}
	os.Remove(t.meta)
	syncDir(opts.Dir)
	return PullResult{Path: final, SHA256: sum, Verified: verified}, nil
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

// transfer is one download of rawURL into partial.
type transfer struct {
	ctx      context.Context
	op       string // what the messages call it: "pull", "download"
	client   *http.Client
	rawURL   string // with credentials: only ever sent to the server
	shown    string // SafeURL(rawURL): for messages and the resume record
	partial  string
	meta     string
	name     string
	progress io.Writer
	stall    time.Duration

	f      *os.File
	h      hash.Hash
	offset int64
	// declared is the SHA-256 the server declared (X-Linked-Etag), the
	// first one seen along the redirects of any request; "" if none.
	declared string
}

// watchRedirects returns a copy of client that records a declared digest
// from every redirect answer, then follows the redirect as client would.
func (t *transfer) watchRedirects(client *http.Client) *http.Client {
	c := *client
	next := client.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.Response != nil {
			t.seeDeclared(req.Response.Header)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 { // net/http's default policy
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

func (t *transfer) seeDeclared(h http.Header) {
	if t.declared != "" {
		return
	}
	if sum, ok := DeclaredSHA256(h.Get("X-Linked-Etag")); ok {
		t.declared = sum
	}
}

// DeclaredSHA256 reads the SHA-256 in an X-Linked-Etag value: 64 hex
// digits, possibly quoted and marked weak (W/"..."). Anything else (a git
// SHA-1 of a small file, say) declares nothing.
func DeclaredSHA256(v string) (string, bool) {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	v = strings.ToLower(v)
	if b, err := hex.DecodeString(v); err != nil || len(b) != sha256.Size {
		return "", false
	}
	return v, true
}

// errStallCause cancels a request that received nothing for the stall timeout.
var errStallCause = errors.New("stall timeout")

// run fetches the file into t.partial, resuming it when its resume record
// allows, and returns the hex SHA-256 of the whole file.
func (t *transfer) run() (_ string, err error) {
	f, st, err := openRegular(t.partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", t.op, t.shown, err)
	}
	t.f = f
	defer f.Close()
	defer func() {
		// A failed attempt that got no byte (say a 404) leaves nothing behind.
		if st, serr := f.Stat(); err != nil && serr == nil && st.Size() == 0 {
			os.Remove(t.partial)
			os.Remove(t.meta)
		}
	}()
	t.h = sha256.New()
	t.offset = st.Size()

	validator := ""
	var stored partialMeta
	if t.offset > 0 {
		if m, ok := readMeta(t.meta); ok && m.URL == t.shown {
			stored, validator = m, m.validator()
		}
		if validator == "" {
			// Without a validator there is no telling whether the bytes we
			// have belong to the file the server has now.
			t.note("%s: no resume record for %s; starting over", t.name, t.partial)
			if err := t.truncate(); err != nil {
				return "", err
			}
		}
	}
	if t.offset > 0 {
		// Hash what is already there so the final digest covers the whole file.
		if _, err := io.Copy(t.h, io.NewSectionReader(f, 0, t.offset)); err != nil {
			return "", fmt.Errorf("%s %s: read %s: %w", t.op, t.shown, t.partial, err)
		}
	}

	req, err := t.get(t.offset, validator)
	if err != nil {
		return "", err
	}
	defer func() { req.close() }()

	restart := func(why string) error {
		req.close()
		t.note("%s: %s; starting over", t.name, why)
		if err := t.truncate(); err != nil {
			return err
		}
		r, err := t.get(0, "")
		if err != nil {
			return err
		}
		req = r
		return nil
	}
	resp := req.resp
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != t.offset {
			if err := restart("the server sent another range than asked for"); err != nil {
				return "", err
			}
		} else if changed(stored, metaFrom(t.shown, resp.Header)) {
			// A server that honours Range but not If-Range: its own
			// validator still shows the file changed.
			if err := restart("the file changed on the server"); err != nil {
				return "", err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// Nothing after offset, and If-Range held: the partial file may
		// already be complete.
		if total, ok := contentRangeTotal(resp.Header.Get("Content-Range")); ok && total == t.offset && t.offset > 0 {
			return hex.EncodeToString(t.h.Sum(nil)), f.Sync()
		}
		if err := restart("the server cannot resume " + t.partial); err != nil {
			return "", err
		}
	case http.StatusOK:
		if t.offset > 0 {
			// If-Range failed (the file changed) or the server ignores
			// ranges: this answer is the whole file, so start over with it.
			t.note("%s: the server sent the whole file (it changed, or cannot resume)", t.name)
			if err := t.truncate(); err != nil {
				return "", err
			}
		}
	}
	resp = req.resp
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return "", fmt.Errorf("%s %s: server answered %s", t.op, t.shown, resp.Status)
	}
	if t.offset == 0 {
		// A fresh start: record the validator before the first byte lands.
		if err := writeMeta(t.meta, metaFrom(t.shown, resp.Header)); err != nil {
			return "", fmt.Errorf("%s %s: %w", t.op, t.shown, err)
		}
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return "", fmt.Errorf("%s %s: %w", t.op, t.shown, err)
	}

	total := int64(-1)
	if resp.ContentLength >= 0 {
		total = t.offset + resp.ContentLength
	}
	var w io.Writer = io.MultiWriter(f, t.h)
	var bar *progressbar.ProgressBar
	if t.progress != nil {
		bar = newBar(t.progress, total, t.name)
		bar.Set64(t.offset)
		w = io.MultiWriter(f, t.h, bar)
	}
	n, err := io.Copy(w, req)
	if err == nil && resp.ContentLength >= 0 && n < resp.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		if bar != nil {
			fmt.Fprintln(t.progress)
		}
		f.Sync() // keep what arrived for the next attempt
		return "", t.failure(req, err, fmt.Sprintf("after %s", byteSize(t.offset+n)))
	}
	if bar != nil {
		bar.Finish()
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("%s %s: %w", t.op, t.shown, err)
	}
	return hex.EncodeToString(t.h.Sum(nil)), nil
}

// failure explains why a request or transfer ended early; the partial file
// stays for the next pull. An interruption wraps ctx's error (so callers see
// context.Canceled), a stall wraps ErrStalled.
func (t *transfer) failure(req *request, err error, progress string) error {
	keep := ""
	if st, serr := t.f.Stat(); serr == nil && st.Size() > 0 {
		keep = fmt.Sprintf("; %s is kept, run the same command again to resume", t.partial)
	}
	switch {
	case t.ctx.Err() != nil:
		return &pullError{msg: fmt.Sprintf("%s %s: interrupted %s%s", t.op, t.shown, progress, keep), kind: t.ctx.Err()}
	case req != nil && context.Cause(req.ctx) == errStallCause:
		return &pullError{msg: fmt.Sprintf("%s %s: no data for %s %s (stall timeout)%s", t.op, t.shown, t.stall, progress, keep), kind: ErrStalled}
	}
	if req == nil || req.resp == nil { // the request itself failed
		return fmt.Errorf("%s %s: %w%s", t.op, t.shown, unwrapURLError(err), keep)
	}
	return fmt.Errorf("%s %s: download interrupted %s (%w)%s", t.op, t.shown, progress, unwrapURLError(err), keep)
}

func (t *transfer) truncate() error {
	t.offset = 0
	t.h.Reset()
	if err := t.f.Truncate(0); err != nil {
		return fmt.Errorf("%s %s: %w", t.op, t.shown, err)
	}
	os.Remove(t.meta)
	return nil
}

func (t *transfer) note(format string, a ...any) {
	if t.progress != nil {
		fmt.Fprintf(t.progress, format+"\n", a...)
	}
}

// request is one GET whose context is cancelled when no byte arrives for
// the stall timeout; reading it resets the timer.
type request struct {
	resp   *http.Response
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	stall  time.Duration
}

func (r *request) Read(p []byte) (int, error) {
	n, err := r.resp.Body.Read(p)
	if n > 0 {
		r.timer.Reset(r.stall)
	}
	return n, err
}

func (r *request) close() {
	r.timer.Stop()
	if r.resp != nil {
		r.resp.Body.Close()
	}
	r.cancel(nil)
}

// get asks for the file from offset; with a validator the range is
// conditional (If-Range): a server whose file changed sends all of it (200).
func (t *transfer) get(offset int64, validator string) (*request, error) {
	ctx, cancel := context.WithCancelCause(t.ctx)
	r := &request{ctx: ctx, cancel: cancel, stall: t.stall}
	r.timer = time.AfterFunc(t.stall, func() { cancel(errStallCause) })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.rawURL, nil)
	if err != nil {
		r.close()
		return nil, &pullError{msg: fmt.Sprintf("%s %s: %v", t.op, t.shown, err), kind: ErrInvalid}
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
		if validator != "" {
			req.Header.Set("If-Range", validator)
		}
	}
	resp, err := t.client.Do(req)
	if err != nil {
		err = t.failure(r, err, "before the server answered")
		r.close()
		return nil, err
	}
	t.seeDeclared(resp.Header)
	r.resp = resp
	return r, nil
}

// unwrapURLError drops *url.Error's "Get URL:" prefix: messages already name the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// partialMeta is the resume record beside a partial download.
type partialMeta struct {
	URL          string `json:"url"`                     // SafeURL of the source: no credentials
	ETag         string `json:"etag,omitempty"`          // strong ETag, quoted
	LastModified string `json:"last_modified,omitempty"` // HTTP date
}

// validator is what If-Range carries: the ETag, else the date.
func (m partialMeta) validator() string {
	if m.ETag != "" {
		return m.ETag
	}
	return m.LastModified
}

func metaFrom(shown string, h http.Header) partialMeta {
	m := partialMeta{URL: shown}
	m.ETag, _ = strongETag(h.Get("ETag"))
	m.LastModified, _ = httpDate(h.Get("Last-Modified"))
	return m
}

// changed reports whether a range answer's validators differ from the
// recorded ones (a validator the answer lacks proves nothing).
func changed(stored, now partialMeta) bool {
	if stored.ETag != "" && now.ETag != "" {
		return stored.ETag != now.ETag
	}
	return stored.LastModified != "" && now.LastModified != "" && stored.LastModified != now.LastModified
}

// strongETag accepts a strong entity tag (RFC 9110 8.8.3: a quoted string of
// etagc characters). Weak tags (W/"...") cannot validate a range.
func strongETag(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		if c == '"' || c < 0x21 || c == 0x7f {
			return "", false
		}
	}
	return v, true
}

// httpDate accepts an HTTP date and returns it in the preferred IMF-fixdate form.
func httpDate(v string) (string, bool) {
	if strings.TrimSpace(v) == "" {
		return "", false
	}
	tm, err := http.ParseTime(strings.TrimSpace(v))
	if err != nil {
		return "", false
	}
	return tm.UTC().Format(http.TimeFormat), true
}

// readMeta reads a resume record; anything unreadable counts as none.
func readMeta(path string) (partialMeta, bool) {
	f, _, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return partialMeta{}, false
	}
	defer f.Close()
	var m partialMeta
	if err := json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&m); err != nil {
		return partialMeta{}, false
	}
	// The file is outside input: keep only well-formed validators, so nothing
	// odd is ever sent in a header.
	m.ETag, _ = strongETag(m.ETag)
	m.LastModified, _ = httpDate(m.LastModified)
	return m, true
}

// writeMeta replaces the resume record atomically.
func writeMeta(path string, m partialMeta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
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
func byteSize(n int64) string { return text.DecimalSize(n) }
