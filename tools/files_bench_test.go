package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The file-tool benchmarks measure one call's cost, so a change to how paths
// are resolved or files are written shows up in numbers.

func benchRun(b *testing.B, tool Tool, env *Env, args any) {
	raw, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if res := tool.Run(ctx, env, raw); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}

func BenchmarkReadFile(b *testing.B) {
	env, _ := twLayout(b)
	twWrite(b, filepath.Join(env.Workspace, "dir", "bench.txt"), strings.Repeat("line of text\n", 300))
	benchRun(b, ReadFile{}, env, m{"path": "dir/bench.txt"})
}

func BenchmarkWriteFile(b *testing.B) {
	env, _ := twLayout(b)
	benchRun(b, WriteFile{}, env, m{"path": "dir/bench.txt", "content": strings.Repeat("line of text\n", 300)})
}
