package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzToolArgs feeds arbitrary bytes as the arguments of every built-in
// tool in a temp workspace. Tools must never panic, must turn bad input into
// Result.Err, and must not create anything outside the workspace.
// run_command is not executed: only its decoding, splitting and working-dir
// resolution run (through Describe and parse).
func FuzzToolArgs(f *testing.F) {
	seeds := []string{
		`{"answer":"done"}`,
		`{"path":"dir/file.txt"}`,
		`{"path":"dir/file.txt","offset":1,"limit":1}`,
		`{"path":"."}`,
		`{"pattern":"h.llo","path":"."}`,
		`{"pattern":"(","path":"."}`,
		`{"path":"new/x.txt","content":"abc"}`,
		`{"path":"link_out/x","content":"abc"}`,
		`{"path":"../escape","content":"abc"}`,
		`{"path":"dir/file.txt","old_string":"hello","new_string":"bye"}`,
		`{"command":"ls -la 'a b'","working_dir":"dir"}`,
		`{"command":"echo \"unterminated"}`,
		`{"filter":".a[]","input":"{\"a\":[1,2]}"}`,
		`{"filter":"repeat(.)","input":"1"}`,
		`{"filter":".","path":"dir/file.txt"}`,
		`{"PATH":"x"}`, `null`, `[]`, `{"path":7}`, `{"path":"\u0000"}`, `{"offset":-1,"path":"a"}`, ``, `{`,
	}
	tools := Builtins()
	for i := range tools {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		root := t.TempDir()
		ws := filepath.Join(root, "ws")
		outside := filepath.Join(root, "outside")
		os.MkdirAll(filepath.Join(ws, "dir"), 0o755)
		os.MkdirAll(outside, 0o755)
		os.WriteFile(filepath.Join(ws, "dir", "file.txt"), []byte("hello\nworld\n"), 0o644)
		os.Symlink(outside, filepath.Join(ws, "link_out"))
		env, err := NewEnv(ws)
		if err != nil {
			t.Fatal(err)
		}
		env.ToolTimeout = 500 * time.Millisecond
		env.ReadCap = 1 << 16

		tool := tools[int(which)%len(tools)]
		raw := json.RawMessage(data)
		if d, ok := tool.(Describer); ok {
			_ = d.Describe(env, raw)
		}
		if rc, ok := tool.(RunCommand); ok {
			if cl, err := rc.parse(env, raw); err == nil {
				if len(cl.argv) == 0 || !insideDir(env.Workspace, cl.dir) {
					t.Fatalf("parse(%q) = %+v: empty argv or working dir outside", data, cl)
				}
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res := tool.Run(ctx, env, raw)
		if res.Err == nil && tool.Name() == FinalAnswer && !json.Valid(data) && len(data) > 0 {
			t.Fatalf("final_answer accepted invalid JSON %q", data)
		}
		entries, err := os.ReadDir(outside)
		if err != nil || len(entries) != 0 {
			t.Fatalf("%s(%q) wrote outside the workspace: %v %v", tool.Name(), data, entries, err)
		}
		top, _ := os.ReadDir(root)
		if len(top) != 2 {
			t.Fatalf("%s(%q) created %d entries next to the workspace", tool.Name(), data, len(top)-2)
		}
	})
}
