#!/usr/bin/env bash
# Builds the peer's own command-line tools (llama-server, llama-perplexity, llama-quantize, llama-bench,
# llama-cli, llama-completion, llama-simple, llama-batched-bench, and for speculative decoding
# llama-speculative, llama-speculative-simple, llama-lookup) from the llama.cpp tree vendored in the
# llama-cpp-python sdist on PyPI: the same llama.cpp revision that setup-llama-cpp.sh compiles
# into the Python package, so the C tools and the Python bindings agree on every kernel.
# Optional: nothing in Loom's build or tests needs it. Tuned for this CPU (GGML_NATIVE), Release.
#
#   tools/peers/build-llama-cpp.sh [PREFIX]      -> prints the folder holding the binaries
#
# PREFIX defaults to build/peers/llama.cpp. LLAMA_CPP_JOBS (default: nproc) sets the build's
# parallelism; the build can take an hour at -j1, so run it under `nice -n 19` beside other work.
# LLAMA_CPP_ISA=avx2 builds into PREFIX/build-avx2 with AVX2/FMA/F16C and no AVX-512 (nor
# AVX-VNNI), llama-bench, llama-batched-bench and llama-quantize only: the peer's AVX2 kernels on
# an AVX-512 machine, beside Loom's simd = "avx2".
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
prefix="${1:-$root/build/peers/llama.cpp}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
jobs="${LLAMA_CPP_JOBS:-$(nproc)}"
targets=(llama-server llama-perplexity llama-quantize llama-bench llama-cli llama-completion llama-simple
         llama-batched-bench llama-speculative llama-speculative-simple llama-lookup)
case "${LLAMA_CPP_ISA:-native}" in
  native) build_dir=build isa_flags=(-DGGML_NATIVE=ON) ;;
  avx2) build_dir=build-avx2 targets=(llama-bench llama-batched-bench llama-quantize)  # the kernel comparisons
    isa_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
               -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF) ;;
  *) echo "build-llama-cpp: LLAMA_CPP_ISA must be native or avx2" >&2; exit 2 ;;
esac
bin="$prefix/$build_dir/bin"

have_all() {
  local t
  for t in "${targets[@]}"; do [[ -x "$bin/$t" ]] || return 1; done
}
if have_all; then echo "$bin"; exit 0; fi

mkdir -p "$prefix"
sdist="$prefix/llama_cpp_python-$version.tar.gz"
if [[ ! -f "$sdist" ]]; then
  # --no-binary for this package only: the sdist is what carries vendor/llama.cpp (pip reads its
  # metadata with wheels of the build backend; `:all:` would compile every build dependency too).
  python3 -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d "$prefix" >&2
fi
src="$prefix/llama_cpp_python-$version/vendor/llama.cpp"
[[ -f "$src/CMakeLists.txt" ]] || tar -xzf "$sdist" -C "$prefix"

# No web UI (LLAMA_USE_PREBUILT_UI=OFF would otherwise fetch it at build time), no tests, no
# HTTPS: the peer serves loopback only and must build offline.
cmake -S "$src" -B "$prefix/$build_dir" -DCMAKE_BUILD_TYPE=Release "${isa_flags[@]}" \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF >&2
cmake --build "$prefix/$build_dir" -j "$jobs" --target "${targets[@]}" >&2
have_all || { echo "build-llama-cpp: a target is missing under $bin" >&2; exit 1; }
echo "$bin"
