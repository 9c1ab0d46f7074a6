//go:build cgollama

package llamacpp

// The cgo provider (provider.go): the llama.cpp that
// github.com/ollama/ollama v0.17.4 vendors, compiled into tact (cgo, with
// the Makefile's flags: `make CGO_LLAMA=1`). Kept while the runtime proves
// itself; docs/inference.md says when it goes.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"

	"github.com/tactcli/tact/models"
)

// ProviderName is the llama.cpp this build runs: "cgo" here, "runtime"
// without -tags cgollama.
const ProviderName = "cgo"

// FlashAttnDefault is what --flash-attention auto means here: off. The
// vendored llama.cpp's CPU flash attention is slower than its plain
// attention (the same ReAct run as provider_lib.go's: 1.7x the CPU time
// with the cache cleared before each call); docs/inference.md.
const FlashAttnDefault = false

var prov provider = &cgoProvider{}

type cgoProvider struct {
	once   sync.Once
	libDir string
	devs   []llama.Devices
}

// init loads ggml's backends once per process: the CPU backend is
// compiled in; GPU backends are shared libraries loaded from the library
// directory, as ollama does. The binding reads the directory from
// OLLAMA_LIBRARY_PATH; tact sets it only for that moment so neither a
// user's ollama setting nor tact's choice leaks anywhere else.
func (p *cgoProvider) init(o Options) error {
	setLogs(o.Verbose)
	p.once.Do(func() {
		dir := o.LibDir
		if dir == "" {
			if exe, err := os.Executable(); err == nil {
				dir = filepath.Join(filepath.Dir(exe), "..", "lib", "ollama")
			}
		}
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		p.libDir = dir
		old, had := os.LookupEnv("OLLAMA_LIBRARY_PATH")
		os.Setenv("OLLAMA_LIBRARY_PATH", dir)
		llama.BackendInit()
		if had {
			os.Setenv("OLLAMA_LIBRARY_PATH", old)
		} else {
			os.Unsetenv("OLLAMA_LIBRARY_PATH")
		}
		p.devs = llama.EnumerateGPUs()
	})
	setLogs(o.Verbose) // loading backends may have reset ggml's logger
	return nil
}

func (p *cgoProvider) setLogs(verbose bool) { setLogs(verbose) }

func (p *cgoProvider) name() string {
	return "llama.cpp of " + ollamaModule + " (cgo)"
}

// ollamaModule is the module whose llama.cpp this provider compiles, as
// go.mod requires it (TestCgoModulePin keeps them equal).
const ollamaModule = "github.com/ollama/ollama v0.17.4"

var cgoBuildOnce = sync.OnceValue(func() string {
	id := "cgo, llama.cpp of " + ollamaModule
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return id
	}
	// A binary's build info also has the module's checksum (or its
	// replacement); a test binary's has no dependencies.
	for _, d := range bi.Deps {
		if d.Path == "github.com/ollama/ollama" {
			if d.Replace != nil {
				d = d.Replace
			}
			id += " (" + d.Path + " " + d.Version + " " + d.Sum + ")"
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOARCH", "GOAMD64", "GOARM64", "CGO_CFLAGS", "CGO_CXXFLAGS":
			id += ", " + s.Key + "=" + s.Value
		}
	}
	return id
})

// buildID: the llama.cpp module (go.mod pins it) and the flags it was
// compiled with.
func (p *cgoProvider) buildID() string { return cgoBuildOnce() }

func (p *cgoProvider) gpus() []string {
	var out []string
	for _, g := range p.devs {
		out = append(out, g.Library+" "+g.ID)
	}
	return out
}

// check refuses the architectures this llama.cpp (of late 2025) does not
// know: loading one fails deep in llama.cpp with only a log line.
func (p *cgoProvider) check(arch string) error {
	if arch == "" || cgoArchs[arch] {
		return nil
	}
	return fmt.Errorf("%w: architecture %q is unknown to the llama.cpp compiled into this tact (cgo build); build tact without CGO_LLAMA and run `tact runtime install` for a current llama.cpp", models.ErrBadModel, arch)
}

// cgoArchs are the architectures of the vendored llama-arch.cpp
// (LLM_ARCH_NAMES); TestCgoArchs compares them with the module's source.
var cgoArchs = func() map[string]bool {
	m := map[string]bool{}
	for _, a := range []string{
		"llama", "llama4", "deci", "falcon", "grok", "gpt2", "gptj", "gptneox",
		"mpt", "baichuan", "starcoder", "refact", "bert", "nomic-bert",
		"nomic-bert-moe", "neo-bert", "jina-bert-v2", "jina-bert-v3", "bloom",
		"stablelm", "qwen", "qwen2", "qwen2moe", "qwen2vl", "qwen3", "qwen3moe",
		"qwen3next", "qwen3vl", "qwen3vlmoe", "phi2", "phi3", "phimoe", "plamo",
		"plamo2", "codeshell", "orion", "internlm2", "minicpm", "minicpm3", "gemma",
		"gemma2", "gemma3", "gemma3n", "gemma-embedding", "starcoder2", "mamba",
		"mamba2", "jamba", "falcon-h1", "xverse", "command-r", "cohere2", "dbrx",
		"olmo", "olmo2", "olmoe", "openelm", "arctic", "deepseek", "deepseek2",
		"chatglm", "glm4", "glm4moe", "bitnet", "t5", "t5encoder", "jais",
		"nemotron", "nemotron_h", "nemotron_h_moe", "exaone", "exaone4", "rwkv6",
		"rwkv6qwen2", "rwkv7", "arwkv7", "granite", "granitemoe", "granitehybrid",
		"chameleon", "solar", "wavtokenizer-dec", "plm", "bailingmoe",
		"bailingmoe2", "dots1", "arcee", "afmoe", "ernie4_5", "ernie4_5-moe",
		"hunyuan-moe", "hunyuan-dense", "smollm3", "gpt-oss", "lfm2", "lfm2moe",
		"dream", "smallthinker", "llada", "llada-moe", "seed_oss", "grovemoe",
		"apertus", "minimax-m2", "cogvlm", "rnd1", "pangu-embedded", "mistral3",
	} {
		m[a] = true
	}
	return m
}()

func (p *cgoProvider) loadModel(path string, gpuLayers int) (rtModel, error) {
	m, err := llama.LoadModelFromFile(path, llama.ModelParams{NumGpuLayers: gpuLayers, UseMmap: true})
	if err != nil {
		return nil, err
	}
	return &cgoModel{m: m, gpus: len(p.devs) > 0}, nil
}

type cgoModel struct {
	m    *llama.Model
	gpus bool // a GPU backend is loaded: see free
}

func (m *cgoModel) Tokenize(text string, addSpecial, parseSpecial bool) ([]int, error) {
	return m.m.Tokenize(text, addSpecial, parseSpecial)
}
func (m *cgoModel) TokenToPiece(tok int) string { return m.m.TokenToPiece(tok) }
func (m *cgoModel) NumVocab() int               { return m.m.NumVocab() }
func (m *cgoModel) TokenIsEog(tok int) bool     { return m.m.TokenIsEog(tok) }
func (m *cgoModel) AddBOSToken() bool           { return m.m.AddBOSToken() }
func (m *cgoModel) layers() int                 { return modelLayers(m.m) }

func (m *cgoModel) free() {
	if m.gpus {
		return // see cgoContext.free
	}
	llama.FreeModel(m.m)
}

func (m *cgoModel) newContext(p ctxParams) (rtContext, error) {
	fa := ml.FlashAttentionDisabled
	if p.flashAttn {
		fa = ml.FlashAttentionAuto
	}
	params := llama.NewContextParams(p.cells, p.batch, p.seqs, p.threads, fa, p.kvType)
	if p.unified {
		if err := setUnifiedKV(&params, true); err != nil {
			return nil, err
		}
	}
	lc, err := llama.NewContextWithModel(m.m, params)
	if err != nil {
		return nil, err
	}
	return &cgoContext{lc: lc, abort: newAbortFlag(lc), nVocab: m.m.NumVocab(), gpus: m.gpus}, nil
}

func (m *cgoModel) newChain(steps []samplerStep) (rtSampler, error) {
	if s := newCChain(steps); s != nil {
		return s, nil
	}
	return nil, errors.New("llama.cpp cannot make a sampler chain")
}

func (m *cgoModel) newGrammar(gbnf string) rtSampler { return newCGrammar(m.m, gbnf) }

func (m *cgoModel) newCandidates() (rtCandidates, error) { return newCCandidates(m.m.NumVocab()) }

type cgoContext struct {
	lc     *llama.Context
	abort  abortFlag
	pool   threadPool
	nVocab int
	gpus   bool
}

func (c *cgoContext) Decode(b rtBatch) error {
	err := c.lc.Decode(b.(*cgoBatch).b)
	switch {
	case err == nil:
		return nil
	case c.abort.isSet():
		// The binding reports an abort (status 2) as ErrKvCacheFull.
		return errAborted
	case errors.Is(err, llama.ErrKvCacheFull):
		return errKVFull
	}
	return err
}

func (c *cgoContext) KvCacheSeqRm(seq, p0, p1 int) bool { return c.lc.KvCacheSeqRm(seq, p0, p1) }
func (c *cgoContext) KvCacheSeqCp(src, dst, p0, p1 int) { c.lc.KvCacheSeqCp(src, dst, p0, p1) }
func (c *cgoContext) logits(i int) []float32            { return logitsIth(c.lc, i, c.nVocab) }
func (c *cgoContext) setThreads(n int)                  { setThreads(c.lc, n) }
func (c *cgoContext) attachPool(n int) error {
	if c.pool = attachPool(c.lc, n); c.pool.p == nil {
		return errors.New("ggml cannot start a threadpool")
	}
	return nil
}
func (c *cgoContext) setAbort(on bool)                 { c.abort.set(on) }
func (c *cgoContext) aborting() bool                   { return c.abort.isSet() }
func (c *cgoContext) stateSize(seq int) int            { return seqStateSize(c.lc, seq) }
func (c *cgoContext) stateGet(seq int, buf []byte) int { return seqStateGet(c.lc, seq, buf) }
func (c *cgoContext) stateSet(seq int, buf []byte) int { return seqStateSet(c.lc, seq, buf) }
func (c *cgoContext) shape() (int, int)                { return contextShape(c.lc) }

func (c *cgoContext) newBatch(size int) (rtBatch, error) {
	b, err := llama.NewBatch(size, 1, 0)
	if err != nil {
		return nil, err
	}
	return &cgoBatch{b}, nil
}

// free releases the context, except when a GPU backend is loaded:
// freeing a context whose backends include a GPU's crashes the process
// (ollama's patched ggml_backend_sched_free calls each backend's reset,
// and llama_context frees its backends before its scheduler, so CUDA's
// reset runs on a freed backend: SIGSEGV in ggml_backend_cuda_reset, seen
// on an H100 with CUDA 13.0, also with --gpu-layers 0). The binding itself
// never frees a context: ollama's runner exits. A Backend lives as long as
// its process, so what is left goes with the process.
func (c *cgoContext) free() {
	if c.gpus {
		slog.Debug("llama backend: context and model left to process exit (GPU backend loaded)")
		return
	}
	freeContext(c.lc, c.abort)
	c.pool.free()
}

type cgoBatch struct{ b *llama.Batch }

func (b *cgoBatch) Clear()         { b.b.Clear() }
func (b *cgoBatch) NumTokens() int { return b.b.NumTokens() }
func (b *cgoBatch) free()          { b.b.Free() }
func (b *cgoBatch) Add(tok, pos int, logits bool, seq int) {
	b.b.Add(tok, nil, pos, logits, seq)
}
