//go:build cgollama

package llamacpp

// Tests of the cgo provider's reach into the binding (provider_cgo.go,
// cgo_c.go, kvparams.go): layouts it depends on and what it refuses.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/llama"

	"github.com/tactcli/tact/internal/synth"
	"github.com/tactcli/tact/models"
)

// The binding's Context and Model still start with their C pointers
// (cContext, cModel reach them).
func TestBindingReach(t *testing.T) {
	for _, c := range []struct {
		v    any
		name string
	}{{llama.Context{}, "llama_context"}, {llama.Model{}, "llama_model"}} {
		ty := reflect.TypeOf(c.v)
		if ty.NumField() == 0 || ty.Field(0).Type.Kind() != reflect.Pointer || !strings.Contains(ty.Field(0).Type.String(), c.name) {
			t.Fatalf("%v no longer starts with its *%s: cgo_c.go reaches the wrong memory; update it for the binding", ty, c.name)
		}
	}
}

// setUnifiedKV (the bench's probe compares both caches) writes the
// binding's llama.h layout.
func TestUnifiedKVLayout(t *testing.T) {
	if !kvLayoutOK {
		t.Fatal("llama_context_params layout differs from kvparams.go's copy: update it for the binding's llama.h")
	}
}

// cgoArchs is the vendored llama.cpp's list of architectures.
func TestCgoArchs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "llama", "llama.cpp", "src", "llama-arch.cpp"))
	if err != nil {
		t.Skip(err)
	}
	s := string(src)
	s = s[strings.Index(s, "LLM_ARCH_NAMES"):]
	s = s[:strings.Index(s, "};")]
	var want []string
	for _, m := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(s, -1) {
		if m[1] != "clip" && m[1] != "(unknown)" {
			want = append(want, m[1])
		}
	}
	var got []string
	for a := range cgoArchs {
		got = append(got, a)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("cgoArchs differs from the vendored llama-arch.cpp:\n got %v\nwant %v", got, want)
	}
}

// The module named in the cgo provider's name and prompt-cache build id is
// the one go.mod requires.
func TestCgoModulePin(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/ollama/ollama (v\S+)`).FindSubmatch(data)
	if m == nil || "github.com/ollama/ollama "+string(m[1]) != ollamaModule {
		t.Fatalf("go.mod requires %q; provider_cgo.go's ollamaModule is %q", m, ollamaModule)
	}
}

// The 2026 architectures are refused before loading, in one line naming
// the architecture and the way to the runtime.
func TestCgoRefusesNewArchs(t *testing.T) {
	for _, arch := range []synth.Arch{synth.Qwen35, synth.Gemma4} {
		path := synth.CachedModel(t, synth.Model{Arch: arch, Size: synth.Tiny})
		_, err := New(Options{ModelPath: path, CtxSize: 256, Threads: 1, NoCPULock: true})
		if err == nil || !errors.Is(err, models.ErrBadModel) || !strings.Contains(err.Error(), `"`+string(arch)+`"`) ||
			!strings.Contains(err.Error(), "tact runtime install") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: New = %v; want one line, models.ErrBadModel, naming the architecture and `tact runtime install`", arch, err)
		}
	}
}

// The cause of the "every seed gives the same text" report: the binding's
// SamplingParams zero value has TypicalP 0, which keeps only the most likely
// token. Backend.sampler sets TypicalP 1.
func TestBindingTypicalPZeroIgnoresSeed(t *testing.T) {
	b := newTiny(t, nil)
	tokens, err := b.promptTokens(conversation(0))
	if err != nil {
		t.Fatal(err)
	}
	first := func(p llama.SamplingParams) int {
		idx := decodeDirect(t, b, tokens)
		sc, err := llama.NewSamplingContext(b.model.(*cgoModel).m, p)
		if err != nil {
			t.Fatal(err)
		}
		return sc.Sample(b.lc.(*cgoContext).lc, idx)
	}
	count := func(typicalP float32) int {
		seen := map[int]bool{}
		for seed := range uint32(10) {
			seen[first(llama.SamplingParams{Temp: 1, TopK: 0, TopP: 1, MinP: 0, TypicalP: typicalP, Seed: seed})] = true
		}
		return len(seen)
	}
	if n := count(0); n != 1 {
		t.Errorf("TypicalP 0: %d different first tokens over 10 seeds; the binding changed, revisit Backend.sampler", n)
	}
	if n := count(1); n < 3 {
		t.Errorf("TypicalP 1: only %d different first tokens over 10 seeds", n)
	}
}
