package main

import (
	"os"
	"testing"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/llm/llamalib"
	"github.com/tactcli/tact/models"
)

// The runtime's quantizer makes a Q4_K_M copy of a generated model once:
// a smaller GGUF that says Q4_K_M, named by the runtime's release, kept for
// the next call.
func TestQuantizeSynth(t *testing.T) {
	dir := os.Getenv("TACT_RUNTIME_DIR")
	if dir == "" {
		t.Skip("TACT_RUNTIME_DIR is not set: no llama.cpp runtime to quantize with")
	}
	lib, err := llamalib.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	m := synth.Model{Arch: synth.Llama, Size: synth.Small}
	path, err := quantizeSynth(lib, cache, m, "q4_k_m", llamalib.FtypeMostlyQ4_K)
	if err != nil {
		t.Fatal(err)
	}
	info, err := models.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	q8, err := models.Inspect(synth.Cached(t, synth.Small))
	if err != nil {
		t.Fatal(err)
	}
	if info.Quantization != "Q4_K_M" || info.Size >= q8.Size || info.Architecture != "llama" {
		t.Errorf("quantized model: %+v (Q8_0: %d bytes)", info, q8.Size)
	}
	st1, _ := os.Stat(path)
	again, err := quantizeSynth(lib, cache, m, "q4_k_m", llamalib.FtypeMostlyQ4_K)
	st2, _ := os.Stat(again)
	if err != nil || again != path || !st1.ModTime().Equal(st2.ModTime()) {
		t.Errorf("second call: %s, %v (first %s): want the cached file", again, err, path)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 1 {
		t.Errorf("cache holds %d entries, want the model only", len(entries))
	}
	if _, err := benchModel("q5"); err == nil {
		t.Error("benchModel accepted -quant q5")
	}
}
