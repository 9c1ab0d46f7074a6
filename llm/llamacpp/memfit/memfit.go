// Package memfit estimates the memory a llama.cpp context needs for a model
// and context size, so tact can refuse a --ctx-size that cannot fit before
// llama.cpp starts allocating (2e9 tokens grew to 9 GB and on).
package memfit

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/tactcli/tact/models"

	"github.com/tactcli/tact/internal/filekind"
	"github.com/tactcli/tact/internal/text"
)

// Need is an estimate in bytes.
type Need struct {
	Weights uint64 // the model file (mmap'd, resident once used)
	KV      uint64 // the KV cache
	Compute uint64 // llama.cpp's compute buffers (attention scores, logits)
}

// Total is the sum.
func (n Need) Total() uint64 { return n.Weights + n.KV + n.Compute }

// Shape is the model metadata the estimate uses.
type Shape struct {
	Layers    uint64   // block_count
	HeadsKV   []uint64 // attention.head_count_kv per layer (0: no KV cache, e.g. recurrent)
	Heads     uint64   // attention.head_count (max over layers)
	KeyLen    uint64   // attention.key_length
	ValueLen  uint64   // attention.value_length
	Embedding uint64   // embedding_length
	Vocab     uint64   // rows of the output (or token embedding) matrix
}

// ReadShape validates the model file (models.Inspect) and reads its shape.
func ReadShape(path string) (Shape, *models.Info, error) {
	info, err := models.Inspect(path)
	if err != nil {
		return Shape{}, nil, err
	}
	// Inspect refused anything but a regular file; a FIFO swapped in since
	// is refused too, never waited on.
	f, err := filekind.Open(filekind.Spec{What: "model"}, path)
	if err != nil {
		return Shape{}, nil, err
	}
	defer f.Close()
	g, err := decode(f)
	if err != nil {
		return Shape{}, nil, fmt.Errorf("model %s: %v", path, err)
	}
	kv := g.KV()
	sh := Shape{
		Layers:    kv.BlockCount(),
		HeadsKV:   kv.HeadCountKV(),
		Heads:     kv.HeadCountMax(),
		KeyLen:    kv.EmbeddingHeadCountK(),
		ValueLen:  kv.EmbeddingHeadCountV(),
		Embedding: kv.EmbeddingLength(),
	}
	for _, name := range []string{"output.weight", "token_embd.weight"} {
		for _, t := range g.Tensors().Items(name) {
			if t.Name == name && len(t.Shape) >= 2 && sh.Vocab == 0 {
				sh.Vocab = t.Shape[1]
			}
		}
	}
	return sh, info, nil
}

// decode reads the GGUF header of a file models.Inspect has validated,
// turning a panic into an error all the same.
func decode(f *os.File) (g *ggml.GGML, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder failed: %v", r)
		}
	}()
	// Arrays up to 4096 entries (per-layer head counts); the vocabulary is skipped.
	return ggml.Decode(f, 4096)
}

// BytesPerElement of a KV cache type (ggml block sizes: q8_0 is 34 bytes
// per 32 values, q4_0 18).
func BytesPerElement(kvType string) float64 {
	switch strings.ToLower(kvType) {
	case "q8_0":
		return 34.0 / 32
	case "q4_0":
		return 18.0 / 32
	}
	return 2 // f16
}

// Estimate is what a context of ctx tokens with prompt batches of batch
// tokens needs: the KV cache holds ctx × (key + value length) × KV heads
// per layer; without flash attention the attention scores take ctx × batch
// × heads floats; logits take batch × vocabulary floats at most.
func (sh Shape) Estimate(weights int64, ctx, batch int, kvType string, flashAttn bool) Need {
	n := Need{Weights: uint64(max(weights, 0))}
	perToken := 0.0
	for _, h := range sh.HeadsKV {
		perToken += float64(h * (sh.KeyLen + sh.ValueLen))
	}
	n.KV = uint64(float64(ctx) * perToken * BytesPerElement(kvType))
	c, b := uint64(max(ctx, 0)), uint64(max(min(batch, ctx), 0))
	if !flashAttn {
		n.Compute += 4 * c * b * max(sh.Heads, 1)
	}
	n.Compute += 4 * b * (sh.Embedding + sh.Vocab)
	return n
}

// Available is the memory this process may still take: MemAvailable from
// /proc/meminfo, or what the cgroup (v2) allows beyond its current use when
// that is less.
func Available() (uint64, error) {
	avail, err := meminfo("MemAvailable")
	if err != nil {
		return 0, err
	}
	if lim, ok := cgroupRoom(); ok && lim < avail {
		avail = lim
	}
	return avail, nil
}

func meminfo(key string) (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no %s", key)
}

// cgroupRoom is memory.max - memory.current of this process's cgroup v2.
func cgroupRoom() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	line := strings.TrimSpace(string(b))
	path, ok := strings.CutPrefix(line, "0::")
	if !ok {
		return 0, false
	}
	dir := "/sys/fs/cgroup" + path
	read := func(name string) (uint64, bool) {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil // "max" means no limit
	}
	limit, ok := read("memory.max")
	if !ok {
		return 0, false
	}
	cur, _ := read("memory.current")
	if cur >= limit {
		return 0, true
	}
	return limit - cur, true
}

// Size formats bytes for messages: "9.3 GiB", "262 MiB".
func Size(n uint64) string { return text.BinarySize(n) }
