package models

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub stands in for the Hugging Face hub: GET /api/models/OWNER/NAME
// answers the repository's file list; GET /OWNER/NAME/resolve/REV/FILE
// redirects to /cdn/FILE with the X-Linked-Etag the test sets (as the hub
// does for LFS files), and /cdn/FILE serves the content with Range support.
type fakeHub struct {
	*httptest.Server
	mu       sync.Mutex
	repos    map[string][]string // "OWNER/NAME" -> files
	content  map[string][]byte   // file -> bytes
	declared string              // X-Linked-Etag value on the redirect; "" sends none
	onFinal  bool                // send X-Linked-Etag on the file's answer instead
	paths    []string            // request paths, in order
	ranges   []string            // Range headers of the requests for /cdn/ files
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{repos: map[string][]string{}, content: map[string][]byte{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

func (h *fakeHub) add(repo, file string, content []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[repo] = append(h.repos[repo], file)
	if content != nil {
		h.content[file] = content
	}
}

func (h *fakeHub) Paths() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...)
}

var resolvePath = regexp.MustCompile(`^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$`)

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paths = append(h.paths, r.URL.Path)
	if repo, ok := strings.CutPrefix(r.URL.Path, "/api/models/"); ok {
		files, ok := h.repos[repo]
		if !ok {
			http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
			return
		}
		var info struct {
			ID       string              `json:"id"`
			Siblings []map[string]string `json:"siblings"`
		}
		info.ID = repo
		for _, f := range files {
			info.Siblings = append(info.Siblings, map[string]string{"rfilename": f})
		}
		json.NewEncoder(w).Encode(info)
		return
	}
	if m := resolvePath.FindStringSubmatch(r.URL.Path); m != nil {
		if _, ok := h.content[m[3]]; !ok {
			http.NotFound(w, r)
			return
		}
		if h.declared != "" && !h.onFinal {
			w.Header().Set("X-Linked-Etag", h.declared)
		}
		http.Redirect(w, r, "/cdn/"+m[3], http.StatusFound)
		return
	}
	if file, ok := strings.CutPrefix(r.URL.Path, "/cdn/"); ok {
		h.ranges = append(h.ranges, r.Header.Get("Range"))
		c, ok := h.content[file]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if h.declared != "" && h.onFinal {
			w.Header().Set("X-Linked-Etag", h.declared)
		}
		w.Header().Set("ETag", `"cdn-v1"`)
		http.ServeContent(w, r, file, time.Time{}, bytes.NewReader(c))
		return
	}
	http.NotFound(w, r)
}

func TestCatalogIsWellFormed(t *testing.T) {
	entries := Catalog()
	if len(entries) < 5 {
		t.Fatalf("catalog has %d entries", len(entries))
	}
	seen := map[string]bool{}
	defaults := 0
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	commit := regexp.MustCompile(`^[0-9a-f]{40}$`)
	for _, e := range entries {
		if seen[strings.ToLower(e.Name)] {
			t.Errorf("%s: duplicate name", e.Name)
		}
		seen[strings.ToLower(e.Name)] = true
		if err := checkName(e.Name); err != nil || strings.ContainsAny(e.Name, ":/") {
			t.Errorf("%s: bad name: %v", e.Name, err)
		}
		if p := checkRepo(e.Repo); p != "" {
			t.Errorf("%s: %s", e.Name, p)
		}
		if !strings.HasSuffix(strings.ToLower(e.File), Ext) || strings.Contains(e.File, "/") {
			t.Errorf("%s: file %q is not a .gguf file name", e.Name, e.File)
		}
		if e.SHA256 != "" && !hex64.MatchString(e.SHA256) {
			t.Errorf("%s: sha256 %q is not 64 lower-case hex digits", e.Name, e.SHA256)
		}
		// A pinned digest needs a pinned revision: a re-upload on main
		// would otherwise turn every pull into a checksum mismatch.
		if e.SHA256 != "" && !commit.MatchString(e.Revision) {
			t.Errorf("%s: pinned sha256 without a pinned commit (revision %q)", e.Name, e.Revision)
		}
		if e.Revision != "" && !commit.MatchString(e.Revision) {
			t.Errorf("%s: revision %q is not a commit", e.Name, e.Revision)
		}
		if e.Size < 100e6 || e.Size > 6e9 || e.ContextLength < 2048 || e.License == "" || e.Note == "" {
			t.Errorf("%s: implausible or missing facts: %+v", e.Name, e)
		}
		if strings.Contains(e.Note, "\n") || len(e.Note) > 140 {
			t.Errorf("%s: the note must be one short line: %q", e.Name, e.Note)
		}
		if e.Default {
			defaults++
		}
		ref, err := ParseRef(e.Name)
		if err != nil || ref.Kind != RefCatalog || ref.Entry.Name != e.Name {
			t.Errorf("%s: ParseRef = %+v, %v; want the catalog entry", e.Name, ref, err)
		}
	}
	if defaults != 1 {
		t.Errorf("%d entries are marked default, want 1", defaults)
	}
	if d := DefaultCatalogEntry(); d.Name != "qwen2.5-1.5b" || d.SizeText() != "1.1GB" {
		t.Errorf("default = %s (%s), want qwen2.5-1.5b (1.1GB)", d.Name, d.SizeText())
	}
}

func TestCatalogURL(t *testing.T) {
	e, ok := LookupCatalog("QWEN2.5-1.5B")
	if !ok {
		t.Fatal("lookup is not case-insensitive")
	}
	want := "https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/91cad51170dc346986eccefdc2dd33a9da36ead9/qwen2.5-1.5b-instruct-q4_k_m.gguf"
	if got := e.URL(DefaultHubEndpoint); got != want {
		t.Errorf("URL = %s, want %s", got, want)
	}
	unpinned := CatalogEntry{Repo: "o/r", File: "a b#c.gguf"}
	if got := unpinned.URL("http://mirror/hf"); got != "http://mirror/hf/o/r/resolve/main/a%20b%23c.gguf" {
		t.Errorf("URL = %s", got)
	}
}

func TestHubEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", DefaultHubEndpoint, ""},
		{"  ", DefaultHubEndpoint, ""},
		{"https://hf-mirror.com", "https://hf-mirror.com", ""},
		{"https://hf-mirror.com/", "https://hf-mirror.com", ""},
		{"http://127.0.0.1:8080/hub//", "http://127.0.0.1:8080/hub", ""},
		{"ftp://mirror", "", "HF_ENDPOINT=ftp://mirror: want an http(s) URL"},
		{"hf-mirror.com", "", "HF_ENDPOINT=hf-mirror.com: want an http(s) URL"},
		{"https://mirror/?token=s3cret", "", "HF_ENDPOINT=https://mirror/?token=[REDACTED]: want"},
	} {
		got, err := HubEndpoint(tc.in)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) || !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("HubEndpoint(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("HubEndpoint(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestDeclaredSHA256(t *testing.T) {
	const sum = "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e"
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`"` + sum + `"`, true},
		{sum, true},
		{`W/"` + sum + `"`, true},
		{` "` + strings.ToUpper(sum) + `" `, true},
		{"", false},
		{`"4a5f3b8e1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f"`, false}, // a git SHA-1 (small, non-LFS file)
		{`"` + sum[:63] + `"`, false},
		{`"` + sum + `x"`, false},
		{`"` + sum, false},
	} {
		got, ok := DeclaredSHA256(tc.in)
		if ok != tc.ok || (ok && got != sum) {
			t.Errorf("DeclaredSHA256(%q) = %q, %v; want ok=%v", tc.in, got, ok, tc.ok)
		}
	}
}

func TestResolveRefQuant(t *testing.T) {
	hub := newFakeHub(t)
	repo := "bartowski/Llama-3.2-1B-Instruct-GGUF"
	for _, f := range []string{".gitattributes", "README.md", "Llama-3.2-1B-Instruct-Q4_0.gguf", "Llama-3.2-1B-Instruct-Q4_0_4_4.gguf",
		"Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Llama-3.2-1B-Instruct-Q4_K_S.gguf", "Llama-3.2-1B-Instruct-f16.gguf", "mmproj-Llama-3.2-1B-f16.gguf"} {
		hub.add(repo, f, nil)
	}
	hub.add("Qwen/Qwen2.5-1.5B-Instruct-GGUF", "qwen2.5-1.5b-instruct-q4_k_m.gguf", nil)
	hub.add("Qwen/Qwen2.5-1.5B-Instruct-GGUF", "qwen2.5-1.5b-instruct-q8_0.gguf", nil)
	hub.add("o/no-gguf", "model.safetensors", nil)
	opts := HubOptions{Endpoint: hub.URL, Timeout: 5 * time.Second}
	for _, tc := range []struct {
		arg, file, err string
	}{
		{repo + ":Q4_K_M", "Llama-3.2-1B-Instruct-Q4_K_M.gguf", ""},
		{repo + ":q4_k_m", "Llama-3.2-1B-Instruct-Q4_K_M.gguf", ""},
		{repo + ":Q4_0", "Llama-3.2-1B-Instruct-Q4_0.gguf", ""}, // not Q4_0_4_4
		{repo + ":F16", "Llama-3.2-1B-Instruct-f16.gguf", ""},   // mmproj skipped
		{"hf.co/" + repo, "Llama-3.2-1B-Instruct-Q4_K_M.gguf", ""},
		{"Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q8_0", "qwen2.5-1.5b-instruct-q8_0.gguf", ""},
		{repo + ":Q4_K", "", "pull " + repo + ":Q4_K: no GGUF file of quantization Q4_K (files: Llama-3.2-1B-Instruct-Q4_0.gguf, "},
		{repo + ":Q4", "", "no GGUF file of quantization Q4 "},
		{repo + ":IQ2_M", "", "no GGUF file of quantization IQ2_M"},
		{"o/no-gguf:Q4_K_M", "", "pull o/no-gguf:Q4_K_M: the repository has no GGUF file"},
		{"o/missing:Q4_K_M", "", "pull o/missing: no such repository on " + hub.URL + " (404 Not Found)"},
	} {
		ref, err := ParseRef(tc.arg)
		if err != nil {
			t.Fatalf("ParseRef(%q): %v", tc.arg, err)
		}
		src, err := ResolveRef(context.Background(), ref, opts)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: err = %v, want %q (ErrInvalid)", tc.arg, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.arg, err)
			continue
		}
		wantURL := hub.URL + "/" + ref.Repo + "/resolve/main/" + tc.file
		if src.URL != wantURL || src.Name != strings.TrimSuffix(tc.file, ".gguf") || src.SHA256 != "" {
			t.Errorf("%s: source = %+v, want URL %s", tc.arg, src, wantURL)
		}
	}

	// Several matches: ambiguous, with the candidates named.
	hub.add(repo, "sub/Llama-3.2-1B-Instruct-Q4_K_M.gguf", nil)
	ref, _ := ParseRef(repo + ":Q4_K_M")
	_, err := ResolveRef(context.Background(), ref, opts)
	want := "pull " + repo + ":Q4_K_M: 2 files match (Llama-3.2-1B-Instruct-Q4_K_M.gguf, sub/Llama-3.2-1B-Instruct-Q4_K_M.gguf); name one with hf.co/" + repo + "/FILE"
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Errorf("ambiguous: err = %v\nwant %s", err, want)
	}
}

func TestResolveRefNoNetworkForOtherForms(t *testing.T) {
	hub := newFakeHub(t)
	opts := HubOptions{Endpoint: hub.URL}
	for arg, want := range map[string]string{
		"qwen2.5-0.5b":                         hub.URL + "/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf",
		"hf.co/o/r/dir/m-Q8_0.gguf":            hub.URL + "/o/r/resolve/main/dir/m-Q8_0.gguf",
		"hf://o/r/m.gguf":                      hub.URL + "/o/r/resolve/main/m.gguf",
		"huggingface.co/o/r/resolve/v2/m.gguf": hub.URL + "/o/r/resolve/v2/m.gguf",
		"http://example.com/x.gguf":            "http://example.com/x.gguf",
	} {
		ref, err := ParseRef(arg)
		if err != nil {
			t.Fatalf("ParseRef(%q): %v", arg, err)
		}
		src, err := ResolveRef(context.Background(), ref, opts)
		if err != nil || src.URL != want {
			t.Errorf("%s: %+v, %v; want URL %s", arg, src, err, want)
		}
	}
	if p := hub.Paths(); len(p) != 0 {
		t.Errorf("resolving asked the hub: %v", p)
	}
}

// pullFromHub resolves arg against hub and pulls it into dir, as
// `tact models pull` does.
func pullFromHub(t *testing.T, hub *fakeHub, dir string, ref Ref, given string) (PullResult, error) {
	t.Helper()
	src, err := ResolveRef(context.Background(), ref, HubOptions{Endpoint: hub.URL})
	if err != nil {
		t.Fatal(err)
	}
	want := given
	if want == "" {
		want = src.SHA256
	}
	return PullModel(context.Background(), PullOptions{URL: src.URL, Dir: dir, Name: src.Name, SHA256: want, StallTimeout: 5 * time.Second})
}

func TestPullVerification(t *testing.T) {
	content := modelBytes(t)
	good := sha(content)
	bad := strings.Repeat("ab", 32)
	pinned := func(sum string) Ref {
		return Ref{Kind: RefCatalog, Entry: &CatalogEntry{Name: "tiny", Repo: "o/r", File: "tiny-Q8_0.gguf", SHA256: sum}}
	}
	quant, _ := ParseRef("o/r:Q8_0")
	for _, tc := range []struct {
		name     string
		ref      Ref
		given    string
		declared string
		onFinal  bool
		want     Verification
		err      string
	}{
		{"pinned ok", pinned(good), "", "", false, VerifiedGiven, ""},
		{"pinned ok, declared ignored", pinned(good), "", `"` + bad + `"`, false, VerifiedGiven, ""},
		{"pinned mismatch", pinned(bad), "", `"` + good + `"`, false, "", "sha256 mismatch: got " + good + ", want " + bad + "; the download was removed"},
		{"declared ok on the redirect", quant, "", `"` + good + `"`, false, VerifiedDeclared, ""},
		{"declared ok, weak", quant, "", `W/"` + good + `"`, false, VerifiedDeclared, ""},
		{"declared ok on the file's answer", quant, "", good, true, VerifiedDeclared, ""},
		{"declared mismatch", quant, "", `"` + bad + `"`, false, "", "sha256 mismatch: got " + good + ", the server declared " + bad + " (X-Linked-Etag); the download was removed"},
		{"--sha256 overrides a wrong declaration", quant, good, `"` + bad + `"`, false, VerifiedGiven, ""},
		{"--sha256 overrides the pin", pinned(bad), good, "", false, VerifiedGiven, ""},
		{"nothing declared", quant, "", "", false, Unverified, ""},
		{"a SHA-1 declares nothing", quant, "", `"0123456789abcdef0123456789abcdef01234567"`, false, Unverified, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := newFakeHub(t)
			hub.add("o/r", "tiny-Q8_0.gguf", content)
			hub.declared, hub.onFinal = tc.declared, tc.onFinal
			dir := t.TempDir()
			res, err := pullFromHub(t, hub, dir, tc.ref, tc.given)
			name := "tiny"
			if tc.ref.Kind == RefQuant {
				name = "tiny-Q8_0"
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrChecksum) {
					t.Fatalf("err = %v, want %q (ErrChecksum)", err, tc.err)
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("a mismatch left files behind: %v", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Verified != tc.want || res.SHA256 != good || res.Path != filepath.Join(dir, name+".gguf") {
				t.Errorf("result = %+v, want verified %q", res, tc.want)
			}
			if b, _ := os.ReadFile(res.Path); !bytes.Equal(b, content) {
				t.Error("installed file differs")
			}
		})
	}
}

// A declared digest is checked against the whole file when a pull resumes.
func TestPullDeclaredAfterResume(t *testing.T) {
	content := modelBytes(t)
	hub := newFakeHub(t)
	hub.add("o/r", "tiny.gguf", content)
	hub.declared = `"` + sha(content) + `"`
	dir := t.TempDir()
	ref, _ := ParseRef("hf.co/o/r/tiny.gguf")
	src, _ := ResolveRef(context.Background(), ref, HubOptions{Endpoint: hub.URL})
	seedPartial(t, dir, content[:1000], &partialMeta{URL: SafeURL(src.URL), ETag: `"cdn-v1"`})
	res, err := PullModel(context.Background(), PullOptions{URL: src.URL, Dir: dir, StallTimeout: 5 * time.Second})
	if err != nil || res.Verified != VerifiedDeclared {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	assertInstalled(t, res.Path, dir, content)
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if len(hub.ranges) != 1 || hub.ranges[0] != "bytes=1000-" {
		t.Errorf("file requests' Range = %q, want one resumed request", hub.ranges)
	}
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
	}{
		{"https://example.com/a.gguf", Ref{Kind: RefURL, URL: "https://example.com/a.gguf"}},
		{"ftp://example.com/a.gguf", Ref{Kind: RefURL, URL: "ftp://example.com/a.gguf"}}, // Pull refuses it
		{"hf.co/o/r/f.gguf", Ref{Kind: RefFile, Repo: "o/r", File: "f.gguf"}},
		{"huggingface.co/o/r/d/f.gguf", Ref{Kind: RefFile, Repo: "o/r", File: "d/f.gguf"}},
		{"hf://o/r/f.gguf", Ref{Kind: RefFile, Repo: "o/r", File: "f.gguf"}},
		{"hf.co/o/r/resolve/abc123/f.gguf", Ref{Kind: RefFile, Repo: "o/r", File: "f.gguf", Revision: "abc123"}},
		{"hf.co/o/r/blob/main/f.gguf", Ref{Kind: RefFile, Repo: "o/r", File: "f.gguf", Revision: "main"}},
		{"hf.co/o/r", Ref{Kind: RefQuant, Repo: "o/r", Quant: "Q4_K_M"}},
		{"hf.co/o/r:IQ4_XS", Ref{Kind: RefQuant, Repo: "o/r", Quant: "IQ4_XS"}},
		{"Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M", Ref{Kind: RefQuant, Repo: "Qwen/Qwen2.5-1.5B-Instruct-GGUF", Quant: "Q4_K_M"}},
	} {
		got, err := ParseRef(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		"":                              `pull "": not an http(s) URL, hf.co/REPO/FILE, REPO:QUANT or a catalog name`,
		" qwen2.5-1.5b":                 `pull " qwen2.5-1.5b": not an http(s) URL`,
		"qwen9":                         `pull "qwen9": not a catalog name (known: qwen3.5-2b, qwen3.5-4b, `,
		"not a url":                     `pull "not a url": not an http(s) URL, hf.co/REPO/FILE, REPO:QUANT or a catalog name (tact models catalog lists them)`,
		"o/r":                           `pull "o/r": not an http(s) URL`,
		"o/r:":                          `pull "o/r:": quantization "": want letters`,
		"o/r:Q4 K":                      `pull "o/r:Q4 K": quantization "Q4 K"`,
		"o/r/x:Q4_K_M":                  `pull "o/r/x:Q4_K_M": repository "o/r/x": want OWNER/NAME`,
		"hf.co/o":                       `pull "hf.co/o": want hf.co/OWNER/NAME/FILE or hf.co/OWNER/NAME:QUANT`,
		"hf.co/o/r/../x.gguf":           `file "../x.gguf": want a path inside the repository`,
		"hf.co/o/r/a//b.gguf":           `file "a//b.gguf"`,
		"hf.co/-o/r/x.gguf":             `repository "-o/r": want OWNER/NAME`,
		"hf.co/o/r/x.gguf?y=1":          `a hub reference has no query`,
		"hf.co/o/r/x:Q4.gguf":           `use hf.co/REPO/FILE or REPO:QUANT, not both`,
		"hf.co/o/r/resolve/a%2F/x.gguf": `revision "a%2F"`,
	} {
		_, err := ParseRef(in)
		if err == nil || !strings.HasPrefix(err.Error(), "pull ") || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseRef(%q) err = %v, want %q (ErrInvalid)", in, err, want)
		}
	}
}

// FuzzParseRef: ParseRef never panics, errors are one line wrapping
// ErrInvalid, and what it accepts builds a download URL on the endpoint
// that parses back to the same repository and file.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"qwen2.5-1.5b", "https://example.com/a.gguf", "hf.co/o/r/f.gguf", "hf://o/r/d/f.gguf",
		"huggingface.co/o/r/resolve/main/f.gguf", "o/r:Q4_K_M", "hf.co/o/r:Q8_0", "hf.co/o/r", "", "a/b/c:d", "hf.co/o/r/%2e%2e/x",
		"hf.co/o/r/\x00.gguf", "o/r:Q4\nK"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseRef(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseRef(%q): %v", s, err)
			}
			return
		}
		const endpoint = "https://hub.example"
		switch ref.Kind {
		case RefURL:
			if ref.URL != s {
				t.Fatalf("URL %q changed to %q", s, ref.URL)
			}
		case RefCatalog:
			if _, ok := LookupCatalog(s); !ok {
				t.Fatalf("%q is no catalog name", s)
			}
		case RefQuant:
			if checkRepo(ref.Repo) != "" || !quantPart.MatchString(ref.Quant) {
				t.Fatalf("%q: bad repo or quant in %+v", s, ref)
			}
		case RefFile:
			src, err := ResolveRef(context.Background(), ref, HubOptions{Endpoint: endpoint})
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(src.URL)
			if err != nil || u.Host != "hub.example" {
				t.Fatalf("%q: URL %q: %v", s, src.URL, err)
			}
			rev := ref.Revision
			if rev == "" {
				rev = "main"
			}
			if want := "/" + ref.Repo + "/resolve/" + rev + "/" + ref.File; u.Path != want {
				t.Fatalf("%q: URL path %q, want %q", s, u.Path, want)
			}
		}
	})
}
