package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// twRun runs tool with args given as a Go value (marshalled) or raw string.
func twRun(t testing.TB, tool Tool, env *Env, args any) Result {
	t.Helper()
	var raw json.RawMessage
	switch a := args.(type) {
	case string:
		raw = json.RawMessage(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	return tool.Run(context.Background(), env, raw)
}

type twCase struct {
	name    string
	args    any
	want    string // exact Output when wantErr is empty and want != ""
	contain []string
	wantErr string // substring of Err
}

func twCheck(t *testing.T, tool Tool, env *Env, cases []twCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := twRun(t, tool, env, tc.args)
			if tc.wantErr != "" {
				if res.Err == nil {
					t.Fatalf("Err = nil (output %q), want error containing %q", res.Output, tc.wantErr)
				}
				if !strings.Contains(res.Err.Error(), tc.wantErr) {
					t.Fatalf("Err = %q, want it to contain %q", res.Err, tc.wantErr)
				}
				return
			}
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			if tc.want != "" && res.Output != tc.want {
				t.Fatalf("Output = %q, want %q", res.Output, tc.want)
			}
			for _, c := range tc.contain {
				if !strings.Contains(res.Output, c) {
					t.Fatalf("Output = %q, want it to contain %q", res.Output, c)
				}
			}
		})
	}
}

type m = map[string]any

func TestBuiltinsAndSchemas(t *testing.T) {
	reg := DefaultRegistry()
	want := []string{"edit_file", "final_answer", "jq", "list_files", "read_file", "run_command", "search_files", "stat_path", "write_file"}
	if got := strings.Join(reg.Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("Names = %s, want %s", got, strings.Join(want, ","))
	}
	classes := map[string]Class{
		"final_answer": ClassRead, "read_file": ClassRead, "list_files": ClassRead, "search_files": ClassRead,
		"jq": ClassRead, "stat_path": ClassRead, "write_file": ClassWrite, "edit_file": ClassWrite, "run_command": ClassExec,
	}
	for _, tool := range reg.List() {
		if tool.Class() != classes[tool.Name()] {
			t.Errorf("%s: class %q, want %q", tool.Name(), tool.Class(), classes[tool.Name()])
		}
		if d := tool.Description(); d == "" || strings.Contains(d, "\n") {
			t.Errorf("%s: description %q is not one line", tool.Name(), d)
		}
		var s struct {
			Schema     string                    `json:"$schema"`
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
			Additional *bool                     `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.Schema(), &s); err != nil {
			t.Fatalf("%s: schema: %v", tool.Name(), err)
		}
		if s.Type != "object" || s.Additional == nil || *s.Additional || !strings.Contains(s.Schema, "2020-12") {
			t.Errorf("%s: schema %s: want a 2020-12 object schema with additionalProperties false", tool.Name(), tool.Schema())
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tool.Name(), r)
			}
		}
		for name, p := range s.Properties {
			if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s: property %q has no description", tool.Name(), name)
			}
		}
		// Unknown and case-folded argument names are refused by Run itself.
		for _, bad := range []string{`{"bogus": 1}`, `[]`, `"x"`, `{"a":1} {"b":2}`, `{`} {
			if res := tool.Run(context.Background(), &Env{Workspace: t.TempDir()}, json.RawMessage(bad)); res.Err == nil {
				t.Errorf("%s: Run(%s) succeeded, want an argument error", tool.Name(), bad)
			}
		}
	}
	if len(Builtins()) != len(want) {
		t.Errorf("Builtins has %d tools, want %d", len(Builtins()), len(want))
	}
}

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		raw     string
		wantErr string
		path    string
		n       int
	}{
		{`{"path":"a","n":3}`, "", "a", 3},
		{`{"path":"a","n":3.0}`, "", "a", 3},
		{`{"path":"a","n":null}`, "", "a", 0},
		{`  {"path":"a"}  `, "", "a", 0},
		{`{"PATH":"a"}`, `unknown argument "PATH"`, "", 0},
		{`{"n":1}`, `missing required argument "path"`, "", 0},
		{`{"path":null}`, `missing required argument "path"`, "", 0},
		{`{"path":1}`, `argument "path": want a string, got a number`, "", 0},
		{`{"path":"a","n":"3"}`, `argument "n": want an integer, got a string`, "", 0},
		{`{"path":"a","n":1.5}`, `want an integer, got 1.5`, "", 0},
		{`{"path":"a","n":1e300}`, `want an integer`, "", 0},
		{`{"path":"a"}x`, `unexpected data`, "", 0},
		{`{"path":"a",}`, `not valid JSON`, "", 0},
		{`{"path":"a"}{}`, `unexpected data`, "", 0},
		{`[1]`, `must be a JSON object`, "", 0},
		{``, `missing required argument "path"`, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			var path string
			var n int
			err := decodeArgs("t", json.RawMessage(tt.raw),
				argSpec{name: "path", required: true, dst: &path},
				argSpec{name: "n", dst: &n})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || path != tt.path || n != tt.n {
				t.Fatalf("got (%q, %d, %v), want (%q, %d, nil)", path, n, err, tt.path, tt.n)
			}
		})
	}
}

func TestFinalAnswer(t *testing.T) {
	env, _ := twLayout(t)
	twCheck(t, FinalAnswerTool{}, env, []twCase{
		{name: "answer", args: m{"answer": "42 is the answer"}, want: "42 is the answer"},
		{name: "missing", args: m{}, wantErr: `missing required argument "answer"`},
		{name: "wrong type", args: m{"answer": 42}, wantErr: "want a string"},
	})
}

func TestReadFile(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	twWrite(t, filepath.Join(ws, "lines.txt"), "one\ntwo\nthree\nfour\n")
	twWrite(t, filepath.Join(ws, "nonl.txt"), "a\nb")
	twWrite(t, filepath.Join(ws, "empty.txt"), "")
	twWrite(t, filepath.Join(ws, "bin.dat"), "abc\x00def")
	twCheck(t, ReadFile{}, env, []twCase{
		{name: "whole", args: m{"path": "lines.txt"}, want: "one\ntwo\nthree\nfour\n"},
		{name: "no trailing newline", args: m{"path": "nonl.txt"}, want: "a\nb"},
		{name: "empty", args: m{"path": "empty.txt"}, want: ""},
		{name: "offset", args: m{"path": "lines.txt", "offset": 2}, want: "three\nfour\n"},
		{name: "limit", args: m{"path": "lines.txt", "limit": 2}, contain: []string{"one\ntwo\n[read_file: showed lines 1-2; more follow, use offset=2"}},
		{name: "offset and limit", args: m{"path": "lines.txt", "offset": 1, "limit": 2}, contain: []string{"two\nthree\n[read_file: showed lines 2-3"}},
		{name: "limit to end", args: m{"path": "lines.txt", "offset": 2, "limit": 2}, want: "three\nfour\n"},
		{name: "limit past end", args: m{"path": "nonl.txt", "limit": 5}, want: "a\nb"},
		{name: "offset past end", args: m{"path": "lines.txt", "offset": 10}, contain: []string{"has only 4 lines"}},
		{name: "through symlink inside", args: m{"path": "link_in/file.txt"}, want: "hello\n"},
		{name: "binary", args: m{"path": "bin.dat"}, wantErr: "looks binary"},
		{name: "missing", args: m{"path": "nope.txt"}, wantErr: "no such file"},
		{name: "directory", args: m{"path": "dir"}, wantErr: "is a directory"},
		{name: "dotdot", args: m{"path": "../outside/secret"}, wantErr: `path "../outside/secret" escapes the workspace`},
		{name: "absolute outside", args: m{"path": "/etc/hostname"}, wantErr: "escapes the workspace"},
		{name: "symlink out", args: m{"path": "link_out/secret"}, wantErr: "escapes the workspace through a symlink"},
		{name: "file symlink out", args: m{"path": "abs_out"}, wantErr: "escapes the workspace through a symlink"},
		{name: "negative offset", args: m{"path": "lines.txt", "offset": -1}, wantErr: "negative"},
		{name: "bad offset type", args: m{"path": "lines.txt", "offset": "2"}, wantErr: "want an integer"},
		{name: "missing path", args: m{}, wantErr: `missing required argument "path"`},
	})
}

func TestReadFileCap(t *testing.T) {
	env, _ := twLayout(t)
	env.ReadCap = 10
	twWrite(t, filepath.Join(env.Workspace, "big.txt"), "0123456789abcdef\nsecond\n")
	res := twRun(t, ReadFile{}, env, m{"path": "big.txt"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !strings.HasPrefix(res.Output, "0123456789\n[read_file: output cut at the read cap of 10 bytes (file is 24 bytes)") {
		t.Fatalf("Output = %q", res.Output)
	}
	// A long line beyond the bufio buffer is handled in pieces.
	env.ReadCap = 0
	long := strings.Repeat("x", 200_000)
	twWrite(t, filepath.Join(env.Workspace, "long.txt"), long+"\nnext\n")
	res = twRun(t, ReadFile{}, env, m{"path": "long.txt", "offset": 1})
	if res.Err != nil || res.Output != "next\n" {
		t.Fatalf("offset past a long line: %q, %v", res.Output, res.Err)
	}
	res = twRun(t, ReadFile{}, env, m{"path": "long.txt", "limit": 1})
	if res.Err != nil || !strings.HasPrefix(res.Output, long+"\n[read_file: showed lines 1-1") {
		t.Fatalf("limit 1 over a long line: %d bytes, %v", len(res.Output), res.Err)
	}
}

// twSpecialFiles makes a FIFO and a socket in the workspace.
func twSpecialFiles(t *testing.T, env *Env) {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(env.Workspace, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(env.Workspace, "sock")
	if len(sock) >= 108 { // sun_path limit
		t.Skipf("temp path too long for a unix socket: %s", sock)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

func TestSpecialFilesRefusedWithoutHanging(t *testing.T) {
	env, _ := twLayout(t)
	twSpecialFiles(t, env)
	twWrite(t, filepath.Join(env.Workspace, "dir", "ok.txt"), "needle\n")
	if err := os.Symlink("fifo", filepath.Join(env.Workspace, "fifo_link")); err != nil {
		t.Fatal(err)
	}
	type call struct {
		tool    Tool
		args    any
		wantErr string
	}
	calls := []call{
		{ReadFile{}, m{"path": "fifo"}, "named pipe"},
		{ReadFile{}, m{"path": "fifo_link"}, "named pipe"},
		{ReadFile{}, m{"path": "sock"}, "socket"},
		{EditFile{}, m{"path": "fifo", "old_string": "a", "new_string": "b"}, "named pipe"},
		{WriteFile{}, m{"path": "fifo", "content": "x"}, "named pipe"},
		{WriteFile{}, m{"path": "sock", "content": "x"}, "socket"},
		{Jq{}, m{"filter": ".", "path": "fifo"}, "named pipe"},
		{SearchFiles{}, m{"pattern": "x", "path": "fifo"}, "named pipe"},
		{ListFiles{}, m{"path": "fifo"}, "not a directory"},
		{SearchFiles{}, m{"pattern": "needle"}, ""}, // walks past fifo and sock
	}
	for _, c := range calls {
		done := make(chan Result, 1)
		go func() { done <- twRun(t, c.tool, env, c.args) }()
		select {
		case res := <-done:
			if c.wantErr == "" {
				if res.Err != nil || !strings.Contains(res.Output, "dir/ok.txt:1: needle") {
					t.Errorf("%s %v: %q, %v", c.tool.Name(), c.args, res.Output, res.Err)
				}
				continue
			}
			if res.Err == nil || !strings.Contains(res.Err.Error(), c.wantErr) {
				t.Errorf("%s %v: Err = %v, want it to contain %q", c.tool.Name(), c.args, res.Err, c.wantErr)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s %v hung on a special file", c.tool.Name(), c.args)
		}
	}
	res := twRun(t, ListFiles{}, env, m{"path": "."})
	if !strings.Contains(res.Output, "fifo\n") || !strings.Contains(res.Output, "sock\n") {
		t.Errorf("list_files should still list special files: %q", res.Output)
	}
}

func TestListFiles(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	os.MkdirAll(filepath.Join(ws, "tree", "sub"), 0o755)
	os.MkdirAll(filepath.Join(ws, "empty"), 0o755)
	twWrite(t, filepath.Join(ws, "tree", "b.txt"), "b")
	twWrite(t, filepath.Join(ws, "tree", "A.txt"), "a")
	twWrite(t, filepath.Join(ws, "tree", ".hidden"), "h")
	os.Symlink("sub", filepath.Join(ws, "tree", "sublink"))
	twCheck(t, ListFiles{}, env, []twCase{
		{name: "sorted with dirs marked", args: m{"path": "tree"}, want: ".hidden\nA.txt\nb.txt\nsub/\nsublink/\n"},
		{name: "root by default", args: m{}, contain: []string{"dir/\n", "tree/\n", "link_in/\n"}},
		{name: "root dot", args: m{"path": "."}, contain: []string{"dir/\n"}},
		{name: "empty", args: m{"path": "empty"}, contain: []string{"is empty"}},
		{name: "file", args: m{"path": "tree/b.txt"}, wantErr: "not a directory"},
		{name: "missing", args: m{"path": "nope"}, wantErr: "no such file"},
		{name: "escape", args: m{"path": ".."}, wantErr: "escapes the workspace"},
		{name: "symlink out", args: m{"path": "link_out"}, wantErr: "escapes the workspace through a symlink"},
	})
}

func TestSearchFiles(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	os.MkdirAll(filepath.Join(ws, "src", ".git"), 0o755)
	twWrite(t, filepath.Join(ws, "src", "a.go"), "package a\n\nfunc Hello() {}\n")
	twWrite(t, filepath.Join(ws, "src", "b.txt"), "hello world\nHELLO\n")
	twWrite(t, filepath.Join(ws, "src", ".git", "config"), "hello from git\n")
	twWrite(t, filepath.Join(ws, "src", "bin.dat"), "hello\x00binary")
	twCheck(t, SearchFiles{}, env, []twCase{
		{name: "dir", args: m{"pattern": "hello", "path": "src"}, want: "src/b.txt:1: hello world\n"},
		{name: "case-insensitive", args: m{"pattern": "(?i)hello", "path": "src"},
			want: "src/a.go:3: func Hello() {}\nsrc/b.txt:1: hello world\nsrc/b.txt:2: HELLO\n"},
		{name: "single file", args: m{"pattern": "^HEL", "path": "src/b.txt"}, want: "src/b.txt:2: HELLO\n"},
		{name: "whole workspace", args: m{"pattern": "^hello$"}, want: "dir/file.txt:1: hello\n"},
		{name: "no matches", args: m{"pattern": "zzz", "path": "src"}, contain: []string{"no matches"}},
		{name: "bad regexp", args: m{"pattern": "(", "path": "src"}, wantErr: "bad pattern"},
		{name: "escape", args: m{"pattern": "secret", "path": "../outside"}, wantErr: "escapes the workspace"},
		{name: "symlink out", args: m{"pattern": "secret", "path": "link_out"}, wantErr: "escapes the workspace through a symlink"},
		{name: "missing pattern", args: m{"path": "src"}, wantErr: `missing required argument "pattern"`},
	})
	// Symlinks met during the walk are not followed, so link_out's target
	// is never searched.
	res := twRun(t, SearchFiles{}, env, m{"pattern": "top secret"})
	if res.Err != nil || !strings.Contains(res.Output, "no matches") {
		t.Fatalf("walk followed a symlink out: %q, %v", res.Output, res.Err)
	}
}

func TestSearchFilesCap(t *testing.T) {
	env, _ := twLayout(t)
	var b strings.Builder
	for i := 0; i < maxSearchMatches+100; i++ {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	twWrite(t, filepath.Join(env.Workspace, "many.txt"), b.String())
	res := twRun(t, SearchFiles{}, env, m{"pattern": "match", "path": "many.txt"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if n := strings.Count(res.Output, "many.txt:"); n != maxSearchMatches {
		t.Fatalf("%d matches shown, want %d", n, maxSearchMatches)
	}
	if !strings.Contains(res.Output, "stopped after 500 matches") {
		t.Fatalf("cap not reported: ...%s", res.Output[len(res.Output)-100:])
	}
}

func TestWriteFile(t *testing.T) {
	env, outside := twLayout(t)
	ws := env.Workspace
	twWrite(t, filepath.Join(ws, "private.txt"), "old")
	if err := os.Chmod(filepath.Join(ws, "private.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	twCheck(t, WriteFile{}, env, []twCase{
		{name: "new", args: m{"path": "new.txt", "content": "hi\n"}, want: "created new.txt (3 bytes)"},
		{name: "nested", args: m{"path": "a/b/c.txt", "content": "deep"}, want: "created a/b/c.txt (4 bytes)"},
		{name: "overwrite", args: m{"path": "private.txt", "content": "new"}, want: "overwrote private.txt (3 bytes)"},
		{name: "via inside symlink", args: m{"path": "link_in/x.txt", "content": "x"}, want: "created dir/x.txt (1 bytes)"},
		{name: "empty content", args: m{"path": "empty.txt", "content": ""}, want: "created empty.txt (0 bytes)"},
		{name: "directory", args: m{"path": "dir", "content": "x"}, wantErr: "is a directory"},
		{name: "workspace root", args: m{"path": ".", "content": "x"}, wantErr: "is a directory"},
		{name: "dotdot", args: m{"path": "../evil.txt", "content": "x"}, wantErr: `path "../evil.txt" escapes the workspace`},
		{name: "absolute", args: m{"path": filepath.Join(outside, "evil.txt"), "content": "x"}, wantErr: "escapes the workspace"},
		{name: "new file under symlinked dir", args: m{"path": "link_out/evil.txt", "content": "x"}, wantErr: "escapes the workspace through a symlink"},
		{name: "new dirs under symlinked dir", args: m{"path": "link_out/d/evil.txt", "content": "x"}, wantErr: "escapes the workspace through a symlink"},
		{name: "over symlink to outside file", args: m{"path": "abs_out", "content": "x"}, wantErr: "escapes the workspace through a symlink"},
		{name: "dangling symlink out", args: m{"path": "dangling_out", "content": "x"}, wantErr: "escapes the workspace through a symlink"},
		{name: "missing content", args: m{"path": "x.txt"}, wantErr: `missing required argument "content"`},
		{name: "content not string", args: m{"path": "x.txt", "content": []int{1}}, wantErr: "want a string, got an array"},
	})
	for path, want := range map[string]string{"new.txt": "hi\n", "a/b/c.txt": "deep", "private.txt": "new", "dir/x.txt": "x"} {
		got, err := os.ReadFile(filepath.Join(ws, path))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if st, _ := os.Stat(filepath.Join(ws, "private.txt")); st.Mode().Perm() != 0o600 {
		t.Errorf("overwrite changed mode to %v, want 0600 kept", st.Mode().Perm())
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	if st, want := twStat(t, filepath.Join(ws, "new.txt")), os.FileMode(0o644&^umask); st.Mode().Perm() != want {
		t.Errorf("new file mode %v, want 0644 less the umask %03o: %v", st.Mode().Perm(), umask, want)
	}
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		if e.Name() != "secret" {
			t.Errorf("file %q was created outside the workspace", e.Name())
		}
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "secret")); string(got) != "top secret\n" {
		t.Errorf("outside file changed: %q", got)
	}
	twNoTempFiles(t, ws)
}

// twNoTempFiles fails if any atomic-write temp file is left under dir.
func twNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tact-") && strings.HasSuffix(d.Name(), ".tmp") {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

func TestWriteFileConcurrentWritersNeverInterleave(t *testing.T) {
	env, _ := twLayout(t)
	contents := []string{strings.Repeat("A", 1<<20), strings.Repeat("B", 1<<20)}
	var wg sync.WaitGroup
	for _, c := range contents {
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res := twRun(t, WriteFile{}, env, m{"path": "shared.txt", "content": c}); res.Err != nil {
					t.Error(res.Err)
				}
			}()
		}
	}
	// A reader racing the writers only ever sees a whole version.
	stop := make(chan struct{})
	var readerWG sync.WaitGroup
	readerWG.Add(1)
	go func() {
		defer readerWG.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(filepath.Join(env.Workspace, "shared.txt"))
			if err == nil && string(got) != contents[0] && string(got) != contents[1] {
				t.Errorf("reader saw a mixed or partial file of %d bytes", len(got))
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	readerWG.Wait()
	got, _ := os.ReadFile(filepath.Join(env.Workspace, "shared.txt"))
	if string(got) != contents[0] && string(got) != contents[1] {
		t.Fatalf("final file is mixed (%d bytes)", len(got))
	}
	twNoTempFiles(t, env.Workspace)
}

func TestEditFile(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	twWrite(t, filepath.Join(ws, "code.go"), "package main\n\nfunc a() {}\nfunc b() {}\n// dup\n// dup\n")
	if err := os.Chmod(filepath.Join(ws, "code.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	twCheck(t, EditFile{}, env, []twCase{
		{name: "once", args: m{"path": "code.go", "old_string": "func a() {}", "new_string": "func a() { return }"},
			contain: []string{"edited code.go: replaced 1 occurrence at line 3"}},
		{name: "zero times", args: m{"path": "code.go", "old_string": "func c()", "new_string": "x"}, wantErr: "not found in code.go (0 occurrences)"},
		{name: "two times", args: m{"path": "code.go", "old_string": "// dup", "new_string": "x"}, wantErr: "occurs 2 times in code.go"},
		{name: "empty old", args: m{"path": "code.go", "old_string": "", "new_string": "x"}, wantErr: "old_string is empty"},
		{name: "missing file", args: m{"path": "nope.go", "old_string": "a", "new_string": "b"}, wantErr: "no such file"},
		{name: "escape", args: m{"path": "../outside/secret", "old_string": "top", "new_string": "x"}, wantErr: "escapes the workspace"},
		{name: "symlink out", args: m{"path": "link_out/secret", "old_string": "top", "new_string": "x"}, wantErr: "escapes the workspace through a symlink"},
		{name: "missing new_string", args: m{"path": "code.go", "old_string": "a"}, wantErr: `missing required argument "new_string"`},
	})
	got, _ := os.ReadFile(filepath.Join(ws, "code.go"))
	if want := "package main\n\nfunc a() { return }\nfunc b() {}\n// dup\n// dup\n"; string(got) != want {
		t.Fatalf("after edits: %q, want %q", got, want)
	}
	if st, _ := os.Stat(filepath.Join(ws, "code.go")); st.Mode().Perm() != 0o755 {
		t.Errorf("edit changed mode to %v, want 0755 kept", st.Mode().Perm())
	}
	twNoTempFiles(t, ws)
}

func TestWriteDescribers(t *testing.T) {
	env, _ := twLayout(t)
	ws := env.Workspace
	tests := []struct {
		d    Describer
		args string
		want string
	}{
		{WriteFile{}, `{"path":"n.txt","content":"abc"}`, "write_file: " + ws + "/n.txt (3 bytes, new file)"},
		{WriteFile{}, `{"path":"dir/file.txt","content":""}`, "write_file: " + ws + "/dir/file.txt (0 bytes, overwrite)"},
		{WriteFile{}, `{"path":"../x","content":""}`, `write_file: path "../x" escapes the workspace`},
		{EditFile{}, `{"path":"dir/file.txt","old_string":"he","new_string":"HE!"}`, "edit_file: " + ws + "/dir/file.txt (replace 2 bytes with 3 bytes)"},
		{EditFile{}, `{"path":1}`, `edit_file: argument "path": want a string, got a number`},
	}
	for _, tt := range tests {
		if got := tt.d.Describe(env, json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Describe(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestJq(t *testing.T) {
	env, _ := twLayout(t)
	twWrite(t, filepath.Join(env.Workspace, "data.json"), `{"items":[{"name":"a","ok":true},{"name":"b","ok":false}],"big":12345678901234567890}`)
	twWrite(t, filepath.Join(env.Workspace, "bad.json"), `{"items":`)
	t.Setenv("TACT_JQ_SECRET", "leak")
	twCheck(t, Jq{}, env, []twCase{
		{name: "input", args: m{"filter": ".a", "input": `{"a":{"b":[1,2]}}`}, want: "{\"b\":[1,2]}\n"},
		{name: "stream of results", args: m{"filter": ".[]", "input": `[1,"x",null]`}, want: "1\n\"x\"\nnull\n"},
		{name: "stream of inputs", args: m{"filter": ".n", "input": `{"n":1} {"n":2}`}, want: "1\n2\n"},
		{name: "path", args: m{"filter": `.items[] | select(.ok) | .name`, "path": "data.json"}, want: "\"a\"\n"},
		{name: "big int kept", args: m{"filter": ".big", "path": "data.json"}, want: "12345678901234567890\n"},
		{name: "no results", args: m{"filter": "empty", "input": `1`}, want: ""},
		{name: "env hidden", args: m{"filter": "$ENV.TACT_JQ_SECRET", "input": `null`}, want: "null\n"},
		{name: "endless output capped", args: m{"filter": "repeat(1)", "input": `null`}, contain: []string{"[jq: output cut at"}},
		{name: "compile error", args: m{"filter": ".[", "input": `{}`}, wantErr: "bad filter"},
		{name: "unknown function", args: m{"filter": "nosuchfn", "input": `{}`}, wantErr: "bad filter"},
		{name: "runtime error", args: m{"filter": ".a.b", "input": `{"a":1}`}, wantErr: "jq: expected an object"},
		{name: "bad input", args: m{"filter": ".", "input": `{`}, wantErr: "input is not valid JSON"},
		{name: "empty input", args: m{"filter": ".", "input": ``}, wantErr: "no JSON value"},
		{name: "bad file", args: m{"filter": ".", "path": "bad.json"}, wantErr: "bad.json is not valid JSON"},
		{name: "both", args: m{"filter": ".", "input": "1", "path": "data.json"}, wantErr: "exactly one of input and path"},
		{name: "neither", args: m{"filter": "."}, wantErr: "exactly one of input and path"},
		{name: "escape", args: m{"filter": ".", "path": "../outside/secret"}, wantErr: "escapes the workspace"},
		{name: "missing file", args: m{"filter": ".", "path": "nope.json"}, wantErr: "no such file"},
	})
}

func TestJqTimeout(t *testing.T) {
	env, _ := twLayout(t)
	env.ToolTimeout = 200 * time.Millisecond
	start := time.Now()
	res := twRun(t, Jq{}, env, m{"filter": "last(range(1e12))", "input": "null"})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "jq: evaluation exceeded 200ms") {
		t.Fatalf("Err = %v, want a timeout", res.Err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

func twStat(t testing.TB, path string) os.FileInfo {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
