package main

// Every curl example in docs/serve.md, run against a real `tact serve`
// (in process, on a loopback port, the script backend): a reader who
// copies one gets what the page says. The curl command lines are read
// with a shell parser and sent with net/http, so the test needs no curl.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// curlExample is one curl command of a doc and the comment lines that
// follow it in its code block (what the doc says it prints).
type curlExample struct {
	line   int // in the doc
	args   []string
	output []string // without the leading "# "
}

// fencedBlocks returns the fenced code blocks of a markdown doc: each
// block's text and the doc line of its first line.
func fencedBlocks(doc string) (texts []string, lines []int) {
	fence, cur, start := "", []string(nil), 0
	for n, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence, cur, start = trimmed[:3], nil, n+2
		case fence != "" && strings.HasPrefix(trimmed, fence):
			texts, lines = append(texts, strings.Join(cur, "\n")), append(lines, start)
			fence = ""
		case fence != "":
			cur = append(cur, line)
		}
	}
	return texts, lines
}

// curlExamples finds every curl command in doc's code blocks, in pipelines
// and lists too. A block that mentions curl must parse as shell.
func curlExamples(doc string) ([]curlExample, error) {
	var out []curlExample
	texts, starts := fencedBlocks(doc)
	for i, text := range texts {
		if !regexp.MustCompile(`(^|\s|\|)curl\s`).MatchString(text) {
			continue
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
		if err != nil {
			return nil, fmt.Errorf("docs line %d: a block with curl that is not shell: %v", starts[i], err)
		}
		blockLines := strings.Split(text, "\n")
		var werr error
		syntax.Walk(f, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 || call.Args[0].Lit() != "curl" {
				return true
			}
			ex := curlExample{line: starts[i] + int(call.Pos().Line()) - 1}
			for _, w := range call.Args[1:] {
				s, err := expand.Literal(nil, w)
				if err != nil {
					werr = fmt.Errorf("docs line %d: %v", ex.line, err)
					return false
				}
				ex.args = append(ex.args, s)
			}
			for _, l := range blockLines[call.End().Line():] {
				l = strings.TrimSpace(l)
				if !strings.HasPrefix(l, "#") {
					break
				}
				ex.output = append(ex.output, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
			}
			out = append(out, ex)
			return true
		})
		if werr != nil {
			return nil, werr
		}
	}
	return out, nil
}

// curlRequest is what a curl command line sends.
type curlRequest struct {
	method, url string
	header      http.Header
	body        string
	include     bool // -i: the output starts with the status line and headers
}

// parseCurl reads the curl options the docs use; any other is an error,
// so an example this test cannot check is noticed.
func parseCurl(args []string) (*curlRequest, error) {
	r := &curlRequest{header: http.Header{}}
	var data []string
	method, isJSON := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s: no value", a)
			}
			i++
			return args[i], nil
		}
		// Long options, and -X VALUE style short ones.
		switch a {
		case "-s", "--silent", "-S", "--show-error", "-N", "--no-buffer", "-f", "--fail":
			continue
		case "-i", "--include":
			r.include = true
			continue
		case "-d", "--data", "--data-raw", "--data-binary", "--json", "-H", "--header", "-X", "--request":
			v, err := value()
			if err != nil {
				return nil, err
			}
			switch a {
			case "-H", "--header":
				k, hv, ok := strings.Cut(v, ":")
				if !ok {
					return nil, fmt.Errorf("-H %q: want NAME: VALUE", v)
				}
				r.header.Add(strings.TrimSpace(k), strings.TrimSpace(hv))
			case "-X", "--request":
				method = v
			case "--json":
				isJSON = true
				data = append(data, v)
			default:
				if strings.HasPrefix(v, "@") && a != "--data-raw" {
					return nil, fmt.Errorf("%s %s: reading a file is not supported here", a, v)
				}
				data = append(data, v)
			}
			continue
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 {
			// A cluster of short flags (-sN, -si); a value flag must come last.
			var expanded []string
			for j, c := range a[1:] {
				expanded = append(expanded, "-"+string(c))
				if strings.ContainsRune("dHX", c) {
					if rest := a[2+j:]; rest != "" {
						expanded = append(expanded, rest)
					}
					break
				}
			}
			args = append(args[:i:i], append(expanded, args[i+1:]...)...)
			i--
			continue
		}
		if strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("curl option %s: not understood by this test (add it to parseCurl)", a)
		}
		if r.url != "" {
			return nil, fmt.Errorf("two URLs: %s and %s", r.url, a)
		}
		r.url = a
	}
	if r.url == "" {
		return nil, fmt.Errorf("no URL")
	}
	if !strings.Contains(r.url, "://") {
		r.url = "http://" + r.url
	}
	r.method = "GET"
	if len(data) > 0 {
		r.method = "POST"
		r.body = strings.Join(data, "&")
		if r.header.Get("Content-Type") == "" {
			if isJSON {
				r.header.Set("Content-Type", "application/json")
			} else {
				r.header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
		}
		if isJSON && r.header.Get("Accept") == "" {
			r.header.Set("Accept", "application/json")
		}
	}
	if method != "" {
		r.method = method
	}
	return r, nil
}

func TestParseCurl(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want curlRequest
	}{
		{[]string{"-s", "localhost:8080/healthz"}, curlRequest{method: "GET", url: "http://localhost:8080/healthz", header: http.Header{}}},
		{[]string{"-sN", "localhost:8080/v1/runs", "--json", `{"a":1}`}, curlRequest{method: "POST", url: "http://localhost:8080/v1/runs", body: `{"a":1}`,
			header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}}},
		{[]string{"-si", "http://localhost:8080/x", "-d", "a", "--data", "b"}, curlRequest{method: "POST", url: "http://localhost:8080/x", body: "a&b", include: true,
			header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}},
		{[]string{"localhost:8080/x", "-H", "Content-Type: application/json", "-d{}", "-X", "PUT"}, curlRequest{method: "PUT", url: "http://localhost:8080/x", body: "{}",
			header: http.Header{"Content-Type": {"application/json"}}}},
		{[]string{"-sH", "Authorization: Bearer t", "localhost:8080/metrics"}, curlRequest{method: "GET", url: "http://localhost:8080/metrics",
			header: http.Header{"Authorization": {"Bearer t"}}}},
	} {
		got, err := parseCurl(tc.args)
		if err != nil || !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("parseCurl(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	for _, args := range [][]string{{"-o", "out", "localhost:8080"}, {"-d", "@body.json", "localhost:8080"}, {"-s"}, {"a", "b"}, {"localhost:8080", "-H"}} {
		if _, err := parseCurl(args); err == nil {
			t.Errorf("parseCurl(%q): no error", args)
		}
	}
}

// lineSignal passes writes on and sends the first line matching re.
type lineSignal struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	all  bytes.Buffer
	re   *regexp.Regexp
	got  chan []string
	sent bool
}

func (l *lineSignal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			break
		}
		if m := l.re.FindStringSubmatch(line); m != nil && !l.sent {
			l.sent = true
			l.got <- m
		}
	}
	return len(p), nil
}

func (l *lineSignal) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// startServeInProcess runs `tact serve` on a free loopback port with the
// script backend and returns its address.
func startServeInProcess(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"} {
		t.Setenv(v, filepath.Join(dir, strings.ToLower(v)))
	}
	t.Setenv("HOME", dir)
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "auth.js"), []byte("function login(user, password) { return check(user, password) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Replies for the steps (an action of the first example's tool) and
	// the runs (a plan that answers at once), more than the examples use.
	var script strings.Builder
	for range 16 {
		script.WriteString(`{"kind":"action","text":"{\"thought\":\"Search for the login code.\",\"tool\":\"code_search\",\"args\":{\"query\":\"login\"}}"}` + "\n")
		script.WriteString(`{"kind":"plan","text":"{\"plan\":[{\"thought\":\"The workspace holds one file, auth.js.\",\"tool\":\"final_answer\",\"args\":{\"answer\":\"auth.js\"}}]}"}` + "\n")
	}
	scriptFile := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(scriptFile, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &lineSignal{re: regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`), got: make(chan []string, 1)}
	f := newFactory(&iostreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: logs})
	root, err := newRootCmd(f)
	if err != nil {
		t.Fatal(err)
	}
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--workspace", ws, "--script", scriptFile, "--shutdown-grace", "2s"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		f.Close()
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tact serve: %v\n%s", err, logs)
		}
	})
	select {
	case m := <-logs.got:
		return m[1]
	case err := <-done:
		done <- err
		t.Fatalf("tact serve ended before listening: %v\n%s", err, logs)
	case <-time.After(time.Minute):
		t.Fatalf("tact serve did not listen within a minute:\n%s", logs)
	}
	return ""
}

var docStatusLine = regexp.MustCompile(`^HTTP/1\.1 (\d{3})\b`)

func TestServeDocsCurlExamples(t *testing.T) {
	const doc = "docs/serve.md"
	examples, err := curlExamples(readDoc(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	// Guard the extraction itself: the doc has at least these.
	if len(examples) < 5 {
		t.Fatalf("found %d curl examples in %s; the extraction is broken", len(examples), doc)
	}
	addr := startServeInProcess(t)
	client := &http.Client{Timeout: time.Minute}
	for _, ex := range examples {
		t.Run(fmt.Sprintf("line%d", ex.line), func(t *testing.T) {
			req, err := parseCurl(ex.args)
			if err != nil {
				t.Fatalf("%s:%d: %v", doc, ex.line, err)
			}
			u, err := url.Parse(req.url)
			if err != nil || (u.Host != "localhost:8080" && u.Host != "127.0.0.1:8080") {
				t.Fatalf("%s:%d: URL %s: want the default address, localhost:8080", doc, ex.line, req.url)
			}
			u.Host = addr
			hr, err := http.NewRequest(req.method, u.String(), strings.NewReader(req.body))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header = req.header
			resp, err := client.Do(hr)
			if err != nil {
				t.Fatalf("%s:%d: %v", doc, ex.line, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The status the doc shows (with -i), else any success.
			want := 0
			if len(ex.output) > 0 {
				if m := docStatusLine.FindStringSubmatch(ex.output[0]); m != nil {
					want, _ = strconv.Atoi(m[1])
				}
			}
			if want != 0 && resp.StatusCode != want || want == 0 && resp.StatusCode >= 400 {
				t.Fatalf("%s:%d: curl %q: status %d, the doc shows %v:\n%s", doc, ex.line, ex.args, resp.StatusCode, ex.output, body)
			}
			// Documented error bodies are exact; documented events come in order.
			documented := strings.Join(ex.output, "\n")
			rest := string(body)
			for _, o := range ex.output {
				switch {
				case strings.HasPrefix(o, `{"status":"error"`):
					if got := strings.TrimSpace(string(body)); got != o {
						t.Errorf("%s:%d: body\n%s\nthe doc shows\n%s", doc, ex.line, got, o)
					}
				case strings.HasPrefix(o, "event: "):
					i := strings.Index(rest, o+"\n")
					if i < 0 {
						t.Errorf("%s:%d: the stream lacks %q (in order):\n%.3000s", doc, ex.line, o, body)
						continue
					}
					rest = rest[i+len(o):]
				}
			}
			if strings.Contains(documented, "event: ") && resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Errorf("%s:%d: Content-Type %q, want text/event-stream", doc, ex.line, resp.Header.Get("Content-Type"))
			}
			// A step that failed or a run that did not succeed still
			// answers 200: an example must not, unless the doc shows it.
			result := body
			if _, after, ok := strings.Cut(string(body), "event: result\ndata: "); ok {
				line, _, _ := strings.Cut(after, "\n")
				result = []byte(line)
			}
			if bytes.HasPrefix(result, []byte("{")) && want == 0 {
				var v struct {
					Status  string `json:"status"`
					Success *bool  `json:"success"`
					Error   string `json:"error"`
				}
				if err := json.Unmarshal(result, &v); err != nil {
					t.Errorf("%s:%d: not JSON: %v\n%s", doc, ex.line, err, result)
				}
				if v.Status == "error" || v.Success != nil && !*v.Success {
					t.Errorf("%s:%d: the example failed: %.3000s", doc, ex.line, result)
				}
			}
			if strings.Contains(string(body), "event: error\n") && !strings.Contains(documented, "event: error") {
				t.Errorf("%s:%d: the stream ended in an error:\n%.3000s", doc, ex.line, body)
			}
		})
	}
}
