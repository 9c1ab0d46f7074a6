#!/usr/bin/env bash
# Build ggml's CUDA backend as a shared library for tact, the way ollama ships
# its GPU support.
#
# tact links llama.cpp and ggml's CPU backend statically (cgo). At start it
# asks ggml to load backend libraries (libggml-<name>.so) from one directory,
# by default <directory of the tact binary>/../lib/ollama, e.g. bin/tact and
# lib/ollama/ in this repository. This script builds libggml-cuda.so (and the
# libggml-base.so it links against) from the very ggml sources the Go module
# cache holds for the binding, so the library matches the ggml compiled into
# tact, and installs them there.
#
# Then run tact with --gpu-layers N (or TACT_GPU_LAYERS=N; 99 offloads every
# layer). tact logs "no GPU backend loaded; running on the CPU" when the
# library is missing or cannot load (no driver, wrong CUDA version), and runs
# on the CPU. Run with -v to see ggml's own messages about loading.
#
# Requirements: cmake >= 3.24 (3.21 with CUDA_ARCHITECTURES set), a C/C++
# compiler, the CUDA toolkit (nvcc) and an NVIDIA driver; Go (to locate the
# module cache). Not tested in CI: the project's machines have no GPU.
#
# Usage: scripts/build-cuda.sh
# Environment:
#   LIBDIR              install directory (default: <repo>/lib/ollama). ggml's
#                       loader only searches a directory whose path contains
#                       "lib/ollama" (or the binary's own directory).
#   BUILD_DIR           cmake build directory (default: <repo>/build/cuda)
#   CUDA_ARCHITECTURES  CMAKE_CUDA_ARCHITECTURES (default: native, the GPUs of
#                       this machine; e.g. "80;86;89;90" for a portable build)
#   BUNDLE_CUDA_LIBS    1 (default): copy libcudart/libcublas/libcublasLt next
#                       to the backend so the target machine needs only the
#                       driver; 0: use the system's CUDA runtime
#   JOBS                parallel build jobs (default: nproc)
#   OLLAMA_SRC          the github.com/ollama/ollama module directory whose
#                       ggml sources to build (default: the one go.mod pins,
#                       found with go list); for a GPU machine without Go,
#                       copy that directory there and name it here
set -euo pipefail

die() { echo "build-cuda: $*" >&2; exit 1; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
libdir=${LIBDIR:-$root/lib/ollama}
build=${BUILD_DIR:-$root/build/cuda}
archs=${CUDA_ARCHITECTURES:-native}
bundle=${BUNDLE_CUDA_LIBS:-1}
jobs=${JOBS:-$(nproc)}

case "$libdir" in
*lib/ollama*) ;;
*) die "LIBDIR=$libdir: the path must contain \"lib/ollama\"; ggml's loader in the binding ignores other directories" ;;
esac

if [[ -z ${OLLAMA_SRC:-} ]]; then
	command -v go >/dev/null || die "go not found (needed to locate the ggml sources in the module cache; or set OLLAMA_SRC)"
fi
command -v cmake >/dev/null || die "cmake not found (apt-get install cmake)"
if ! command -v "${CUDACXX:-nvcc}" >/dev/null; then
	die "nvcc not found: install the CUDA toolkit, or set CUDACXX to nvcc's path"
fi

# The ollama module version pinned in go.mod: its CMakeLists.txt builds ggml
# with the options ollama uses (GGML_BACKEND_DL, shared backends).
src=${OLLAMA_SRC:-$(cd "$root" && go list -m -f '{{.Dir}}' github.com/ollama/ollama)} ||
	die "cannot find github.com/ollama/ollama in the module cache (run: make warm)"
[[ -f $src/CMakeLists.txt && -d $src/ml/backend/ggml/ggml/src/ggml-cuda ]] ||
	die "$src does not hold ggml's CUDA sources"
echo "build-cuda: ggml sources: $src"

# $ORIGIN: libggml-cuda.so finds libggml-base.so (and bundled CUDA libraries)
# next to itself; tact loads it in-process, so LD_LIBRARY_PATH cannot help.
cmake -S "$src" -B "$build" \
	-DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_CUDA_ARCHITECTURES="$archs" \
	-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
	-DCMAKE_INSTALL_RPATH='$ORIGIN' \
	-DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=ON \
	-DMLX_ENGINE=OFF
cmake --build "$build" --target ggml-cuda --parallel "$jobs"

out=$build/lib/ollama
[[ -f $out/libggml-cuda.so ]] || die "the build produced no $out/libggml-cuda.so"
mkdir -p "$libdir"
# Only the CUDA backend and its base library: a CPU backend library here
# would register a second CPU device next to the one compiled into tact.
cp -a "$out"/libggml-base.so* "$out"/libggml-cuda.so "$libdir"/

if [[ $bundle == 1 ]]; then
	ldd "$libdir/libggml-cuda.so" | awk '/libcu(dart|blas|blasLt)\.so/ && $3 ~ /^\// {print $3}' |
		while read -r lib; do
			cp -L "$lib" "$libdir/"
		done
fi

if ldd "$libdir/libggml-cuda.so" | grep -q "not found"; then
	ldd "$libdir/libggml-cuda.so" | grep "not found" >&2
	die "libggml-cuda.so has unresolved libraries (see above)"
fi

echo "build-cuda: installed into $libdir:"
ls -l "$libdir"
cat <<EOF

tact loads these at start when its binary sits in $(dirname "$(dirname "$libdir")")/bin
(e.g. make build -> bin/tact). Offload layers with:
  tact --gpu-layers 99 --model MODEL.gguf ...
and check with -v that ggml lists the CUDA device.
EOF
