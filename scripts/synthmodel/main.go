// Command synthmodel writes a random-weight llama GGUF model for tests and
// benchmarks:
//
//	go run ./scripts/synthmodel -out FILE -size tiny|small|bench [-seed N]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tactcli/tact/internal/synth"
)

func main() {
	out := flag.String("out", "", "output GGUF file (required)")
	size := flag.String("size", string(synth.Tiny), "model size: tiny, small or bench")
	seed := flag.Int64("seed", 1, "weight seed; the same seed writes the same bytes")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: synthmodel -out FILE [-size tiny|small|bench] [-seed N]")
		os.Exit(2)
	}
	z, err := synth.ParseSize(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "synthmodel:", err)
		os.Exit(2)
	}
	if err := synth.Write(*out, z, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "synthmodel:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s model, %d parameters\n", *out, z, z.Params())
}
