package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tactcli/tact/redact/redacttest"
)

// The capture buffer's head/tail cuts never split a secret, at either edge
// (regression: a secret straddling run_command's 32 KiB head leaked in part).
func TestCapBufferKeepsSecretsWhole(t *testing.T) {
	r := redacttest.Redactor(t, `pin-[0-9]{4,}`)
	const limit = 64
	for _, secret := range []string{redacttest.Secret, "pin-12345678901234"} {
		for off := 0; off < 2*limit; off++ {
			stream := strings.Repeat("A", off) + secret + strings.Repeat("B", 3*limit)
			for _, chunk := range []int{1, 7, len(stream)} {
				c := newCapBuffer(limit, r)
				for i := 0; i < len(stream); i += chunk {
					c.Write([]byte(stream[i:min(len(stream), i+chunk)]))
				}
				got := r.Redact(c.String())
				if leaked := redacttest.LeakedPart(got, secret); leaked != "" {
					t.Fatalf("secret %q at %d, writes of %d: %q survives in %q", secret, off, chunk, leaked, got)
				}
			}
		}
	}
	// The tail edge: the secret straddles the start of the kept tail.
	for off := 0; off < limit; off++ {
		stream := strings.Repeat("A", 4*limit) + redacttest.Secret + strings.Repeat("B", off)
		c := newCapBuffer(limit, r)
		c.Write([]byte(stream))
		got := r.Redact(c.String())
		if leaked := redacttest.LeakedPart(got, redacttest.Secret); leaked != "" {
			t.Fatalf("tail, %d B after: %q survives in %q", off, leaked, got)
		}
		if !strings.Contains(got, "bytes cut") {
			t.Fatalf("not cut: %q", got)
		}
	}
}

// read_file's cap and search_files' line cut end before a secret that
// straddles them.
func TestFileToolCutsKeepSecretsWhole(t *testing.T) {
	ws := t.TempDir()
	env, err := NewEnv(ws)
	if err != nil {
		t.Fatal(err)
	}
	env.Redactor = redacttest.Redactor(t)
	env.ReadCap = 100
	for off := 90; off < 100; off++ {
		content := strings.Repeat("A", off) + redacttest.Secret + strings.Repeat("B", 200) + "\n"
		if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		res := ReadFile{}.Run(context.Background(), env, json.RawMessage(`{"path":"f.txt"}`))
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if leaked := redacttest.LeakedPart(env.Redactor.Redact(res.Output), redacttest.Secret); leaked != "" {
			t.Fatalf("read_file, secret at %d: %q survives in %q", off, leaked, res.Output)
		}
		if !strings.HasPrefix(res.Output, strings.Repeat("A", off)+"\n[read_file: output cut") {
			t.Fatalf("read_file, secret at %d: output %q, want the As then the cut note", off, res.Output)
		}
	}
	env.ReadCap = 0
	content := strings.Repeat("A", maxSearchLineLen-5) + redacttest.Secret + " needle\n"
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	res := SearchFiles{}.Run(context.Background(), env, json.RawMessage(`{"pattern":"needle","path":"f.txt"}`))
	if leaked := redacttest.LeakedPart(env.Redactor.Redact(res.Output), redacttest.Secret); leaked != "" || res.Err != nil {
		t.Fatalf("search_files: %q survives in %q (err %v)", leaked, res.Output, res.Err)
	}
}
