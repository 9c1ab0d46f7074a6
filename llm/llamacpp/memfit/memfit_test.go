package memfit

import (
	"testing"

	"github.com/tactcli/tact/internal/synth"
)

func TestEstimate(t *testing.T) {
	// A qwen2.5-0.5b-like shape: 24 layers, 2 KV heads of 64+64, 14 heads.
	heads := make([]uint64, 24)
	for i := range heads {
		heads[i] = 2
	}
	sh := Shape{Layers: 24, HeadsKV: heads, Heads: 14, KeyLen: 64, ValueLen: 64, Embedding: 896, Vocab: 151936}
	n := sh.Estimate(500<<20, 8192, 512, "f16", false)
	if n.KV != 8192*24*2*128*2 { // 96 MiB
		t.Fatalf("KV %d", n.KV)
	}
	if n.Compute != 4*8192*512*14+4*512*(896+151936) {
		t.Fatalf("compute %d", n.Compute)
	}
	if q := sh.Estimate(0, 8192, 512, "q8_0", true); q.KV != uint64(float64(8192*24*2*128)*34/32) || q.Compute != 4*512*(896+151936) {
		t.Fatalf("q8_0 with flash attention: %+v", q)
	}
	if n.Total() != n.Weights+n.KV+n.Compute {
		t.Fatal("total")
	}
}

func TestReadShape(t *testing.T) {
	path, err := synth.Ensure(synth.CacheDir(), synth.Tiny)
	if err != nil {
		t.Fatal(err)
	}
	sh, info, err := ReadShape(path)
	if err != nil {
		t.Fatal(err)
	}
	// internal/synth's tiny model: 2 layers, 4 heads (2 for K/V) of 16, 512 tokens.
	if sh.Layers != 2 || len(sh.HeadsKV) != 2 || sh.HeadsKV[0] != 2 || sh.Heads != 4 || sh.KeyLen != 16 || sh.ValueLen != 16 || sh.Vocab != 512 || info.Size == 0 {
		t.Fatalf("%+v %+v", sh, info)
	}
	if _, _, err := ReadShape(path + ".missing"); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestAvailableAndSize(t *testing.T) {
	if n, err := Available(); err != nil || n == 0 {
		t.Fatalf("%d %v", n, err)
	}
	for n, want := range map[uint64]string{512: "512 bytes", 2048: "2 KiB", 262 << 20: "262 MiB", 9 << 30: "9.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
