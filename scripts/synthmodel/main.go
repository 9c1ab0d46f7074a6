// Command synthmodel writes a random-weight GGUF model for tests and
// benchmarks:
//
//	go run ./scripts/synthmodel -out FILE [-arch llama|qwen35|gemma4] [-size tiny|small|bench] [-seed N]
//
// llama comes in every size; qwen35 (Qwen3.5) and gemma4 (Gemma 4), which
// only a current llama.cpp loads, in tiny and small.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tactcli/tact/internal/synth"
)

const usage = "usage: synthmodel -out FILE [-arch llama|qwen35|gemma4] [-size tiny|small|bench] [-seed N]"

func main() {
	out := flag.String("out", "", "output GGUF file (required)")
	arch := flag.String("arch", string(synth.Llama), "architecture: llama, qwen35 or gemma4")
	size := flag.String("size", string(synth.Tiny), "model size: tiny, small or bench (llama only)")
	seed := flag.Int64("seed", 1, "weight seed; the same seed writes the same bytes")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	a, err := synth.ParseArch(*arch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "synthmodel:", err)
		os.Exit(2)
	}
	z, err := synth.ParseSize(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "synthmodel:", err)
		os.Exit(2)
	}
	m := synth.Model{Arch: a, Size: z}
	if err := m.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "synthmodel:", err)
		os.Exit(2)
	}
	if err := m.Write(*out, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "synthmodel:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s %s model, %d parameters\n", *out, a, z, m.Params())
}
