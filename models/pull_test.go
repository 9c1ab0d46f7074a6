package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"
)

// modelBytes is a valid GGUF file of about 200KB.
func modelBytes(t *testing.T) []byte {
	t.Helper()
	p := writeGGUF(t, t.TempDir(), "src.gguf", testModel{arch: "llama", ctx: 512,
		extra: ggml.KV{"general.description": strings.Repeat("weights ", 25000)}})
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serverETag is the strong ETag modelServer sends with every answer.
const serverETag = `"v1"`

// modelServer serves content at /m/tiny.gguf with Range and If-Range support
// (via http.ServeContent), sends ETag serverETag on every answer, and records
// the Range and If-Range headers of every request.
type modelServer struct {
	*httptest.Server
	mu       sync.Mutex
	ranges   []string
	ifRanges []string
}

func newModelServer(t *testing.T, content []byte, handler func(w http.ResponseWriter, r *http.Request) bool) *modelServer {
	s := &modelServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		s.ifRanges = append(s.ifRanges, r.Header.Get("If-Range"))
		s.mu.Unlock()
		w.Header().Set("ETag", serverETag)
		if handler != nil && handler(w, r) {
			return
		}
		if r.URL.Path != "/m/tiny.gguf" {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "tiny.gguf", time.Time{}, bytes.NewReader(content))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *modelServer) Ranges() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func (s *modelServer) IfRanges() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ifRanges...)
}

// seedPartial leaves dir/tiny.gguf.partial holding data and, when meta is not
// nil, its resume record, as an interrupted pull of url would.
func seedPartial(t *testing.T, dir string, data []byte, meta *partialMeta) {
	t.Helper()
	p := filepath.Join(dir, "tiny.gguf"+PartialExt)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if meta != nil {
		if err := writeMeta(p+MetaExt, *meta); err != nil {
			t.Fatal(err)
		}
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func assertInstalled(t *testing.T, got string, dir string, want []byte) {
	t.Helper()
	if got != filepath.Join(dir, "tiny.gguf") {
		t.Errorf("path = %q", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tiny.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("installed file differs from the served one (%d vs %d bytes)", len(b), len(want))
	}
	if _, err := os.Stat(filepath.Join(dir, "tiny.gguf.partial")); !os.IsNotExist(err) {
		t.Errorf("partial file left behind: %v", err)
	}
}

func TestPullFull(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, nil)
	dir := filepath.Join(t.TempDir(), "models") // created by Pull
	var progress bytes.Buffer
	got, err := Pull(context.Background(), PullOptions{URL: srv.URL + "/m/tiny.gguf", Dir: dir, SHA256: "SHA256:" + strings.ToUpper(sha(content)), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r := srv.Ranges(); len(r) != 1 || r[0] != "" {
		t.Errorf("requests' Range headers = %q, want one plain GET", r)
	}
	if !strings.Contains(progress.String(), "tiny") {
		t.Errorf("progress output = %q", progress.String())
	}

	// Installed already: refuse, then replace with Force.
	_, err = Pull(context.Background(), PullOptions{URL: srv.URL + "/m/tiny.gguf", Dir: dir})
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second pull: err = %v, want ErrExists", err)
	}
	if _, err := Pull(context.Background(), PullOptions{URL: srv.URL + "/m/tiny.gguf", Dir: dir, Force: true}); err != nil {
		t.Errorf("forced pull: %v", err)
	}
}

func TestPullResume(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, nil)
	dir := t.TempDir()
	half := len(content) / 2
	url := srv.URL + "/m/tiny.gguf"
	seedPartial(t, dir, content[:half], &partialMeta{URL: url, ETag: serverETag})
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content)})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r := srv.Ranges(); len(r) != 1 || r[0] != "bytes="+strconv.Itoa(half)+"-" {
		t.Errorf("Range headers = %q, want [bytes=%d-]", r, half)
	}
	if ir := srv.IfRanges(); len(ir) != 1 || ir[0] != serverETag {
		t.Errorf("If-Range headers = %q, want [%s]", ir, serverETag)
	}
	assertNoLeftovers(t, dir)
}

// assertNoLeftovers: a finished pull leaves only NAME.gguf behind.
func assertNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "tiny.gguf" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestPullResumeLastModified: without an ETag, Last-Modified is the
// validator If-Range carries.
func TestPullResumeLastModified(t *testing.T) {
	content := modelBytes(t)
	mod := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Del("ETag")
		http.ServeContent(w, r, "tiny.gguf", mod, bytes.NewReader(content))
		return true
	})
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	// The record an interrupted pull from this server leaves.
	seedPartial(t, dir, content[:1000], &partialMeta{URL: url, LastModified: mod.Format(http.TimeFormat)})
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content)})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r, ir := srv.Ranges(), srv.IfRanges(); len(r) != 1 || r[0] != "bytes=1000-" || ir[0] != "Tue, 04 Mar 2025 05:06:07 GMT" {
		t.Errorf("Range = %q, If-Range = %q; want one conditional range request", r, ir)
	}
}

// TestPullChangedFileRestarts: the server's file changed since the partial
// was written, so If-Range fails, the server sends the whole new file (200)
// and the pull starts over with it instead of splicing two files together.
func TestPullChangedFileRestarts(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, nil)
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	old := bytes.Repeat([]byte{0xAA}, 5000)
	seedPartial(t, dir, old, &partialMeta{URL: url, ETag: `"v0"`})
	var progress bytes.Buffer
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r, ir := srv.Ranges(), srv.IfRanges(); len(r) != 1 || r[0] != "bytes=5000-" || ir[0] != `"v0"` {
		t.Errorf("Range = %q, If-Range = %q; want one request with bytes=5000- and the old ETag", r, ir)
	}
	if !strings.Contains(progress.String(), "the server sent the whole file") {
		t.Errorf("progress does not explain the restart: %q", progress.String())
	}
	assertNoLeftovers(t, dir)
}

// TestPullWithoutValidatorRestarts: a partial with no usable resume record
// (none, unreadable, another URL, a weak ETag only) is never resumed.
func TestPullWithoutValidatorRestarts(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, nil)
	url := srv.URL + "/m/tiny.gguf"
	for _, tc := range []struct {
		name string
		meta *partialMeta
		raw  string // written as the record instead of meta
	}{
		{name: "no record"},
		{name: "garbage record", raw: "{not json"},
		{name: "other URL", meta: &partialMeta{URL: srv.URL + "/m/other.gguf", ETag: serverETag}},
		{name: "weak ETag", raw: `{"url":"` + url + `","etag":"W/\"v1\""}`},
		{name: "header injection", raw: `{"url":"` + url + `","etag":"\"v1\"\r\nX-Evil: 1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			seedPartial(t, dir, bytes.Repeat([]byte{0xAA}, 1000), tc.meta)
			if tc.raw != "" {
				os.WriteFile(filepath.Join(dir, "tiny.gguf"+PartialExt+MetaExt), []byte(tc.raw), 0o644)
			}
			before := len(srv.Ranges())
			got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content)})
			if err != nil {
				t.Fatal(err)
			}
			assertInstalled(t, got, dir, content)
			if r := srv.Ranges()[before:]; len(r) != 1 || r[0] != "" {
				t.Errorf("Range headers = %q, want one plain GET from zero", r)
			}
		})
	}
}

func TestPullCompletePartial(t *testing.T) {
	// The partial already holds the whole file: the server answers 416 and
	// nothing is downloaded again.
	content := modelBytes(t)
	srv := newModelServer(t, content, nil)
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	seedPartial(t, dir, content, &partialMeta{URL: url, ETag: serverETag})
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content)})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r := srv.Ranges(); len(r) != 1 {
		t.Errorf("requests = %q, want one", r)
	}
}

func TestPullServerIgnoresRange(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(content)))
		w.Write(content) // always 200 with the whole file
		return true
	})
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	// A partial with wrong bytes: a restart must not keep any of it.
	seedPartial(t, dir, bytes.Repeat([]byte{0xAA}, 1000), &partialMeta{URL: url, ETag: serverETag})
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content)})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	// The 200 answer is the whole file: used as is, not asked for again.
	if r := srv.Ranges(); len(r) != 1 || r[0] != "bytes=1000-" {
		t.Errorf("Range headers = %q, want one request asking for bytes=1000-", r)
	}
}

func TestPullInterrupted(t *testing.T) {
	content := modelBytes(t)
	cut := len(content) / 3
	var fail sync.Once
	failing := true
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		handled := false
		fail.Do(func() {
			// Promise the whole file, send a third, then drop the connection.
			w.Header().Set("Content-Length", strconv.Itoa(len(content)))
			w.WriteHeader(http.StatusOK)
			w.Write(content[:cut])
			w.(http.Flusher).Flush()
			handled = true
		})
		if handled && failing {
			panic(http.ErrAbortHandler)
		}
		return false
	})
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	_, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("err = %v, want an interrupted-download error", err)
	}
	partial, err := os.ReadFile(filepath.Join(dir, "tiny.gguf.partial"))
	if err != nil || len(partial) == 0 || !bytes.Equal(partial, content[:len(partial)]) {
		t.Fatalf("partial file: %d bytes, %v; want a prefix of the content kept", len(partial), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tiny.gguf")); !os.IsNotExist(err) {
		t.Error("model installed after a failed download")
	}
	// The next pull resumes where the first stopped.
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content)})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r, ir := srv.Ranges(), srv.IfRanges(); len(r) != 2 || r[1] != "bytes="+strconv.Itoa(len(partial))+"-" || ir[1] != serverETag {
		t.Errorf("Range headers = %q, If-Range = %q", r, ir)
	}
}

func TestPullWrongChecksum(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, nil)
	dir := t.TempDir()
	_, err := Pull(context.Background(), PullOptions{URL: srv.URL + "/m/tiny.gguf", Dir: dir, SHA256: strings.Repeat("ab", 32)})
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), sha(content)) {
		t.Fatalf("err = %v, want ErrChecksum naming the actual digest", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("files left after a checksum mismatch: %v", entries)
	}
}

func TestPullErrors(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/page.gguf" {
			w.Write([]byte("<html>sign in to download</html>"))
			return true
		}
		return false
	})
	tests := []struct {
		name string
		opts PullOptions
		is   error
		want string
	}{
		{"not http", PullOptions{URL: "ftp://example.com/x.gguf"}, ErrInvalid, "not an http(s) URL"},
		{"no name", PullOptions{URL: srv.URL + "/"}, ErrInvalid, "--name"},
		{"bad name", PullOptions{URL: srv.URL + "/m/tiny.gguf", Name: "../evil"}, ErrInvalid, "path separator"},
		{"bad sha", PullOptions{URL: srv.URL + "/m/tiny.gguf", SHA256: "xyz"}, ErrInvalid, "64 hex digits"},
		{"404", PullOptions{URL: srv.URL + "/missing.gguf"}, nil, "404 Not Found"},
		{"not a model", PullOptions{URL: srv.URL + "/page.gguf"}, ErrBadModel, "not a usable model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.opts.Dir = dir
			_, err := Pull(context.Background(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.is, tc.want)
			}
			if tc.name == "not a model" || tc.name == "404" {
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("files left: %v", entries)
				}
			}
		})
	}
}

func TestPullCanceled(t *testing.T) {
	content := modelBytes(t)
	release := make(chan struct{})
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(content)))
		w.Write(content[:100])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	dir := t.TempDir()
	_, err := Pull(ctx, PullOptions{URL: srv.URL + "/m/tiny.gguf", Dir: dir})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tiny.gguf.partial")); len(b) != 100 {
		t.Errorf("partial holds %d bytes, want the 100 received", len(b))
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 999: "999B", 1500: "1.5KB", 248_000_000: "248MB", 4_100_000_000: "4.1GB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
