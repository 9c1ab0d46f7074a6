package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFileToolsSymlinkSwapRace is the regression test for the
// check-then-open escape: while a goroutine keeps exchanging the directory d
// with a symlink to ../outside (renameat2 RENAME_EXCHANGE, atomic), every
// file tool is run on paths under d many times. No call may ever read, list,
// search or change anything outside the workspace.
func TestFileToolsSymlinkSwapRace(t *testing.T) {
	const (
		iterations = 300
		maxTime    = 4 * time.Second
		outsideTag = "OUTSIDE-SECRET"
	)
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	ws := filepath.Join(root, "ws")
	for _, d := range []string{outside, filepath.Join(ws, "d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outsideFiles := map[string]string{
		"secret.txt":       outsideTag + "\n",
		"data.json":        `{"where":"` + outsideTag + `"}`,
		"only_outside.txt": outsideTag + "\n",
	}
	for name, content := range outsideFiles {
		twWrite(t, filepath.Join(outside, name), content)
	}
	twWrite(t, filepath.Join(ws, "d", "secret.txt"), "inside\n")
	twWrite(t, filepath.Join(ws, "d", "data.json"), `{"where":"inside"}`)
	if err := os.Symlink("../outside", filepath.Join(ws, "l")); err != nil {
		t.Fatal(err)
	}
	env, err := NewEnv(ws)
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		dPath, lPath := filepath.Join(ws, "d"), filepath.Join(ws, "l")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, dPath, unix.AT_FDCWD, lPath, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
			swaps.Add(1)
		}
	}()

	type call struct {
		tool Tool
		args func(i int) any
	}
	calls := []call{
		{ReadFile{}, func(int) any { return m{"path": "d/secret.txt"} }},
		{WriteFile{}, func(i int) any { return m{"path": fmt.Sprintf("d/w%d.txt", i), "content": "new"} }},
		{WriteFile{}, func(int) any { return m{"path": "d/secret.txt", "content": "inside\n"} }},
		{EditFile{}, func(int) any { return m{"path": "d/secret.txt", "old_string": outsideTag, "new_string": "pwned"} }},
		{ListFiles{}, func(int) any { return m{"path": "d"} }},
		// The pattern is written so its echo in "no matches for" is no leak.
		{SearchFiles{}, func(int) any { return m{"pattern": "OUTSIDE-SECRE[T]", "path": "d"} }},
		{SearchFiles{}, func(int) any { return m{"pattern": "OUTSIDE-SECRE[T]", "path": "d/secret.txt"} }},
		{Jq{}, func(int) any { return m{"filter": ".where", "path": "d/data.json"} }},
	}
	start := time.Now()
	ran, failed := 0, 0
	succeeded := map[string]int{}
	var leaks []string
	for i := 0; i < iterations && time.Since(start) < maxTime; i++ {
		for _, c := range calls {
			args := c.args(i)
			res := twRun(t, c.tool, env, args)
			ran++
			if res.Err != nil {
				failed++
			} else {
				succeeded[c.tool.Name()]++
			}
			shown := res.Output
			if res.Err != nil {
				shown += " " + res.Err.Error()
			}
			if strings.Contains(shown, outsideTag) || strings.Contains(shown, "only_outside") || strings.Contains(shown, outside) {
				b, _ := json.Marshal(args)
				leaks = append(leaks, fmt.Sprintf("%s %s: %q", c.tool.Name(), b, shown))
			}
		}
	}
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()

	t.Logf("%d tool calls (%d refused or failed; succeeded: %v) in %v against %d swaps",
		ran, failed, succeeded, elapsed.Round(time.Millisecond), swaps.Load())
	if swaps.Load() < 100 {
		t.Errorf("only %d swaps happened; the race was not exercised", swaps.Load())
	}
	for i, l := range leaks {
		if i == 10 {
			t.Errorf("... %d more", len(leaks)-10)
			break
		}
		t.Errorf("saw outside content: %s", l)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"data.json", "only_outside.txt", "secret.txt"}; !slices.Equal(names, want) {
		t.Errorf("files outside the workspace = %v, want only %v", names, want)
	}
	for name, want := range outsideFiles {
		if got, _ := os.ReadFile(filepath.Join(outside, name)); string(got) != want {
			t.Errorf("outside %s changed to %q", name, got)
		}
	}
}

// TestFileToolsFIFOSwapNeverBlocks swaps a file and a directory with FIFOs
// while the tools work on them: every call must return (refused or not),
// never block opening a FIFO that no one writes.
func TestFileToolsFIFOSwapNeverBlocks(t *testing.T) {
	const (
		iterations = 200
		maxTime    = 3 * time.Second
	)
	env, _ := twLayout(t)
	ws := env.Workspace
	twWrite(t, filepath.Join(ws, "f.json"), `{"a":1}`)
	twWrite(t, filepath.Join(ws, "dir", "g.txt"), "needle\n")
	for _, name := range []string{"fifo1", "fifo2"} {
		if err := unix.Mkfifo(filepath.Join(ws, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pairs := [][2]string{{"f.json", "fifo1"}, {"dir", "fifo2"}}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := pairs[i%2]
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, p[0]), unix.AT_FDCWD, filepath.Join(ws, p[1]), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
		}
	}()
	calls := []struct {
		tool Tool
		args any
	}{
		{ReadFile{}, m{"path": "f.json"}},
		{Jq{}, m{"filter": ".a", "path": "f.json"}},
		{EditFile{}, m{"path": "f.json", "old_string": "1", "new_string": "1"}},
		{WriteFile{}, m{"path": "f.json", "content": `{"a":1}`}},
		{SearchFiles{}, m{"pattern": "needle", "path": "f.json"}},
		{SearchFiles{}, m{"pattern": "needle", "path": "dir"}},
		{SearchFiles{}, m{"pattern": "needle"}},
		{ListFiles{}, m{"path": "dir"}},
		{WriteFile{}, m{"path": "dir/new.txt", "content": "x"}},
		{ReadFile{}, m{"path": "dir/g.txt"}},
	}
	done := make(chan int, 1)
	go func() {
		start, n := time.Now(), 0
		for i := 0; i < iterations && time.Since(start) < maxTime; i++ {
			for _, c := range calls {
				twRun(t, c.tool, env, c.args)
				n++
			}
		}
		done <- n
	}()
	select {
	case n := <-done:
		t.Logf("%d tool calls returned", n)
	case <-time.After(maxTime + 10*time.Second):
		t.Fatal("a file tool blocked on a FIFO swapped in")
	}
	close(stop)
	wg.Wait()
}
