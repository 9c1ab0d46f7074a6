package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tactcli/tact/internal/mcptest"
)

// nested is a JSON value nested n arrays deep.
func nested(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }

// scanAll feeds in to a scanner in chunks of size chunk.
func scanAll(frame framing, maxSize int, in string, chunk int) *RefusedError {
	g := newGuard("s", maxSize)
	s := &scanner{g: g, frame: frame}
	for i := 0; i < len(in); i += chunk {
		if r := s.feed([]byte(in[i:min(i+chunk, len(in))])); r != nil {
			return r
		}
	}
	return nil
}

// The scanner measures each message's size and depth whatever the chunking,
// across the three framings; strings (quotes, escapes, brackets inside
// them) do not count as nesting.
func TestScannerLimits(t *testing.T) {
	big := `"` + strings.Repeat("x", 2000) + `"`
	tests := []struct {
		name  string
		frame framing
		in    string
		want  string // "", "size" or "depth"
	}{
		{"lines ok", frameLines, `{"a":1}` + "\n" + nested(128) + "\n", ""},
		{"lines deep", frameLines, nested(129) + "\n", "depth"},
		{"lines deep after others", frameLines, nested(100) + "\n" + nested(100) + "\n" + `{"x":` + nested(128) + "}\n", "depth"},
		{"lines brackets in strings", frameLines, `{"s":"` + strings.Repeat("[{", 500) + `\"[[[\\"}` + "\n", ""},
		{"lines escaped quote", frameLines, `["a\"` + strings.Repeat("[", 200) + `"]` + "\n", ""},
		{"lines size per message", frameLines, big + "\n" + big + "\n" + big + "\n", ""},
		{"lines too big", frameLines, `"` + strings.Repeat("x", 5000) + `"` + "\n", "size"},
		{"lines no newline", frameLines, strings.Repeat(" ", 5000), "size"},
		{"lines pretty printed", frameLines, "{\n" + strings.Repeat(" \"k\": 1,\n", 600) + "}\n", "size"},
		{"body ok", frameBody, `{"result":` + nested(120) + `}`, ""},
		{"body deep", frameBody, `{"result":` + nested(128) + `}`, "depth"},
		{"body size is the whole body", frameBody, big + "\n" + big + "\n" + big, "size"},
		{"sse ok", frameSSE, "event: message\nid: 1\ndata: " + nested(128) + "\n\n" + "data: " + nested(128) + "\n\n", ""},
		{"sse deep", frameSSE, "event: message\ndata: " + nested(129) + "\n\n", "depth"},
		{"sse deep across data lines", frameSSE, "data: " + strings.Repeat("[", 100) + "\ndata: " + strings.Repeat("[", 29) + "\n\n", "depth"},
		{"sse crlf", frameSSE, "data: " + nested(128) + "\r\n\r\n" + "data: " + nested(128) + "\r\n\r\n", ""},
		{"sse quotes in other fields", frameSSE, "id: \"\nevent: [[[[\n" + "data: " + nested(128) + "\n\n", ""},
		{"sse size per event", frameSSE, "data: " + big + "\n\ndata: " + big + "\n\n", ""},
		{"sse too big", frameSSE, "data: " + big + "\ndata: " + big + "\ndata: " + big + "\n\n", "size"},
		{"raw counts size only", frameRaw, strings.Repeat("[", 3000), ""},
		{"raw too big", frameRaw, strings.Repeat("x", 5000), "size"},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 3, 64, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, chunk), func(t *testing.T) {
				r := scanAll(tt.frame, 4096, tt.in, chunk)
				got := ""
				switch {
				case r != nil && r.MaxSize > 0:
					got = "size"
				case r != nil:
					got = "depth"
				}
				if got != tt.want {
					t.Errorf("got %q (%v), want %q", got, r, tt.want)
				}
			})
		}
	}
}

// After a refusal the reader keeps failing, so the SDK stops reading.
func TestGuardedReaderSticky(t *testing.T) {
	g := newGuard("evil", 16)
	r := g.reader(io.NopCloser(strings.NewReader(strings.Repeat("x", 100))), frameLines)
	_, err := io.ReadAll(r)
	var re *RefusedError
	if !errors.As(err, &re) || g.err() == nil {
		t.Fatalf("err %v, guard %v", err, g.err())
	}
	if n, err := r.Read(make([]byte, 10)); n != 0 || err == nil {
		t.Errorf("read after refusal: %d %v", n, err)
	}
	want := "MCP server evil sent a message larger than 16 bytes (tact's limit for one MCP message); tact refused it and closed the connection"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func startHostile(t *testing.T, maxSize int, entry string) (*Manager, *logBuf) {
	t.Helper()
	cfg, err := Parse([]byte(`{"mcpServers": {"evil": `+entry+`}}`), "mcp.json", lookupFrom(nil))
	if err != nil {
		t.Fatal(err)
	}
	log, buf := newLog(slog.LevelDebug)
	m := Start(t.Context(), cfg, nil, Options{ClientVersion: "9.9.9", Log: log, StopGrace: 500 * time.Millisecond, MaxMessageSize: maxSize})
	t.Cleanup(m.Close)
	return m, buf
}

// A message over the size or depth limit is refused by tact, and the
// error says so, over stdio and streamable HTTP: never a server that
// "stopped" with its broken pipe as the reason. The server is restarted
// once, as after a death, and a later call goes through.
func TestRefusedMessages(t *testing.T) {
	for _, transport := range []string{"stdio", "http", "http-json"} {
		for _, tc := range []struct {
			name, args, want string
			maxSize          int
		}{
			{"size", fmt.Sprintf(`{"bytes": %d}`, 17<<20), "MCP server evil sent a message larger than 16 MiB (tact's limit for one MCP message); tact refused it and closed the connection", 0},
			{"size set", `{"bytes": 300000}`, "MCP server evil sent a message larger than 256 KiB (tact's limit for one MCP message); tact refused it and closed the connection", 256 << 10},
			{"depth", `{"levels": 200}`, "MCP server evil sent a message nested more than 128 levels deep (tact's limit for one MCP message); tact refused it and closed the connection", 0},
		} {
			t.Run(transport+"/"+tc.name, func(t *testing.T) {
				entry := stdioEntry(t, "", "-hostile")
				switch transport {
				case "http": // answers as SSE streams
					q, _ := json.Marshal(startHTTPServer(t, "-hostile"))
					entry = `{"url": ` + string(q) + `}`
				case "http-json": // answers as application/json bodies
					q, _ := json.Marshal(startHTTPServer(t, "-hostile", "-json-response"))
					entry = `{"url": ` + string(q) + `}`
				}
				m, log := startHostile(t, tc.maxSize, entry)
				tools := toolMap(m)
				tool := tools["evil.big"]
				if tc.name == "depth" {
					tool = tools["evil.deep"]
					// Within the limit it works.
					if got := run(t, tool, `{"levels": 100}`); got.Err != nil || !strings.HasPrefix(got.Output, `{"v":[[[`) {
						t.Fatalf("100 levels: %+v\n%s", got, log)
					}
				}
				res := run(t, tool, tc.args)
				want := tool.Name() + ": " + tc.want + "; it was restarted, so the call may be tried again"
				if res.Err == nil || res.Err.Error() != want {
					t.Fatalf("got  %v\nwant %s\nlog:\n%s", res.Err, want, log)
				}
				if got := run(t, tools["evil.echo"], `{"text":"after"}`); got.Output != "after" || got.Err != nil {
					t.Fatalf("echo after the restart: %+v\n%s", got, log)
				}
				// The second time the restart is spent; still tact's refusal.
				res = run(t, tool, tc.args)
				if res.Err == nil || !strings.Contains(res.Err.Error(), tc.want+"; it was restarted once already this run") {
					t.Fatalf("second refusal: %v\n%s", res.Err, log)
				}
			})
		}
	}
}

// A tools/list page nested too deep fails the start with tact's reason.
func TestRefusedAtStart(t *testing.T) {
	for _, transport := range []string{"stdio", "http", "http-json"} {
		t.Run(transport, func(t *testing.T) {
			entry := stdioEntry(t, "", "-deep-schema", "100")
			if transport != "stdio" {
				args := []string{"-deep-schema", "100"}
				if transport == "http-json" {
					args = append(args, "-json-response")
				}
				q, _ := json.Marshal(startHTTPServer(t, args...))
				entry = `{"url": ` + string(q) + `}`
			}
			m, log := startHostile(t, 0, entry)
			st := m.Status()
			want := "listing tools: MCP server evil sent a message nested more than 128 levels deep (tact's limit for one MCP message); tact refused it and closed the connection"
			if len(st) != 1 || st[0].State != StateFailed || st[0].Error != want {
				t.Fatalf("status %+v, want error %q\nlog:\n%s", st, want, log)
			}
		})
	}
}

// Tool names outside the MCP alphabet are refused, each with a warning
// that shows the name escaped; the rest of the server's tools stay.
func TestHostileToolNames(t *testing.T) {
	m, log := startHostile(t, 0, stdioEntry(t, "", "-hostile"))
	tools := toolMap(m)
	for _, name := range mcptest.HostileNames {
		if tools["evil."+name] != nil {
			t.Errorf("tool %q was accepted", name)
		}
	}
	for _, name := range []string{"evil.shout", "evil.admin.wipe", "evil.big", "evil.echo"} {
		if tools[name] == nil {
			t.Errorf("tool %s missing; log:\n%s", name, log)
		}
	}
	if n := strings.Count(log.String(), `msg="MCP tool skipped: tool names are 1 to 128 of ASCII letters, digits, \"_\", \"-\" and \".\"" server=evil tool=`); n != len(mcptest.HostileNames) {
		t.Errorf("%d warnings, want %d:\n%s", n, len(mcptest.HostileNames), log)
	}
	for _, want := range []string{`tool="\"admin/wipe\""`, `tool="\"\\u0430dmin\""`, `tool="\"red\\x1b[31mtool\""`, `tool="\"bidi\\u202eevil\""`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if bytes.ContainsAny([]byte(log.String()), "\x1b\u202e\u0430") {
		t.Errorf("log holds raw control or look-alike characters:\n%q", log)
	}
}

// jsonDepth is the deepest nesting of a valid JSON text, by the standard
// decoder's tokens (the reference for the scanner).
func jsonDepth(data []byte) (int, bool) {
	if !json.Valid(data) {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, most := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return most, err == io.EOF
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			most = max(most, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// FuzzScanner: on any bytes, in any chunking and framing, the scanner
// never panics; on a valid JSON message it refuses exactly when the
// message nests deeper than the limit, and never for size below it.
func FuzzScanner(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"[[[\"]]"}]}`), uint8(3))
	f.Add([]byte(nested(20)), uint8(1))
	f.Add([]byte(`["\\\"[", {"x": "\u005b"}]`), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		step := int(chunk%16) + 1
		const depth = 8
		for _, frame := range []framing{frameLines, frameBody, frameSSE, frameRaw} {
			g := &guard{server: "f", maxSize: 1 << 20, maxDepth: depth}
			s := &scanner{g: g, frame: frame}
			in := data
			if frame == frameSSE {
				in = append(append([]byte("data: "), bytes.ReplaceAll(data, []byte("\n"), []byte(" "))...), "\n\n"...)
			}
			var refused *RefusedError
			for i := 0; i < len(in) && refused == nil; i += step {
				refused = s.feed(in[i:min(i+step, len(in))])
			}
			if frame == frameRaw {
				if refused != nil {
					t.Fatalf("raw framing refused %q: %v", data, refused)
				}
				continue
			}
			most, ok := jsonDepth(data)
			if !ok || bytes.ContainsAny(data, "\n\r") {
				continue // not one valid message on one line: no reference
			}
			if got, want := refused != nil, most > depth; got != want {
				t.Fatalf("%v framing: refused=%v (%v), depth %d, limit %d: %q", frame, got, refused, most, depth, data)
			}
		}
	})
}
