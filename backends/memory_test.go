package backends

import (
	"regexp"
	"testing"

	"github.com/tactcli/tact/config"
	"github.com/tactcli/tact/internal/synth"
)

// Regression (was a bug; fixed) (backend_llama.go checkMemory): --ctx-size
// 2000000000 made llama.cpp allocate 9 GB and on. Now the KV cache is
// estimated from the model's metadata and a context that cannot fit in the
// memory available is refused with one line naming the flag (or variable).
func TestCtxSizeMustFitInMemory(t *testing.T) {
	path, err := synth.Ensure(synth.CacheDir(), synth.Tiny)
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func() (uint64, error)) { AvailableMemory = f }(AvailableMemory)
	AvailableMemory = func() (uint64, error) { return 256 << 20, nil }

	s := config.Defaults()
	s.CtxSize = 8192
	if err := checkMemory(s, path, nil); err != nil {
		t.Fatalf("a small context was refused: %v", err)
	}
	s.CtxSize = config.MaxCtxSize
	err = checkMemory(s, path, func(string) string { return "--ctx-size" })
	want := regexp.MustCompile(`^--ctx-size 16777216: needs about [0-9.]+ GiB \(model [0-9]+ KiB, KV cache [0-9.]+ GiB, buffers [0-9.]+ [GM]iB\) but 256 MiB of memory is available; lower --ctx-size$`)
	if err == nil || !want.MatchString(err.Error()) {
		t.Fatalf("got %v", err)
	}
	err = checkMemory(s, path, func(string) string { return "TACT_CTX_SIZE=16777216 (--ctx-size)" })
	if err == nil || !regexp.MustCompile(`^TACT_CTX_SIZE=16777216 \(--ctx-size\): needs about `).MatchString(err.Error()) {
		t.Fatalf("got %v", err)
	}
}
