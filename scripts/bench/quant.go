package main

// The bench model in other quantizations than synth's own Q8_0: llama.cpp's
// quantizer (llama_model_quantize, through the runtime's libllama) makes
// them from synth's F16 copy of the same weights, as people make theirs.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/llm/llamalib"
	"github.com/tactcli/tact/llm/llamaruntime"
)

var (
	quantFlag   = flag.String("quant", "q8_0", "the generated bench model's quantization: q8_0 (synth's own) or q4_k_m (made by the runtime's quantizer)")
	runtimeFlag = flag.String("runtime", os.Getenv("TACT_RUNTIME_DIR"), "llama.cpp runtime directory whose quantizer makes the q4_k_m bench model (default $TACT_RUNTIME_DIR, else the one tact uses)")
)

// benchQuants maps -quant to llama.cpp's file type (0: synth writes it).
var benchQuants = map[string]int32{"q8_0": 0, "q4_k_m": llamalib.FtypeMostlyQ4_K}

// benchModel returns the generated bench model in quantization quant,
// making it once into synth.CacheDir(): a quantized file is named by the
// runtime's llama.cpp release as well, since another release may quantize
// differently.
func benchModel(quant string) (string, error) {
	ftype, ok := benchQuants[strings.ToLower(quant)]
	if !ok {
		return "", fmt.Errorf("-quant %q: want q8_0 or q4_k_m", quant)
	}
	if ftype == 0 {
		progress("generating the bench model into %s (once)", synth.CacheDir())
		return synth.Ensure(synth.CacheDir(), synth.Bench)
	}
	dir := *runtimeFlag
	if dir == "" {
		r, err := llamaruntime.Locate(llamaruntime.LocateOptions{})
		if err != nil {
			return "", fmt.Errorf("-quant %s: the quantizer is the runtime's: %w", quant, err)
		}
		dir = r.Dir
	}
	lib, err := llamalib.Open(dir, "")
	if err != nil {
		return "", err
	}
	return quantizeSynth(lib, synth.CacheDir(), synth.Model{Arch: synth.Llama, Size: synth.Bench}, quant, ftype)
}

// quantizeSynth makes model m of type ftype in dir (named by quant) from
// synth's F16 copy, unless it is there already.
func quantizeSynth(lib *llamalib.Lib, dir string, m synth.Model, quant string, ftype int32) (string, error) {
	name := strings.TrimSuffix(m.FileName(), ".gguf") + "-" + strings.ToLower(quant) + "-llama.cpp-" + lib.Version() + ".gguf"
	path := filepath.Join(dir, name)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".quant-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	progress("making the %s %s model with llama.cpp %s's quantizer into %s (once)", quant, m, lib.Version(), dir)
	src := filepath.Join(tmp, "f16.gguf")
	if err := m.WriteF16(src, 1); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "out.gguf")
	if err := lib.Quantize(src, out, ftype, 0); err != nil {
		return "", err
	}
	if err := os.Rename(out, path); err != nil {
		return "", err
	}
	return path, nil
}
