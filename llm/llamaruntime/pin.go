// Package llamaruntime installs, checks and finds tact's llama.cpp runtime:
// the prebuilt llama.cpp shared libraries that node-llama-cpp ships on npm,
// pinned here by package name, version and sha512 integrity, or a native
// build of the same llama.cpp release (docs/runtime.md).
//
// A runtime is a directory of shared libraries, their licence and a
// manifest (manifest.json) under $XDG_DATA_HOME/tact/runtime:
//
//	runtime/3.22.1/          the prebuilt CPU libraries (@node-llama-cpp/linux-x64)
//	runtime/3.22.1-cuda/     the prebuilt CUDA libraries (@node-llama-cpp/linux-x64-cuda)
//	runtime/3.22.1-native/   tact runtime build: the same release built for this CPU
//
// Nothing here loads a library: llm/llamalib opens the directory Locate
// returns (its manifest names the files). Nothing is downloaded unless
// Install is called without a file (tact runtime install).
package llamaruntime

import "strings"

// Version is the node-llama-cpp release whose libraries tact runs. Every
// pinned package below is of this version.
const Version = "3.22.1"

// LlamaCppRelease is the llama.cpp release those libraries are built from
// (node-llama-cpp's llama/binariesGithubRelease.json, and the
// "llamaCpp.release" of the prebuilt packages' _nlcBuildMetadata.json).
const LlamaCppRelease = "v0.5.0"

// LlamaCppCommit is the llama.cpp commit that release's source bundle
// (node-llama-cpp's llama/gitRelease.bundle) holds.
const LlamaCppCommit = "de3ff815ea7d559ee917f063901b8986f038abc6"

// Variant tells runtimes of one version apart.
type Variant string

const (
	// CPU is the prebuilt package for x86-64 CPUs: ggml picks one of its
	// per-CPU libraries (libggml-cpu-*.so) when it loads.
	CPU Variant = "cpu"
	// CUDA is the prebuilt package with the CUDA backend (NVIDIA GPUs; the
	// CUDA 13 runtime and cuBLAS libraries come from the system) and the
	// same CPU libraries.
	CUDA Variant = "cuda"
	// Native is a build of the same llama.cpp release on this machine, for
	// its CPU (tact runtime build).
	Native Variant = "native"
)

// DirName is the directory name of a runtime of this version and variant.
func (v Variant) DirName() string {
	if v == CPU || v == "" {
		return Version
	}
	return Version + "-" + string(v)
}

// Package is one pinned npm package.
type Package struct {
	Name      string // npm package name
	Integrity string // the registry's dist.integrity: sha512 of the tarball, base64
	// Bins is the directory inside the tarball that holds the libraries.
	Bins string
	// Llama, Ggml and GgmlBase are the file names of libllama, libggml and
	// libggml-base: node-llama-cpp suffixes the first two with the build's
	// variant (llama.cpp's release, and cuda).
	Llama, Ggml, GgmlBase string
	// Needs lists other libraries that must be present (the CPU baseline,
	// the GPU backend).
	Needs []string
	// Size is the tarball's size in bytes, for the one line before a
	// download.
	Size int64
}

// TarballName is the file name the registry serves the tarball as.
func (p Package) TarballName() string {
	return p.Name[strings.LastIndexByte(p.Name, '/')+1:] + "-" + Version + ".tgz"
}

// PackName is the file name `npm pack` writes
// (node-llama-cpp-linux-x64-3.22.1.tgz).
func (p Package) PackName() string {
	return strings.ReplaceAll(strings.TrimPrefix(p.Name, "@"), "/", "-") + "-" + Version + ".tgz"
}

// Spec is NAME@VERSION, as npm takes it.
func (p Package) Spec() string { return p.Name + "@" + Version }

// The pinned packages: `npm view NAME@3.22.1 dist.integrity dist.tarball`.
// pinned is a variable so tests can pin a crafted tarball.
var pinned = map[Variant]Package{
	CPU: {
		Name:      "@node-llama-cpp/linux-x64",
		Integrity: "sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg==",
		Bins:      "package/bins/linux-x64/",
		Llama:     "libllama.v0.5.0.so", Ggml: "libggml.v0.5.0.so", GgmlBase: "libggml-base.so",
		Needs: []string{"libggml-cpu-x64.so"},
		Size:  10824547,
	},
	CUDA: {
		Name:      "@node-llama-cpp/linux-x64-cuda",
		Integrity: "sha512-8rQCjyNNLZJUFit+YpjwlC4hwkKgOMIkB2wuycKBf8NU2O3ySKbiWZQ8aw9ku2nUTXjSnUIrE6KB88itduTBuA==",
		Bins:      "package/bins/linux-x64-cuda/",
		Llama:     "libllama.cuda.v0.5.0.so", Ggml: "libggml.cuda.v0.5.0.so", GgmlBase: "libggml-base.so",
		Needs: []string{"libggml-cpu-x64.so", "libggml-cuda.so"},
		Size:  142898030,
	},
}

// Source is the npm package that carries the pinned llama.cpp release's
// source (llama/gitRelease.bundle) for tact runtime build.
var Source = Package{
	Name:      "node-llama-cpp",
	Integrity: "sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==",
	Llama:     "libllama.v0.5.0.so", Ggml: "libggml.v0.5.0.so", GgmlBase: "libggml-base.so",
	Needs: []string{"libggml-cpu.so"},
	Size:  35735663,
}

// Pinned returns the pinned package of a prebuilt variant (CPU or CUDA).
func Pinned(v Variant) (Package, bool) {
	p, ok := pinned[v]
	return p, ok
}
