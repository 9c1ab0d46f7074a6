package tools

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStatPath(t *testing.T) {
	env, outside := twLayout(t)
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := filepath.Join(env.Workspace, "dir", "file.txt")
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, when, when); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(env.Workspace, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileText := "path: dir/file.txt\ntype: regular file\nsize: 6 bytes\nmode: 0640 (-rw-r-----)\nmodified: 2026-01-02T03:04:05Z\n"
	twCheck(t, StatPath{}, env, []twCase{
		{name: "file", args: map[string]any{"path": "dir/file.txt"}, want: fileText},
		{name: "cleaned", args: map[string]any{"path": "./dir//x/../file.txt"}, want: fileText},
		{name: "absolute inside", args: map[string]any{"path": file}, want: fileText},
		{name: "link inside is resolved", args: map[string]any{"path": "link_in/file.txt"}, want: fileText},
		{name: "directory", args: map[string]any{"path": "dir"}, contain: []string{"path: dir\n", "type: directory\n", "mode: 0"}},
		{name: "workspace", args: map[string]any{"path": "."}, contain: []string{"path: .\n", "type: directory\n"}},
		{name: "fifo does not block", args: map[string]any{"path": "fifo"}, contain: []string{"type: named pipe (FIFO)\n", "mode: 0600"}},
		{name: "dot-dot", args: map[string]any{"path": "../outside/secret"}, wantErr: `stat_path: path "../outside/secret" escapes the workspace`},
		{name: "absolute outside", args: map[string]any{"path": filepath.Join(outside, "secret")}, wantErr: "escapes the workspace"},
		{name: "link leading out", args: map[string]any{"path": "link_out/secret"}, wantErr: "escapes the workspace through a symlink"},
		{name: "absolute link out", args: map[string]any{"path": "abs_out"}, wantErr: "escapes the workspace through a symlink"},
		{name: "missing", args: map[string]any{"path": "nope"}, wantErr: "stat_path: nope"},
		{name: "no path", args: map[string]any{}, wantErr: "path"},
		{name: "unknown argument", args: map[string]any{"path": "dir", "follow": true}, wantErr: "follow"},
	})
}

// A refusal names the path as given, never where a link leading out
// points, nor anything of the file there.
func TestStatPathTellsNothingOutside(t *testing.T) {
	env, _ := twLayout(t)
	for _, p := range []string{"link_out/secret", "abs_out"} {
		res := twRun(t, StatPath{}, env, map[string]any{"path": p})
		if res.Err == nil || res.Output != "" {
			t.Fatalf("%s: output %q, err %v; want a refusal", p, res.Output, res.Err)
		}
		if msg := res.Err.Error(); strings.Contains(msg, "outside") || strings.Contains(msg, "bytes") {
			t.Errorf("%s: refusal %q tells about the outside", p, msg)
		}
	}
}
