package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
)

// TestPullStallTimeout: a server that stops sending (or never answers) is
// given up on after StallTimeout; the bytes that arrived are kept with their
// resume record, and the next pull resumes them with If-Range.
func TestPullStallTimeout(t *testing.T) {
	content := modelBytes(t)
	cut := len(content) / 3
	stalling := true
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		if !stalling {
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(content)))
		w.WriteHeader(http.StatusOK)
		w.Write(content[:cut])
		w.(http.Flusher).Flush()
		select { // then nothing, until the client gives up
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	start := time.Now()
	_, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, StallTimeout: 300 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "no data for 300ms") || !strings.Contains(err.Error(), "is kept") {
		t.Fatalf("err = %v, want ErrStalled saying the partial is kept", err)
	}
	if took > 5*time.Second {
		t.Errorf("the stalled pull took %s to give up, want about 300ms", took)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tiny.gguf"+PartialExt)); !bytes.Equal(b, content[:cut]) {
		t.Fatalf("partial holds %d bytes, want the %d received", len(b), cut)
	}
	if m, ok := readMeta(filepath.Join(dir, "tiny.gguf"+PartialExt+MetaExt)); !ok || m.ETag != serverETag || m.URL != url {
		t.Fatalf("resume record = %+v, %v", m, ok)
	}

	stalling = false
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content), StallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r, ir := srv.Ranges(), srv.IfRanges(); len(r) != 2 || r[1] != "bytes="+strconv.Itoa(cut)+"-" || ir[1] != serverETag {
		t.Errorf("Range = %q, If-Range = %q; want the second pull to resume", r, ir)
	}
}

// TestPullStallBeforeAnswer: the stall timeout also covers a server that
// accepts the connection and never answers; nothing is left behind.
func TestPullStallBeforeAnswer(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newModelServer(t, nil, func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	dir := t.TempDir()
	_, err := Pull(context.Background(), PullOptions{URL: srv.URL + "/m/tiny.gguf", Dir: dir, StallTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "before the server answered") {
		t.Fatalf("err = %v, want ErrStalled before the answer", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
}

// TestPullLock: while one pull of a name runs, a second fails at once with
// ErrBusy and touches nothing; the lock goes with the first pull.
func TestPullLock(t *testing.T) {
	content := modelBytes(t)
	arrived := make(chan struct{})
	release := make(chan struct{})
	var first atomic.Bool
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		if first.CompareAndSwap(false, true) {
			close(arrived)
			<-release // hold the first pull here
		}
		return false
	})
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	firstErr := make(chan error, 1)
	go func() {
		_, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir})
		firstErr <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first pull never reached the server")
	}

	start := time.Now()
	_, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, Force: true})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "another tact models pull of tiny is running") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "tiny.gguf"+LockExt)) {
		t.Errorf("second pull: err = %v, want ErrBusy naming the lock file", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second pull waited %s, want an immediate failure", d)
	}
	// Another name is not blocked.
	if _, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, Name: "other"}); err != nil {
		t.Errorf("pull of another name: %v", err)
	}

	close(release)
	if err := <-firstErr; err != nil {
		t.Fatalf("first pull: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tiny.gguf"+LockExt)); !os.IsNotExist(err) {
		t.Errorf("lock file left behind: %v", err)
	}
	// A lock file left by a killed pull (no process holds it) does not block.
	os.WriteFile(filepath.Join(dir, "tiny.gguf"+LockExt), nil, 0o644)
	if _, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, Force: true}); err != nil {
		t.Errorf("pull over a stale lock file: %v", err)
	}
}

// TestPullNeverShowsCredentials: whatever goes wrong, no credential from the
// URL (userinfo, token or signature parameters, a redirect target's) appears
// in an error, the progress output or any file Pull writes.
func TestPullNeverShowsCredentials(t *testing.T) {
	content := modelBytes(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	secrets := []string{"hunter2pass", "TOKsecret1", "SIGsecret2", "CREDsecret3", "REDIRsecret4", "BADLOCsecret5"}
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/html.gguf":
			w.Write([]byte("<html>sign in</html>"))
		case "/redirect.gguf":
			http.Redirect(w, r, "/missing.gguf?token=REDIRsecret4", http.StatusFound)
		case "/badloc.gguf":
			w.Header().Set("Location", "http://u:BADLOCsecret5@%zz/x")
			w.WriteHeader(http.StatusFound)
		case "/loop.gguf":
			http.Redirect(w, r, "/loop.gguf?access_token=REDIRsecret4", http.StatusFound)
		case "/stall.gguf", "/cancel.gguf":
			w.Header().Set("Content-Length", strconv.Itoa(len(content)))
			w.Write(content[:100])
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			return false
		}
		return true
	})
	u, _ := url.Parse(srv.URL)
	withCreds := func(path string) string {
		return "http://alice:hunter2pass@" + u.Host + path + "?access_token=TOKsecret1&X-Amz-Signature=SIGsecret2&X-Amz-Credential=CREDsecret3&download=true"
	}
	refused := withCreds("/x.gguf")
	refused = strings.Replace(refused, u.Host, "127.0.0.1:1", 1)
	for _, tc := range []struct {
		name, url string
		sha       string
		cancel    bool
		wantErr   bool
	}{
		{name: "success", url: withCreds("/m/tiny.gguf")},
		{name: "404", url: withCreds("/missing.gguf"), wantErr: true},
		{name: "not a model", url: withCreds("/html.gguf"), wantErr: true},
		{name: "checksum", url: withCreds("/m/tiny.gguf"), sha: strings.Repeat("0", 64), wantErr: true},
		{name: "stall", url: withCreds("/stall.gguf"), wantErr: true},
		{name: "cancel", url: withCreds("/cancel.gguf"), cancel: true, wantErr: true},
		{name: "redirect", url: withCreds("/redirect.gguf"), wantErr: true},
		{name: "bad redirect", url: withCreds("/badloc.gguf"), wantErr: true},
		{name: "redirect loop", url: withCreds("/loop.gguf"), wantErr: true},
		{name: "connection refused", url: refused, wantErr: true},
		{name: "root path", url: withCreds("/"), wantErr: true},
		{name: "not http", url: "ftp://alice:hunter2pass@example.com/x.gguf?token=TOKsecret1", wantErr: true},
		{name: "unparsable", url: "http://alice:hunter2pass@exa mple.com/x.gguf?token=TOKsecret1", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			var progress bytes.Buffer
			_, err := Pull(ctx, PullOptions{URL: tc.url, Dir: dir, Name: "tiny", SHA256: tc.sha, Progress: &progress, StallTimeout: 300 * time.Millisecond})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			t.Logf("err: %v", err)
			shown := progress.String()
			if err != nil {
				shown += "\n" + err.Error()
				if !strings.Contains(err.Error(), "[REDACTED]") {
					t.Errorf("error does not show the redacted URL: %v", err)
				}
			}
			filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() && !strings.HasSuffix(p, ".gguf") {
					b, _ := os.ReadFile(p)
					shown += "\n" + p + ": " + string(b)
				}
				return nil
			})
			for _, s := range secrets {
				if strings.Contains(shown, s) {
					t.Errorf("credential %q shown:\n%s", s, shown)
				}
			}
		})
	}
}

func TestSafeURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://example.com/m/x.gguf", "https://example.com/m/x.gguf"},
		{"https://example.com/m/x.gguf?download=true", "https://example.com/m/x.gguf?download=true"},
		{"https://user:pass@example.com/x.gguf", "https://[REDACTED]@example.com/x.gguf"},
		{"https://ghp_abc123@example.com/x.gguf", "https://[REDACTED]@example.com/x.gguf"},
		{"https://u:p@ss@example.com:8443/x", "https://[REDACTED]@example.com:8443/x"},
		{"https://example.com/@scope/x.gguf", "https://example.com/@scope/x.gguf"},
		{"https://h/x?access_token=abc&download=1", "https://h/x?access_token=[REDACTED]&download=1"},
		{"https://h/x?token=abc", "https://h/x?token=[REDACTED]"},
		{"https://h/x?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F1&X-Amz-Signature=deadbeef&X-Amz-Security-Token=t",
			"https://h/x?X-Amz-Algorithm=AWS4&X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Security-Token=[REDACTED]"},
		{"https://acct.blob.core.windows.net/c/x.gguf?sv=2020&se=2030&sp=r&sig=abc%3D", "https://acct.blob.core.windows.net/c/x.gguf?sv=2020&se=2030&sp=r&sig=[REDACTED]"},
		{"https://h/x?Signature=s&Key-Pair-Id=k&Expires=1", "https://h/x?Signature=[REDACTED]&Key-Pair-Id=k&Expires=1"},
		{"https://h/x?api_key=k;password=p", "https://h/x?api_key=[REDACTED];password=[REDACTED]"},
		{"https://h/x?%74oken=abc", "https://h/x?%74oken=[REDACTED]"},
		{"https://h/x#access_token=abc&state=1", "https://h/x#access_token=[REDACTED]&state=1"},
		{"https://h/x?a=1#token=abc", "https://h/x?a=1#token=[REDACTED]"},
		{"http://u:pa/ss@h/x", "http://[REDACTED]@h/x"}, // does not parse: redact up to the last '@'
		{"user:pass@host/x", "[REDACTED]@host/x"},
		{"not a url", "not a url"},
		{"", ""},
	} {
		if got := SafeURL(tc.in); got != tc.want {
			t.Errorf("SafeURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactURLs(t *testing.T) {
	in := `Get "https://u:secretpw@h/x?token=tok1": stopped after 10 redirects; see http://h/y?sig=s2, or ftp://a:b@c/d`
	want := `Get "https://[REDACTED]@h/x?token=[REDACTED]": stopped after 10 redirects; see http://h/y?sig=[REDACTED], or ftp://[REDACTED]@c/d`
	if got := RedactURLs(in); got != want {
		t.Errorf("RedactURLs =\n%s\nwant\n%s", got, want)
	}
	// RedactURL also removes the known URL's credentials where RedactURLs
	// cannot see a URL (a space inside it), and keeps punctuation after it.
	raw := "https://bob:pass word@h/x?token=tok:en"
	in = "pull " + raw + ": EOF; parse \"" + raw + "\": invalid"
	want = "pull https://[REDACTED]@h/x?token=[REDACTED]: EOF; parse \"https://[REDACTED]@h/x?token=[REDACTED]\": invalid"
	if got := RedactURL(in, raw); got != want {
		t.Errorf("RedactURL =\n%s\nwant\n%s", got, want)
	}
	// An '@' in the path (an npm scoped package) is no userinfo.
	raw = "http://127.0.0.1:4873/@scope/pkg/-/pkg-1.0.0.tgz"
	if got := RedactURL("download "+raw+": connection refused", raw); got != "download "+raw+": connection refused" {
		t.Errorf("RedactURL of a scoped package's URL = %s", got)
	}
}

// FuzzSafeURL: a password and a token planted in URLs never show in
// SafeURL's result, in RedactURLs' (when the URL is whitespace-delimited
// text) or in RedactURL's (however the text quotes the URL); none panics, and
// SafeURL is idempotent on URLs that parse.
func FuzzSafeURL(f *testing.F) {
	for _, s := range []string{"https://h/x", "https://u:p@h/x?token=t", "http://[::1]:80/a?b=c#d", "", "@", "?=&;#", "a://b@c@d/e?f=g"} {
		f.Add(s, "pw0123", "tok456")
	}
	f.Add("x", "00000\f", "000000")
	f.Add("x", "pass word", "tok%20en")
	f.Fuzz(func(t *testing.T, raw, password, token string) {
		SafeURL(raw)
		RedactURLs(raw)
		RedactURL(raw, raw)
		if _, err := url.Parse(raw); err == nil {
			once := SafeURL(raw)
			if _, err := url.Parse(once); err == nil {
				if twice := SafeURL(once); twice != once {
					t.Errorf("SafeURL not idempotent: %q -> %q -> %q", raw, once, twice)
				}
			}
		}
		// Credentials as a user would paste them: without the characters
		// that end a userinfo or a parameter value.
		if len(password) < 3 || len(token) < 3 || strings.ContainsAny(password, "@/\\?#") || strings.ContainsAny(token, "&;#") ||
			strings.Contains(password, token) || strings.Contains(token, password) ||
			alnum(password) < 3 || alnum(token) < 3 {
			return
		}
		inText := !strings.ContainsFunc(password+token, func(r rune) bool {
			return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("\"'<>`", r)
		})
		for _, u := range []string{
			"https://alice:" + password + "@example.com/m/x.gguf?access_token=" + token,
			"https://" + password + "@example.com/x?X-Amz-Signature=" + token + "&a=b",
			"http://bob:" + password + "@h:1/p?a=b#sig=" + token,
		} {
			if strings.Count(u, password) != 1 || strings.Count(u, token) != 1 {
				continue
			}
			checks := map[string]string{
				"SafeURL":   SafeURL(u),
				"RedactURL": RedactURL(fmt.Sprintf("error: Get %q: EOF (%s)", u, u), u),
			}
			if inText {
				checks["RedactURLs"] = RedactURLs("error: Get " + u + ": EOF")
			}
			for fn, got := range checks {
				if strings.Contains(got, password) || strings.Contains(got, token) {
					t.Errorf("%s shows a credential (password %q, token %q): %q", fn, password, token, got)
				}
			}
		}
	})
}

// FuzzValidators: whatever a server sends as ETag or Last-Modified, what
// Pull would send back in If-Range is a well-formed validator or nothing.
func FuzzValidators(f *testing.F) {
	for _, s := range []string{`"v1"`, `W/"v1"`, `"a"b"`, "Tue, 04 Mar 2025 05:06:07 GMT", "Monday, 02-Jan-06 15:04:05 MST", "", `"` + "\r\n" + `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if e, ok := strongETag(v); ok {
			if len(e) < 2 || e[0] != '"' || e[len(e)-1] != '"' || strings.ContainsAny(e[1:len(e)-1], "\"\r\n\x00 ") {
				t.Errorf("strongETag(%q) = %q", v, e)
			}
		}
		if d, ok := httpDate(v); ok {
			if _, err := time.Parse(http.TimeFormat, d); err != nil {
				t.Errorf("httpDate(%q) = %q, not an IMF-fixdate", v, d)
			}
			if d2, ok := httpDate(d); !ok || d2 != d {
				t.Errorf("httpDate(%q) = %q, then %q", v, d, d2)
			}
		}
		h := http.Header{}
		h.Set("ETag", v)
		h.Set("Last-Modified", v)
		m := metaFrom("https://h/x", h)
		if val := m.validator(); strings.ContainsAny(val, "\r\n\x00") {
			t.Errorf("validator %q from %q", val, v)
		}
		contentRangeStart(v)
		contentRangeTotal(v)
	})
}

// TestPullServerIgnoringIfRange: a server that honours Range but ignores
// If-Range sends a range of its new file; its ETag gives the change away and
// the pull starts over instead of splicing two files.
func TestPullServerIgnoringIfRange(t *testing.T) {
	content := modelBytes(t)
	srv := newModelServer(t, content, func(w http.ResponseWriter, r *http.Request) bool {
		r.Header.Del("If-Range")
		http.ServeContent(w, r, "tiny.gguf", time.Time{}, bytes.NewReader(content))
		return true
	})
	dir := t.TempDir()
	url := srv.URL + "/m/tiny.gguf"
	seedPartial(t, dir, bytes.Repeat([]byte{0xAA}, 5000), &partialMeta{URL: url, ETag: `"v0"`})
	got, err := Pull(context.Background(), PullOptions{URL: url, Dir: dir, SHA256: sha(content)})
	if err != nil {
		t.Fatal(err)
	}
	assertInstalled(t, got, dir, content)
	if r := srv.Ranges(); len(r) != 2 || r[0] != "bytes=5000-" || r[1] != "" {
		t.Errorf("Range headers = %q, want a range request then a plain GET", r)
	}
}

// alnum counts letters and digits: a fuzzed "credential" of punctuation only
// can match the text around a redaction by chance.
func alnum(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}
